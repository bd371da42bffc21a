package backup

import (
	"errors"
	"io"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// frameSize is how much of the stream one zstd frame holds. Each frame is compressed on its own, so that
// several can be compressed at once; 4 MiB is as large as the fastest level's window, so that frames of their
// own cost little ratio, and memory stays at a few frames (two buffers of frameSize each).
const frameSize = 4 << 20

// zstdWorkers is how many frames are compressed at once: the cores the runner may use, at least two so that
// compressing overlaps reading and writing, at most four to bound memory ((2 × 4 + 1) × 8 MiB).
func zstdWorkers() int { return max(2, min(runtime.GOMAXPROCS(0), 4)) }

// compressFrames reads src to its end and writes it to dst as zstd frames of frameSize, compressed by workers
// goroutines at once (enc's EncodeAll is safe for concurrent use up to its concurrency) and written in order.
// A zstd stream may hold any number of frames, and decoders read them as one stream. zstd's stream encoder
// compresses on one goroutine, which could not keep pace with mariadb-backup on two busy cores (see
// docs/backups.md); the zstd binary's -T2 splits its input the same way. At most 2 × workers + 1 frames are
// held at once: those read, being compressed or waiting to be written. A failed write stops the reading. It
// returns the bytes read from src.
func compressFrames(dst io.Writer, src io.Reader, enc *zstd.Encoder, workers int) (int64, error) {
	type frame struct {
		in, out []byte
		done    chan struct{}
	}
	buffers := make(chan [2][]byte, 2*workers+1)
	for range cap(buffers) {
		buffers <- [2][]byte{make([]byte, frameSize), make([]byte, 0, frameSize)}
	}
	pending := make(chan *frame, workers)
	failed := make(chan struct{})
	written := make(chan error, 1)
	go func() {
		var err error
		for f := range pending {
			<-f.done
			if err == nil {
				if _, err = dst.Write(f.out); err != nil {
					close(failed)
				}
			}
			buffers <- [2][]byte{f.in[:frameSize], f.out[:0]}
		}
		written <- err
	}()
	var read int64
	var readErr error
	for readErr == nil {
		var b [2][]byte
		select {
		case b = <-buffers:
		case <-failed:
		}
		if b[0] == nil {
			break
		}
		n, err := io.ReadFull(src, b[0])
		read += int64(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			readErr = io.EOF
		} else if err != nil {
			readErr = err
		}
		if n == 0 {
			buffers <- b
			break
		}
		f := &frame{in: b[0][:n], done: make(chan struct{})}
		go func() {
			f.out = enc.EncodeAll(f.in, b[1])
			close(f.done)
		}()
		pending <- f
	}
	close(pending)
	writeErr := <-written
	if readErr != nil && !errors.Is(readErr, io.EOF) {
		return read, errors.Join(readErr, writeErr)
	}
	return read, writeErr
}
