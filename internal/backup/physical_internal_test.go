package backup

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// mariadb-backup 10.11's log, trimmed: what backupLog reads from it.
const backupLogText = `[00] 2026-11-29 03:03:03 Connecting to MariaDB server host: localhost, user: root, password: not set, port: not set, socket: /tmp/s.sock
[00] 2026-11-29 03:03:03 Using server version 10.11.19-MariaDB-0+deb12u1-log
mariadb-backup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu (x86_64)
[00] 2026-11-29 03:03:03 Streaming ./d/t.ibd
[00] 2026-11-29 03:03:04 Starting BACKUP STAGE BLOCK_COMMIT
[00] 2026-11-29 03:03:05 Streaming xtrabackup_binlog_info
[00] 2026-11-29 03:03:05 Executing BACKUP STAGE END
[00] 2026-11-29 03:03:05 MySQL binlog position: filename 'mysql-bin.000001', position '2129965', GTID of the last change '0-7-6,1-9-12'
[00] 2026-11-29 03:03:05 completed OK!
`

func TestBackupLog(t *testing.T) {
	for name, tt := range map[string]struct {
		log                       string
		completed                 bool
		position, version, errHas string
	}{
		"complete": {log: backupLogText, completed: true, position: "0-7-6,1-9-12",
			version: "10.11.19-MariaDB-0+deb12u1-log"},
		"no GTID yet": {log: strings.Replace(backupLogText, ", GTID of the last change '0-7-6,1-9-12'", "", 1),
			completed: true, version: "10.11.19-MariaDB-0+deb12u1-log"},
		"cut before its end": {log: backupLogText[:strings.Index(backupLogText, "[00] 2026-11-29 03:03:05 MySQL")],
			errHas: "no binary log position"},
		"no binary log": {log: strings.Replace(backupLogText, "MySQL binlog position", "Nothing", 1),
			completed: true, errHas: "no binary log position"},
		"no version": {log: strings.Replace(backupLogText, "Using server version", "Using", 1),
			completed: true, errHas: "version"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			l := &backupLog{}
			// In pieces that cut lines anywhere, as a pipe delivers them.
			for s := tt.log; s != ""; s = s[min(len(s), 7):] {
				_, _ = l.Write([]byte(s[:min(len(s), 7)]))
			}
			g.Expect(l.completed()).To(Equal(tt.completed))
			pos, version, err := l.result()
			if tt.errHas != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.errHas)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pos).To(Equal(tt.position))
			g.Expect(version).To(Equal(tt.version))
		})
	}
}

// A physical backup restores only into a server of its major.minor version, and only as a physical backup.
func TestCheckPhysical(t *testing.T) {
	physical := func(version string) *Manifest {
		return &Manifest{Name: "b", Method: Physical, Engine: mysql.MariaDB, Compression: compressionZstd,
			ServerVersion: version}
	}
	for name, tt := range map[string]struct {
		m       *Manifest
		target  string
		refused error
	}{
		"same version":        {m: physical("10.11.19-MariaDB-0+deb12u1-log"), target: "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"},
		"newer patch release": {m: physical("10.11.6-MariaDB-log"), target: "10.11.19-MariaDB"},
		"older patch release": {m: physical("10.11.19-MariaDB-log"), target: "10.11.6-MariaDB"},
		"newer minor":         {m: physical("10.11.19-MariaDB-log"), target: "mariadbd  Ver 11.4.5-MariaDB for debian-linux-gnu", refused: ErrVersionMismatch},
		"older minor":         {m: physical("11.4.5-MariaDB-log"), target: "10.11.19-MariaDB", refused: ErrVersionMismatch},
		"10.6 into 10.11":     {m: physical("10.6.20-MariaDB"), target: "10.11.19-MariaDB", refused: ErrVersionMismatch},
		"no recorded version": {m: physical(""), target: "10.11.19-MariaDB", refused: ErrVersionMismatch},
		"unreadable target":   {m: physical("10.11.19-MariaDB"), target: "mariadbd", refused: ErrVersionMismatch},
		"a logical backup": {m: &Manifest{Name: "b", Engine: mysql.MariaDB, Compression: compressionGzip,
			ServerVersion: "10.11.19-MariaDB"}, target: "10.11.19-MariaDB", refused: errors.New("not a physical")},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkPhysical(tt.m, tt.target)
			switch {
			case tt.refused == nil:
				g.Expect(err).NotTo(HaveOccurred())
			case errors.Is(tt.refused, ErrVersionMismatch):
				g.Expect(err).To(MatchError(ErrVersionMismatch))
			default:
				g.Expect(err).To(MatchError(ContainSubstring(tt.refused.Error())))
			}
		})
	}
}

