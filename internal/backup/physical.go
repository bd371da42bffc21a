package backup

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Method is how a backup is taken: a logical dump (SQL, any server of the engine can load it) or a physical
// copy of the data directory (mariadb-backup; restored into an empty data directory of the same major.minor).
type Method string

const (
	Logical  Method = "logical"
	Physical Method = "physical"
)

// DefaultLogCopyInterval is the --log-copy-interval a physical backup passes to mariadb-backup. Commits stall
// while mariadb-backup holds BACKUP STAGE BLOCK_COMMIT, and most of that hold is waiting for its redo-log copy
// thread to wake up and catch up with the server's last LSN: the thread polls once per interval, so its 1 s
// default adds up to a second to the stall. 10 ms removes that share, for a poll of the server's redo log a
// hundred times a second while the backup runs, which costs little. It does not remove the whole stall: what
// the longest gap between a writer's acknowledged commits measured, and what is left unexplained, is in
// docs/backups.md and the bench's physical-*.json results.
const DefaultLogCopyInterval = 10 * time.Millisecond

// ZstdLevel is the level of the in-process zstd encoder of physical backups. See docs/backups.md for why: at
// the fastest level the encoder keeps pace with mariadb-backup on two cores,
// where better levels made the compressor, not the copy, the limit, for a few percent of size.
const ZstdLevel = zstd.SpeedFastest

const (
	physicalSuffix  = ".xb.zst"
	compressionZstd = "zstd"
	// physicalFormatVersion is the manifest format of physical backups: readers of format 1 (which know only
	// logical backups) must refuse them rather than take them for gzip-compressed dumps.
	physicalFormatVersion = 2
)

func physicalKey(name string) string { return name + physicalSuffix }

// ErrVersionMismatch is returned by RestorePhysical when the server that would run on the restored data
// directory is not of the backup's major.minor version.
var ErrVersionMismatch = errors.New("the backup's server version is not the target's")

// ErrDataDirNotEmpty is returned by RestorePhysical when the data directory holds anything (but lost+found).
var ErrDataDirNotEmpty = errors.New("the data directory is not empty")

// mariadbBackupArgs is the mariadb-backup command of a streamed backup. --no-defaults (or --defaults-file, when a
// password is needed) must come first, and keeps the host's /etc/mysql/my.cnf out: the tool asks the server
// for its data directory and InnoDB layout. --target-dir holds only the tool's scratch files with --stream.
func mariadbBackupArgs(conn mysql.DumpOptions, targetDir string, logCopy time.Duration) []string {
	args := []string{cmp.Or(conn.Path, "mariadb-backup")}
	if conn.DefaultsFile != "" {
		args = append(args, "--defaults-file="+conn.DefaultsFile)
	} else {
		args = append(args, "--no-defaults")
	}
	args = append(args, "--backup", "--stream=xbstream", "--target-dir="+targetDir,
		"--log-copy-interval="+strconv.FormatInt(max(1, logCopy.Milliseconds()), 10))
	if conn.Socket != "" {
		// mariadb-backup changes into the data directory before it opens its later connections.
		socket, err := filepath.Abs(conn.Socket)
		if err != nil {
			socket = conn.Socket
		}
		args = append(args, "--socket="+socket)
	} else {
		if conn.Host != "" {
			args = append(args, "--host="+conn.Host)
		}
		if conn.Port != 0 {
			args = append(args, "--port="+strconv.Itoa(conn.Port))
		}
	}
	if conn.User != "" {
		args = append(args, "--user="+conn.User)
	}
	return args
}

