package backup

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Source is the database server a backup dumps or a restore loads, and what to record about it.
type Source struct {
	Flavor mysql.Flavor
	// Conn is where the dump tool or client connects and, in Path, which binary to run (empty: the engine's
	// usual name on PATH). Conn.DefaultsFile is set by this package when Password is not empty.
	Conn mysql.DumpOptions
	// Password of Conn.User; written to a private option file for the tool, never put on its command line.
	Password string
}

// Options of one backup.
type Options struct {
	Source Source
	Store  Store
	// Cluster, Namespace, Member and Pod are recorded in the manifest.
	Cluster, Namespace, Member, Pod string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Stderr receives the dump tool's standard error as well as being kept for the error message; may be nil.
	Stderr io.Writer
	// MaxRunDuration bounds the run, from its start to its manifest; zero means DefaultMaxRunDuration. Prune
	// relies on it (PruneOptions.MaxRunDuration).
	MaxRunDuration time.Duration
	// Method is Logical (the default) or Physical. A physical backup runs mariadb-backup, which must run where
	// the server's data directory is (Source.Conn.Path names it, if not on PATH); MariaDB only.
	Method Method
	// LogCopyInterval is mariadb-backup's --log-copy-interval (physical); zero means DefaultLogCopyInterval.
	LogCopyInterval time.Duration
	// TempDir is where mariadb-backup gets its scratch target directory (physical); empty means the system's.
	TempDir string
	// Agents, for a physical backup, are the backup agents (see Agent) asked for the copy instead of running
	// mariadb-backup here: a backup Job's container has no data directory. Source then only names the engine.
	Agents *Agents
}

// DefaultMaxRunDuration is how long a backup run may take at most: past it, Run stops and writes no manifest,
// and Prune may delete its data. A logical dump that needs longer is not a backup to depend on. The backup
// Job's activeDeadlineSeconds (internal/render) is the same, so that Kubernetes gives up on the Job when the
// runner gives up on itself; the runner enforces the bound anyway, as a Pod may outlive its Job.
const DefaultMaxRunDuration = 24 * time.Hour

// ErrChecksumMismatch is returned by Restore when the data object is not what its manifest recorded.
var ErrChecksumMismatch = errors.New("the backup does not match its manifest's checksum")

// Run takes one backup: it runs the engine's dump tool and streams its output through gzip and SHA-256 straight
// into the store, never holding more than a buffer of it, then writes the manifest. The backup exists (is
// listed) only once the manifest is written, which happens only after the dump tool exited successfully, its
// output recorded a GTID position and the data object was stored whole. Anything less returns an error and
// leaves at most a data object without a manifest, which List ignores and Prune removes later. A run that
// reaches MaxRunDuration is stopped, and never writes its manifest after it.
func Run(ctx context.Context, o Options) (*Manifest, error) {
	// From before anything is stored: the bound must count from before the data's store date (see Prune).
	bound := cmp.Or(o.MaxRunDuration, DefaultMaxRunDuration)
	ctx, cancelRun := context.WithTimeoutCause(ctx, bound, fmt.Errorf("the run reached its bound of %s", bound))
	defer cancelRun()
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now().UTC()
	name := backupName(start)
	switch o.Method {
	case "", Logical:
	case Physical:
		return runPhysical(ctx, o, name, start, now)
	default:
		return nil, fmt.Errorf("unknown backup method %q: use %s or %s", o.Method, Logical, Physical)
	}
	conn, cleanup, err := withDefaultsFile(o.Source)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	args := o.Source.Flavor.DumpCommand(conn)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	// Killed with its process group when ctx ends (the Job's deadline, a cancelled test).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr := tailBuffer{max: messageSize}
	cmd.Stderr = &stderr
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(&stderr, o.Stderr)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", args[0], err)
	}

	// dump → head (first bytes, for the GTID position) and gzip → sha256 and counter → pipe → store.
	pr, pw := io.Pipe()
	sum := sha256.New()
	stored := &counter{}
	dumped := &counter{}
	head := &headBuffer{max: mysql.DumpEdgeSize}
	tail := &tailBuffer{max: mysql.DumpEdgeSize}
	// klauspost/compress's gzip writes the same format as compress/gzip, faster at the same level: the runner
	// keeps pace with a plain `dump | gzip` (make bench-backup).
	gz := gzip.NewWriter(io.MultiWriter(pw, sum, stored))
	dumpDone := make(chan error, 1)
	go func() {
		_, copyErr := io.Copy(io.MultiWriter(gz, head, tail, dumped), stdout)
		waitErr := cmd.Wait()
		err := errors.Join(copyErr, waitErr)
		if waitErr != nil {
			err = fmt.Errorf("%s failed: %w: %s", filepath.Base(args[0]), waitErr, stderr.String())
		} else if copyErr != nil {
			err = fmt.Errorf("failed to compress the dump: %w", copyErr)
		}
		if err == nil {
			// The gzip trailer goes out only after the dump tool exited 0: a dump cut short is never a
			// well-formed gzip stream, and the store never sees EOF for it.
			err = gz.Close()
		}
		dumpDone <- err
		// A nil error is EOF for the store; anything else fails its upload.
		_ = pw.CloseWithError(err)
	}()
	if err := upload(ctx, cancel, o.Store, dataKey(name), pr, dumpDone); err != nil {
		return nil, fmt.Errorf("backup %s failed: %w", name, err)
	}
	position, err := o.Source.Flavor.DumpGTIDPosition(head.Bytes(), tail.Bytes())
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", name, err)
	}
	m := o.manifest(name, start, now().UTC())
	m.FormatVersion, m.Method, m.Object, m.Compression = formatVersion, Logical, dataKey(name), compressionGzip
	m.ServerVersion, m.GTIDPosition = serverVersion(head.Bytes()), position.String()
	m.Size, m.DumpSize, m.SHA256 = stored.n, dumped.n, hex.EncodeToString(sum.Sum(nil))
	return publish(ctx, o.Store, m)
}