// Manifests of both methods validate; old ones without a method are logical; mixes are refused.
func TestManifestMethods(t *testing.T) {
	sha := strings.Repeat("a", 64)
	for name, tt := range map[string]struct {
		m  Manifest
		ok bool
		is Method
	}{
		"logical, format 1, no method (older runners)": {m: Manifest{FormatVersion: 1, Name: "n", Object: "n.sql.gz",
			SHA256: sha, Compression: "gzip"}, ok: true, is: Logical},
		"logical": {m: Manifest{FormatVersion: 1, Method: Logical, Name: "n", Object: "n.sql.gz", SHA256: sha,
			Compression: "gzip"}, ok: true, is: Logical},
		"physical": {m: Manifest{FormatVersion: 2, Method: Physical, Name: "n", Object: "n.xb.zst", SHA256: sha,
			Compression: "zstd"}, ok: true, is: Physical},
		"physical in format 1": {m: Manifest{FormatVersion: 1, Method: Physical, Name: "n", Object: "n.xb.zst",
			SHA256: sha, Compression: "zstd"}},
		"logical with zstd": {m: Manifest{FormatVersion: 2, Name: "n", Object: "n.sql.gz", SHA256: sha,
			Compression: "zstd"}},
		"unknown method": {m: Manifest{FormatVersion: 2, Method: "snapshot", Name: "n", Object: "n", SHA256: sha,
			Compression: "zstd"}},
		"format 3": {m: Manifest{FormatVersion: 3, Method: Physical, Name: "n", Object: "n.xb.zst", SHA256: sha,
			Compression: "zstd"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.m.validate()
			if !tt.ok {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tt.m.method()).To(Equal(tt.is))
		})
	}
}

// compressFrames writes one zstd stream of frames that decodes to its input, whatever its length.
func TestCompressFrames(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(ZstdLevel), zstd.WithEncoderConcurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, frameSize - 1, frameSize, 3*frameSize + frameSize/2} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			g := NewWithT(t)
			in := make([]byte, size)
			for i := range in {
				// Half text, half noise: frames of both kinds.
				if i%(1<<16) < 1<<15 {
					in[i] = "order 12345 shipped "[i%20]
				} else {
					in[i] = byte(r.Uint32())
				}
			}
			var out bytes.Buffer
			n, err := compressFrames(&out, bytes.NewReader(in), enc, 2)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(int64(size)))
			dec, err := zstd.NewReader(&out)
			g.Expect(err).NotTo(HaveOccurred())
			defer dec.Close()
			got, err := io.ReadAll(dec)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bytes.Equal(got, in)).To(BeTrue(), "decoded %d bytes, not the %d written", len(got), size)
		})
	}
	t.Run("a failed write stops the reading", func(t *testing.T) {
		g := NewWithT(t)
		src := &endless{}
		_, err := compressFrames(failingWriter{}, src, enc, 2)
		g.Expect(err).To(MatchError(errWrite))
		g.Expect(src.n).To(BeNumerically("<", 10*frameSize))
	})
}

var errWrite = errors.New("the store went away")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// endless is a source that never ends, as a mariadb-backup whose store has failed would be.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	e.n += len(p)
	return len(p), nil
}