// runPhysical is Run for Physical: a copy of the data directory as an xbstream (mariadb-backup run here, or by
// the backup agent beside the server when Options.Agents names agents) → zstd → SHA-256 → store, then the
// manifest. mariadb-backup runs where the server's data directory is: it reads the files, and asks the server
// over the connection where they are and for its BACKUP STAGE locks.
func runPhysical(ctx context.Context, o Options, name string, start time.Time, now func() time.Time) (*Manifest, error) {
	if e := o.Source.Flavor.Engine(); e != mysql.MariaDB {
		return nil, fmt.Errorf("physical backups are implemented for MariaDB (mariadb-backup), not %s", e)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var x *xbstream
	var err error
	if o.Agents != nil {
		x, err = o.Agents.start(ctx)
	} else {
		x, err = startMariaDBBackup(ctx, o.Source, o.TempDir, o.LogCopyInterval, o.Stderr)
	}
	if err != nil {
		return nil, err
	}
	defer x.close()

	pr, pw := io.Pipe()
	sum := sha256.New()
	stored := &counter{}
	var streamed int64
	var position, version string
	workers := zstdWorkers()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(ZstdLevel), zstd.WithEncoderConcurrency(workers))
	if err != nil {
		return nil, err
	}
	copyDone := make(chan error, 1)
	go func() {
		n, copyErr := compressFrames(io.MultiWriter(pw, sum, stored), x.r, enc, workers)
		streamed = n
		var endErr error
		position, version, endErr = x.end()
		err := endErr
		if err == nil && copyErr != nil {
			err = fmt.Errorf("failed to compress the stream: %w", copyErr)
		}
		// A nil error is EOF for the store, only once the copy completed; anything else fails the upload, so
		// that a stream cut short (which may end between two frames) is never stored whole.
		copyDone <- err
		_ = pw.CloseWithError(err)
	}()
	if err := upload(ctx, cancel, o.Store, physicalKey(name), pr, copyDone); err != nil {
		return nil, fmt.Errorf("backup %s failed: %w", name, err)
	}
	set, err := o.Source.Flavor.ParseGTIDSet(position)
	if err != nil {
		return nil, fmt.Errorf("backup %s: mariadb-backup's GTID position %q: %w", name, position, err)
	}
	m := o.manifest(name, start, now().UTC())
	m.FormatVersion, m.Method, m.Object, m.Compression = physicalFormatVersion, Physical, physicalKey(name), compressionZstd
	m.ServerVersion, m.GTIDPosition = version, set.String()
	m.Size, m.DumpSize, m.SHA256 = stored.n, streamed, hex.EncodeToString(sum.Sum(nil))
	if x.host != "" {
		m.Host = x.host
	}
	if m.Pod == "" {
		m.Pod = x.pod
	}
	return publish(ctx, o.Store, m)
}

// xbstream is a physical copy of a server's data directory being taken: the stream, and its outcome once the
// stream has been read to its end.
type xbstream struct {
	r io.Reader
	// end waits for the copy to finish, after r was read to its end or given up on, and returns the GTID
	// position of the copy and the server's version; an error unless the copy completed.
	end func() (position, version string, err error)
	// close releases what the copy held; called after end.
	close func()
	// host is where the copy was taken (the agent's address), pod the Pod it came from when an agent said so;
	// both empty when the copy ran here.
	host, pod string
}

// startMariaDBBackup starts mariadb-backup --backup --stream=xbstream against src, here, with its scratch
// target directory in tempDir and --log-copy-interval logCopy (zero: DefaultLogCopyInterval). Its log goes to
// stderr too, when not nil. The tool is killed when ctx ends.
func startMariaDBBackup(ctx context.Context, src Source, tempDir string, logCopy time.Duration, stderr io.Writer) (*xbstream, error) {
	conn, cleanup, err := withDefaultsFile(src)
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(tempDir, "mysqlfleet-physical-")
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("failed to create mariadb-backup's target directory: %w", err)
	}
	release := func() {
		cleanup()
		_ = os.RemoveAll(scratch)
	}
	args := mariadbBackupArgs(conn, scratch, cmp.Or(logCopy, DefaultLogCopyInterval))
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// mariadb-backup logs to standard error: one line per file, and at the end the lines this run needs.
	tail := &tailBuffer{max: messageSize}
	facts := &backupLog{}
	log := io.MultiWriter(tail, facts)
	if stderr != nil {
		log = io.MultiWriter(log, stderr)
	}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		release()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		release()
		return nil, fmt.Errorf("failed to start %s: %w", args[0], err)
	}
	tool := filepath.Base(args[0])
	end := func() (string, string, error) {
		if err := cmd.Wait(); err != nil {
			return "", "", fmt.Errorf("%s failed: %w: %s", tool, err, tail.String())
		}
		if !facts.completed() {
			// mariadb-backup 10.11 ends a good run with "completed OK!"; an exit 0 without it is not one.
			return "", "", fmt.Errorf("%s exited without completing: %s", tool, tail.String())
		}
		return facts.result()
	}
	return &xbstream{r: stdout, end: end, close: release}, nil
}