// upload stores what the pipe's reader pr gives under key, while the producer writes into the pipe and then
// sends its own outcome on done (a nil error from the producer is EOF for the store, anything else fails the
// upload). If the store gives up first, the pipe is closed so that the producer does not block on it, and cancel
// stops the producer's tool. The producer's error comes first: it says why the stream was cut.
func upload(ctx context.Context, cancel context.CancelFunc, store Store, key string, pr *io.PipeReader,
	done <-chan error) error {
	putErr := store.Put(ctx, key, pr)
	_ = pr.CloseWithError(errors.New("upload ended"))
	if putErr != nil {
		cancel()
	}
	if err := <-done; err != nil {
		return err
	}
	return putErr
}

// manifest is the part of a backup's manifest that both methods fill alike: its name, times and where it was
// taken from.
func (o Options) manifest(name string, start, end time.Time) *Manifest {
	return &Manifest{
		Name:            name,
		StartTime:       start,
		EndTime:         end,
		DurationSeconds: end.Sub(start).Seconds(),
		Engine:          o.Source.Flavor.Engine(),
		Cluster:         o.Cluster,
		Namespace:       o.Namespace,
		Member:          o.Member,
		Pod:             o.Pod,
		Host:            firstNonEmpty(o.Source.Conn.Host, o.Source.Conn.Socket),
	}
}

// publish writes m, last and only now: the manifest makes the backup visible. Not past the bound, though, where
// a prune may have deleted the data already; the context's deadline also ends a manifest upload that would end
// late.
func publish(ctx context.Context, store Store, m *Manifest) (*Manifest, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("backup %s: the data is stored but its manifest is not: %w", m.Name, err)
	}
	if err := writeManifest(ctx, store, m); err != nil {
		return nil, fmt.Errorf("backup %s: the data is stored but its manifest is not: %w", m.Name, err)
	}
	return m, nil
}

// RestoreOptions of one restore.
type RestoreOptions struct {
	// Target is the empty server to load; run as its root (see mysql.Flavor.RestoreCommand).
	Target Source
	Store  Store
	// Name is the backup to restore; empty means the newest.
	Name string
	// NewCluster restores into the primary of a new set as its own history (binary log on), without the mysql
	// schema and the source's GTID position (see newClusterFilter); otherwise the dump is loaded as it is,
	// out of the binary log, as the source's history.
	NewCluster bool
	// Stdout receives the client's output; may be nil.
	Stdout io.Writer
}