var (
	// [00] 2026-11-29 03:03:03 Using server version 10.11.19-MariaDB-0+deb12u1-log
	logServerVersion = regexp.MustCompile(`Using server version (\S+)`)
	// [00] 2026-11-29 03:03:05 MySQL binlog position: filename 'mysql-bin.000001', position '2129965', GTID of
	// the last change '0-7-6'. The GTID part is missing when the server has written no GTID yet.
	logBinlogPosition = regexp.MustCompile(`MySQL binlog position: filename '[^']*', position '[^']*'(?:, GTID of the last change '([^']*)')?`)
	logCompleted      = regexp.MustCompile(`completed OK!\s*$`)
)

// backupLog reads mariadb-backup's log as it is written and keeps what a manifest needs: the server version
// (from its first lines) and the GTID position of the copy, which the tool reads under BACKUP STAGE
// BLOCK_COMMIT, i.e. the position of the last transaction whose changes the prepared copy holds. The same
// position is in xtrabackup_binlog_info inside the stream; RestorePhysical checks that one against the
// manifest. It keeps no more than one line at a time.
type backupLog struct {
	mu       sync.Mutex
	partial  []byte
	version  string
	position *string
	ok       bool
}

func (l *backupLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			// A line longer than this is not one of those sought (file names are bounded by PATH_MAX).
			if len(l.partial) < 8<<10 {
				l.partial = append(l.partial, p[:min(len(p), 8<<10-len(l.partial))]...)
			}
			break
		}
		l.line(append(l.partial, p[:i]...))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (l *backupLog) line(b []byte) {
	if m := logServerVersion.FindSubmatch(b); m != nil && l.version == "" {
		l.version = string(m[1])
	}
	if m := logBinlogPosition.FindSubmatch(b); m != nil {
		pos := string(m[1])
		l.position = &pos
	}
	l.ok = logCompleted.Match(b)
}

func (l *backupLog) completed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok || logCompleted.Match(l.partial)
}

func (l *backupLog) result() (position, version string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version == "" {
		return "", "", errors.New("mariadb-backup did not say the server's version")
	}
	if l.position == nil {
		// A server without a binary log: no position to replicate from, so not a backup of a mysqlfleet member.
		return "", "", fmt.Errorf("mariadb-backup recorded no binary log position: %w", mysql.ErrNoGTIDPosition)
	}
	return *l.position, l.version, nil
}

// PhysicalRestoreOptions of one physical restore.
type PhysicalRestoreOptions struct {
	Store Store
	// Name is the backup to restore; empty means the newest physical one.
	Name string
	// DataDir is the data directory to fill: missing, or empty but for lost+found (the root of a fresh
	// volume). No server may run on it.
	DataDir string
	// WorkDir is where the stream is extracted and prepared, in a directory of its own that is removed
	// afterwards; empty means the system's temporary directory. On the data directory's filesystem the copy
	// back is a rename of each file, not a copy: a Pod should put it on the data volume.
	WorkDir string
	// ServerVersion is the version of the mariadbd that will run on DataDir; empty means the one `mariadbd
	// --version` reports (on PATH or in /usr/sbin).
	ServerVersion string
	// MariaDBBackup and Mbstream are the tools' paths; empty means their usual names on PATH.
	MariaDBBackup, Mbstream string
	// UseMemory is mariadb-backup --prepare's --use-memory (the buffer pool it replays the redo log with), in
	// bytes; 0 means the tool's default (100 MiB).
	UseMemory int64
	// Stdout receives the tools' output; may be nil.
	Stdout io.Writer
}

// RestorePhysical restores a physical backup into an empty data directory, for a server that is not running
// and is started afterwards on it. It fetches the data object and, as it streams in, checks its SHA-256 and
// size against the manifest, decompresses it and extracts it with mbstream -x into a directory of its own;
// nothing touches DataDir before the whole object was read and found to be the manifest's
// (ErrChecksumMismatch otherwise). It then prepares the copy (mariadb-backup --prepare: the redo log copied
// during the backup is applied, making the files consistent at the backup's GTID position), moves it into
// DataDir (mariadb-backup --move-back) and gives every file the owner of DataDir itself, as the server's user
// must own them and a restore run as root would leave them root's. Memory is bounded by the zstd window and a
// pipe; disk needs the extracted copy once (moved, not copied, when WorkDir is on DataDir's filesystem).
//
// It refuses a backup of another major.minor version than the target server's (ErrVersionMismatch): InnoDB's
// files are not promised to be readable by another version after --prepare, and mariadb-backup of one
// version refuses to prepare another's. A backup of an older MariaDB goes to a newer one through a logical
// backup, or by restoring into the old version and upgrading that server (mariadb-upgrade).
//
// It returns the manifest, whose GTIDPosition is where the restored server stands: it has executed
// that set but its own gtid_slave_pos is empty and its binary log is new, so a caller that makes it a
// replica sets gtid_slave_pos to it before CHANGE MASTER TO … MASTER_USE_GTID=slave_pos. A failed restore
// may leave files in DataDir, to be discarded.
func RestorePhysical(ctx context.Context, o PhysicalRestoreOptions) (*Manifest, error) {
	m, err := choose(ctx, o.Store, o.Name, Physical)
	if err != nil {
		return nil, err
	}
	version := o.ServerVersion
	if version == "" {
		if version, err = mariadbdVersion(ctx); err != nil {
			return nil, err
		}
	}
	if err := checkPhysical(m, version); err != nil {
		return nil, err
	}
	if err := emptyDataDir(o.DataDir); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(o.WorkDir, "mysqlfleet-restore-"+m.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("failed to create a work directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()

	if err := extract(ctx, o, m, work); err != nil {
		return nil, fmt.Errorf("restore of backup %s failed: %w", m.Name, err)
	}
	position, err := binlogInfoPosition(work)
	if err != nil {
		return nil, fmt.Errorf("restore of backup %s: %w", m.Name, err)
	}
	if position != m.GTIDPosition {
		return nil, fmt.Errorf("restore of backup %s: the copy is at GTID position %q, its manifest says %q",
			m.Name, position, m.GTIDPosition)
	}
	tool := cmp.Or(o.MariaDBBackup, "mariadb-backup")
	prepare := []string{tool, "--no-defaults", "--prepare", "--target-dir=" + work}
	if o.UseMemory > 0 {
		prepare = append(prepare, "--use-memory="+strconv.FormatInt(o.UseMemory, 10))
	}
	if err := runTool(ctx, prepare, o.Stdout); err != nil {
		return nil, fmt.Errorf("restore of backup %s failed: %w", m.Name, err)
	}
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return nil, err
	}
	// --force-non-empty-directories: lost+found may be there; emptyDataDir allowed nothing else.
	moveBack := []string{tool, "--no-defaults", "--move-back", "--force-non-empty-directories",
		"--target-dir=" + work, "--datadir=" + o.DataDir}
	if err := runTool(ctx, moveBack, o.Stdout); err != nil {
		return nil, fmt.Errorf("restore of backup %s failed: %w", m.Name, err)
	}
	if err := chownLike(o.DataDir); err != nil {
		return nil, fmt.Errorf("restore of backup %s: %w", m.Name, err)
	}
	return m, nil
}

// checkPhysical refuses what RestorePhysical must not restore into a server of version target.
func checkPhysical(m *Manifest, target string) error {
	if m.Method != Physical || m.Engine != mysql.MariaDB || m.Compression != compressionZstd {
		return fmt.Errorf("backup %s is a %s backup of %s (%s), not a physical MariaDB backup", m.Name,
			m.method(), m.Engine, m.Compression)
	}
	from, ok := majorMinor(m.ServerVersion)
	if !ok {
		return fmt.Errorf("backup %s records no server version (%q): %w", m.Name, m.ServerVersion, ErrVersionMismatch)
	}
	to, ok := majorMinor(target)
	if !ok {
		return fmt.Errorf("the target server's version %q is not one this program reads: %w", target,
			ErrVersionMismatch)
	}
	if from != to {
		return fmt.Errorf("backup %s is of MariaDB %s, the target runs %s: %w (restore it into a %s server and "+
			"upgrade that, or restore a logical backup)", m.Name, m.ServerVersion, target, ErrVersionMismatch, from)
	}
	return nil
}

var versionNumber = regexp.MustCompile(`(\d+)\.(\d+)\.\d+`)

// majorMinor is "10.11" of "10.11.19-MariaDB-0+deb12u1-log" or of mariadbd --version's
// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu".
func majorMinor(v string) (string, bool) {
	m := versionNumber.FindStringSubmatch(v)
	if m == nil {
		return "", false
	}
	return m[1] + "." + m[2], true
}

func mariadbdVersion(ctx context.Context) (string, error) {
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		bin = "/usr/sbin/mariadbd"
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("failed to ask %s its version (set the target's version explicitly): %w", bin, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// emptyDataDir accepts a missing directory or one that holds only lost+found.
func emptyDataDir(dir string) error {
	if dir == "" {
		return errors.New("no data directory to restore into")
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != "lost+found" {
			return fmt.Errorf("%s holds %s: %w", dir, e.Name(), ErrDataDirNotEmpty)
		}
	}
	return nil
}

// extract streams the data object through SHA-256 and zstd into mbstream -x in dir, and fails with
// ErrChecksumMismatch unless the object is the manifest's. A corrupted object usually breaks the zstd frame or
// an xbstream chunk before its end; the rest is then still read and hashed, so that the error says what is
// wrong with it rather than only where decoding stopped.
func extract(ctx context.Context, o PhysicalRestoreOptions, m *Manifest, dir string) error {
	obj, err := o.Store.Get(ctx, m.Object)
	if err != nil {
		return err
	}
	defer func() { _ = obj.Close() }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{cmp.Or(o.Mbstream, "mbstream"), "-x", "-C", dir}
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
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start %s: %w", args[0], err)
	}
	sum := sha256.New()
	read := &counter{}
	src := io.TeeReader(obj, io.MultiWriter(sum, read))
	streamErr := func() error {
		// Low memory: one decoder goroutine, and the window bounded by what the encoder's level uses.
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return err
		}
		defer zr.Close()
		if _, err := io.Copy(stdin, zr); err != nil {
			return fmt.Errorf("failed to stream the backup: %w", err)
		}
		return nil
	}()
	// Whatever stopped the stream, the rest of the object counts too: the checksum is over all of it.
	if _, err := io.Copy(io.Discard, src); err != nil {
		cancel()
		_ = cmd.Wait()
		return errors.Join(streamErr, fmt.Errorf("failed to read the backup: %w", err))
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != m.SHA256 || read.n != m.Size {
		cancel()
		_ = cmd.Wait()
		return errors.Join(fmt.Errorf("%w: read %d bytes with sha256 %s, the manifest says %d bytes with %s",
			ErrChecksumMismatch, read.n, got, m.Size, m.SHA256), streamErr)
	}
	if streamErr != nil {
		cancel()
		_ = cmd.Wait()
		return fmt.Errorf("%w; %s said: %s", streamErr, filepath.Base(args[0]), out.String())
	}
	if err := stdin.Close(); err != nil {
		cancel()
		_ = cmd.Wait()
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(args[0]), err, out.String())
	}
	return nil
}

// binlogInfoPosition reads the GTID position from the xtrabackup_binlog_info of an extracted copy:
// "FILE<TAB>POSITION<TAB>GTID", the GTID column missing or empty when the server had written none.
func binlogInfoPosition(dir string) (string, error) {
	for _, name := range []string{"xtrabackup_binlog_info", "mariadb_backup_binlog_info"} {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		defer func() { _ = f.Close() }()
		line, err := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		fields := strings.Split(strings.TrimRight(line, "\r\n"), "\t")
		if len(fields) < 3 {
			return "", nil
		}
		set, err := mysql.MariaDBFlavor{}.ParseGTIDSet(fields[2])
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return set.String(), nil
	}
	return "", errors.New("the copy holds no xtrabackup_binlog_info")
}

// runTool runs one of mariadb-backup's steps to its end, quoting the end of its output when it fails.
func runTool(ctx context.Context, args []string, w io.Writer) error {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := tailBuffer{max: messageSize}
	cmd.Stdout, cmd.Stderr = &out, &out
	if w != nil {
		cmd.Stdout = io.MultiWriter(&out, w)
		cmd.Stderr = cmd.Stdout
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(args[0]), args[2], err, out.String())
	}
	return nil
}

// chownLike gives everything under dir the owner and group of dir itself.
func chownLike(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid, gid := int(sys.Uid), int(sys.Gid)
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok && int(s.Uid) == uid && int(s.Gid) == gid {
			return nil
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("failed to give %s the data directory's owner: %w", p, err)
		}
		return nil
	})
}