// Restore loads a backup into a server: it reads the manifest, streams the data object through SHA-256 and
// gunzip into the engine's client, and fails if the object is not the manifest's (size or checksum) or the
// client fails. Nothing is buffered beyond a pipe. On a mismatch the client is killed before it sees the end of
// its input; what it loaded until then stays, so a failed restore leaves a server to be discarded, never one
// to be used.
func Restore(ctx context.Context, o RestoreOptions) (*Manifest, error) {
	m, err := choose(ctx, o.Store, o.Name, Logical)
	if err != nil {
		return nil, err
	}
	if m.method() != Logical {
		return nil, fmt.Errorf("backup %s is %s: it restores into a data directory (RestorePhysical), not "+
			"through a client", m.Name, m.method())
	}
	if m.Engine != o.Target.Flavor.Engine() {
		return nil, fmt.Errorf("backup %s is of %s, not %s", m.Name, m.Engine, o.Target.Flavor.Engine())
	}
	obj, err := o.Store.Get(ctx, m.Object)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", m.Name, err)
	}
	defer func() { _ = obj.Close() }()

	conn, cleanup, err := withDefaultsFile(o.Target)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	args := o.Target.Flavor.RestoreCommand(conn)
	if o.NewCluster {
		args = o.Target.Flavor.NewClusterRestoreCommand(conn)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := tailBuffer{max: messageSize}
	cmd.Stdout, cmd.Stderr = &out, &out
	if o.Stdout != nil {
		cmd.Stdout = io.MultiWriter(&out, o.Stdout)
		cmd.Stderr = cmd.Stdout
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", args[0], err)
	}
	sum := sha256.New()
	read := &counter{}
	var into io.Writer = stdin
	var filtered chan error
	if o.NewCluster {
		pr, pw := io.Pipe()
		filtered = make(chan error, 1)
		go func() {
			err := newClusterFilter(stdin, pr)
			_ = pr.CloseWithError(err)
			filtered <- err
		}()
		into = pw
		defer func() { _ = pw.Close() }()
	}
	streamErr := stream(into, io.TeeReader(obj, io.MultiWriter(sum, read)), sum, read, m)
	if filtered != nil {
		_ = into.(*io.PipeWriter).CloseWithError(streamErr)
		streamErr = errors.Join(streamErr, <-filtered)
	}
	if streamErr != nil {
		// Kill before closing stdin: the client must not take the end of a bad stream for the end of a dump.
		cancel()
		_ = cmd.Wait()
		// A client that failed on a statement shows as a broken pipe here; its output says why.
		if msg := out.String(); msg != "" {
			streamErr = fmt.Errorf("%w; %s said: %s", streamErr, filepath.Base(args[0]), msg)
		}
		return nil, fmt.Errorf("restore of backup %s failed: %w", m.Name, streamErr)
	}
	if err := stdin.Close(); err != nil {
		cancel()
		_ = cmd.Wait()
		return nil, fmt.Errorf("restore of backup %s failed: %w", m.Name, err)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("restore of backup %s failed: %s: %w: %s", m.Name, filepath.Base(args[0]), err,
			out.String())
	}
	return m, nil
}

// stream decompresses src into dst and checks what src held against the manifest. dst is not closed.
func stream(dst io.Writer, src io.Reader, sum hash.Hash, read *counter, m *Manifest) error {
	zr, err := gzip.NewReader(src)
	if err != nil {
		return fmt.Errorf("failed to read the backup: %w", err)
	}
	if _, err := io.Copy(dst, zr); err != nil {
		return fmt.Errorf("failed to stream the backup: %w", err)
	}
	// Anything after the gzip stream counts too.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return fmt.Errorf("failed to read the backup: %w", err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != m.SHA256 || read.n != m.Size {
		return fmt.Errorf("%w: read %d bytes with sha256 %s, the manifest says %d bytes with %s",
			ErrChecksumMismatch, read.n, got, m.Size, m.SHA256)
	}
	return nil
}

// withDefaultsFile writes the password to a private option file for the tool and returns the connection that
// names it, and a function that removes it.
func withDefaultsFile(s Source) (mysql.DumpOptions, func(), error) {
	conn := s.Conn
	if s.Password == "" {
		return conn, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "mysqlfleet-backup-")
	if err != nil {
		return conn, nil, fmt.Errorf("failed to create an option file: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	escaped := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s.Password)
	conn.DefaultsFile = filepath.Join(dir, "client.cnf")
	if err := os.WriteFile(conn.DefaultsFile, []byte("[client]\npassword=\""+escaped+"\"\n"), 0o600); err != nil {
		cleanup()
		return conn, nil, fmt.Errorf("failed to write an option file: %w", err)
	}
	return conn, cleanup, nil
}

var serverVersionLine = regexp.MustCompile(`(?m)^-- Server version\s+(\S+)`)

// serverVersion reads the "-- Server version" comment both dump tools write at the top.
func serverVersion(head []byte) string {
	if m := serverVersionLine.FindSubmatch(head); m != nil {
		return string(m[1])
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.Len(); room > 0 {
		h.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// messageSize is how much of a tool's output an error message quotes: the end, where the error is.
const messageSize = 8 << 10

// tailBuffer keeps the last max bytes written to it. It copies each byte once, in and out of a buffer of twice
// max, so that keeping the end of a dump of any size costs no more than reading it.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if t.b == nil {
		t.b = make([]byte, 0, 2*t.max)
	}
	if len(t.b)+len(p) > cap(t.b) {
		keep := t.b[len(t.b)-min(len(t.b), t.max-len(p)):]
		t.b = append(t.b[:0], keep...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

// Bytes is at most the last max bytes written.
func (t *tailBuffer) Bytes() []byte { return t.b[max(0, len(t.b)-t.max):] }

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.Bytes())) }
