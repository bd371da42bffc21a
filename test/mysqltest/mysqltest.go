// Package mysqltest starts real MariaDB servers for tests: mariadbd processes on 127.0.0.1, each with its own
// data directory under the test's temporary directory, stopped when the test ends and killed if the test
// binary dies. No container or image is involved; the servers come from Debian's mariadb-server package,
// which hack/install-deps.sh installs. A test that needs a server fails, never skips, when it is missing.
//
// Servers boot with MariaDBFlavor's BootOptions (binary log, GTID strict mode, read-only, replication not
// started) and an administrative extra_port of their own (Server.AdminPort), so what the tests prove is what the
// product configures.
package mysqltest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// Server is one running mariadbd.
type Server struct {
	// ServerID is the server's server_id, unique among the servers of one test binary.
	ServerID uint32
	// Host and Port are where the server listens (always 127.0.0.1).
	Host string
	Port int
	// AdminPort is the server's extra_port on Host, as render opens render.AdminPort: reserved administrative
	// access, with its own extra_max_connections, that application sessions cannot exhaust.
	AdminPort int
	// Socket is the server's Unix socket.
	Socket string
	// DataDir is the server's data directory.
	DataDir string

	t       testing.TB
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	errLog  string
	stopped atomic.Bool
	// binary and args start the server again (Restart).
	binary string
	args   []string
}

// Option changes how a server starts.
type Option func(*config)

type config struct {
	args []string
	// serverID, when not 0, is the server's server_id (WithServerID).
	serverID uint32
	// podIP: listen on port 3306 of an address of the server's own (OnPodIP).
	podIP bool
}

// OnPodIP makes the server listen where a Pod's server does, on the MySQL port (3306) and the administrative
// port (render.AdminPort) of an address of its own: a random one of 127.0.0.0/8, which is all loopback on Linux,
// standing for the Pod's IP. A member controller running as in production (reaching each Pod at its IP on
// those ports) then reaches it with no test seam at all. It fails when something listens on either port of
// every loopback address (0.0.0.0:3306).
func OnPodIP() Option { return func(c *config) { c.podIP = true } }

// WithServerID gives the server this server_id, as a Pod's data directory has its own (render.ServerIDScript),
// instead of one counted by the test binary. It is for Start: StartN would give its servers all the same one.
func WithServerID(id uint32) Option { return func(c *config) { c.serverID = id } }

// WithArgs adds mariadbd command-line options (--name=value), after the defaults so that they win.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// placementOptions say where a server keeps its files and listens: the test decides those, whatever an option
// file says.
var placementOptions = map[string]bool{"datadir": true, "port": true, "socket": true, "bind_address": true,
	"pid_file": true, "log_error": true, "tmpdir": true, "user": true, "extra_port": true}

// WithOptionFile boots the server with the [mysqld] section of an option file (my.cnf), as a Pod's server reads
// the one its ConfigMap holds: every option but those that place its files and port, after the defaults so
// that they win. A line that is not name = value (or a bare name) fails the test.
func WithOptionFile(cnf string) Option {
	return func(c *config) {
		section := ""
		for _, line := range strings.Split(cnf, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
				continue
			case strings.HasPrefix(line, "["):
				section = strings.Trim(line, "[]")
				continue
			case section != "mysqld":
				continue
			}
			name, value, hasValue := strings.Cut(line, "=")
			name = strings.TrimSpace(name)
			if placementOptions[strings.ReplaceAll(name, "-", "_")] {
				continue
			}
			if !hasValue {
				c.args = append(c.args, "--"+name)
				continue
			}
			c.args = append(c.args, "--"+name+"="+strings.TrimSpace(value))
		}
	}
}

// RootDSN is a go-sql-driver DSN for root over the server's Unix socket. root has no password (the data
// directory is made with --auth-root-authentication-method=normal).
func (s *Server) RootDSN() string {
	return "root@unix(" + s.Socket + ")/"
}

// DSN is a go-sql-driver DSN for a user over TCP, as clients on the network reach the server.
func (s *Server) DSN(user, password string) string { return s.dsn(s.Port, user, password) }

// AdminDSN is DSN on the server's AdminPort.
func (s *Server) AdminDSN(user, password string) string { return s.dsn(s.AdminPort, user, password) }

func (s *Server) dsn(port int, user, password string) string {
	cfg := driver.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(s.Host, strconv.Itoa(port))
	return cfg.FormatDSN()
}

// OpenRoot opens a connection pool as root, closed when the test ends.
func (s *Server) OpenRoot() *sql.DB {
	s.t.Helper()
	db, err := sql.Open("mysql", s.RootDSN())
	if err != nil {
		s.t.Fatalf("mysqltest: failed to open %s: %v", s.RootDSN(), err)
	}
	s.t.Cleanup(func() { _ = db.Close() })
	return db
}

var nextServerID atomic.Uint32

// searchDirs are where Debian puts MariaDB's binaries; /usr/sbin is not on a non-root PATH.
var searchDirs = []string{"/usr/sbin", "/usr/bin"}

// lookPath finds a binary on PATH or in searchDirs.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range searchDirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in %s", name, strings.Join(searchDirs, ", "))
}

type installation struct {
	mariadbd, installDB, version string
}

var found struct {
	sync.Mutex
	*installation
}

// requireMariaDB finds mariadbd and mariadb-install-db, or fails the test: a test that claims something about
// a real server must not pass by skipping it.
func requireMariaDB(t testing.TB) *installation {
	t.Helper()
	found.Lock()
	defer found.Unlock()
	if found.installation != nil {
		return found.installation
	}
	var in installation
	var err error
	if in.mariadbd, err = lookPath("mariadbd"); err == nil {
		in.installDB, err = lookPath("mariadb-install-db")
	}
	if err != nil {
		t.Fatalf("mysqltest: MariaDB is not installed (%v); run hack/install-deps.sh (as root) to install "+
			"Debian's mariadb-server and mariadb-client", err)
	}
	out, err := exec.Command(in.mariadbd, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("mysqltest: %s --version: %v: %s", in.mariadbd, err, out)
	}
	in.version = strings.TrimSpace(string(out))
	found.installation = &in
	return &in
}

// Start starts one server and waits until it accepts connections. The test fails if mariadbd is not
// installed or does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return StartN(t, 1, opts...)[0]
}

// StartN starts n servers at once, each with its own server_id, port and data directory.
func StartN(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	in := requireMariaDB(t)
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	template, err := templateDataDir(in)
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = start(t, in, template, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	return servers
}

// start tries a few ports: the free ports found may be taken by someone else before mariadbd binds them.
func start(t testing.TB, in *installation, template string, cfg config) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		s, err = startOnce(t, in, template, cfg)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortInUse) {
			return nil, err
		}
	}
	return nil, err
}

var errPortInUse = errors.New("port in use")

func startOnce(t testing.TB, in *installation, template string, cfg config) (*Server, error) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if err := copyDir(template, dataDir); err != nil {
		return nil, fmt.Errorf("failed to copy the template data directory: %w", err)
	}
	host, port, adminPort := "127.0.0.1", 0, 0
	if cfg.podIP {
		host = fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
		port, adminPort = render.MySQLPort, render.AdminPort
	} else {
		var err error
		if port, adminPort, err = freePorts(); err != nil {
			return nil, err
		}
	}
	socket, err := socketPath(t, dir)
	if err != nil {
		return nil, err
	}
	id := cfg.serverID
	if id == 0 {
		id = nextServerID.Add(1)
	}
	s := &Server{
		ServerID:  id,
		Host:      host,
		Port:      port,
		AdminPort: adminPort,
		Socket:    socket,
		DataDir:   dataDir,
		t:         t,
		errLog:    filepath.Join(dir, "error.log"),
	}
	args := []string{
		"--no-defaults", // must come first: no /etc/mysql/my.cnf
		"--datadir=" + dataDir,
		"--tmpdir=" + dir,
		"--socket=" + s.Socket,
		"--port=" + strconv.Itoa(port),
		"--bind-address=" + host,
		// The rendered my.cnf's extra_max_connections wins over this one (WithOptionFile comes after): this
		// is for servers booted without it.
		"--extra-port=" + strconv.Itoa(adminPort),
		"--extra-max-connections=10",
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--log-error=" + s.errLog,
		"--server-id=" + strconv.FormatUint(uint64(s.ServerID), 10),
		"--skip-name-resolve",
	}
	args = append(args, smallServer...)
	for _, o := range (mysql.MariaDBFlavor{}).BootOptions() {
		args = append(args, "--"+o)
	}
	if os.Geteuid() == 0 {
		// mariadbd refuses to run as root unless told to.
		args = append(args, "--user=root")
	}
	args = append(args, cfg.args...)
	s.binary, s.args = in.mariadbd, args
	t.Cleanup(s.Stop)
	if err := s.run(); err != nil {
		log := s.errorLogTail()
		if strings.Contains(log, "Address already in use") || strings.Contains(log, "Do you already have another") {
			return nil, fmt.Errorf("port %d: %w", port, errPortInUse)
		}
		return nil, err
	}
	return s, nil
}

// run starts mariadbd with the server's arguments and waits until it answers.
func (s *Server) run() error {
	cmd := exec.Command(s.binary, s.args...)
	cmd.Dir = filepath.Dir(s.DataDir)
	// If the test binary dies (panic, timeout, kill -9) the kernel kills the server too. Pdeathsig follows the
	// thread that started the child; Go does not end its threads while they are in use, and the servers are
	// stopped on Cleanup anyway.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start mariadbd: %w", err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	s.stopped.Store(false)
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if err := s.waitReady(60 * time.Second); err != nil {
		s.Stop()
		return fmt.Errorf("mariadbd (server_id %d, port %d) did not start: %v\n%s\n%s", s.ServerID, s.Port, err,
			out.String(), s.errorLogTail())
	}
	return nil
}

// Restart starts a stopped or killed server again on its data directory, port and options, as a Pod's
// container restarts on its volume, and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.run(); err != nil {
		s.t.Fatalf("mysqltest: restart: %v", err)
	}
}

// smallServer keeps each server's memory and files small; tests start many.
var smallServer = []string{
	"--innodb-buffer-pool-size=32M",
	"--innodb-log-file-size=8M",
	"--performance-schema=OFF",
	"--max-connections=100",
}

func (s *Server) waitReady(timeout time.Duration) error {
	db, err := sql.Open("mysql", s.RootDSN()+"?timeout=2s")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		cmd, exited := s.process()
		select {
		case <-exited:
			return fmt.Errorf("mariadbd exited: %s", cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) process() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.exited
}

// Pid is the process id of the server's mariadbd, 0 once it has exited (stopped, killed or crashed).
func (s *Server) Pid() int {
	cmd, exited := s.process()
	if cmd == nil {
		return 0
	}
	select {
	case <-exited:
		return 0
	default:
		return cmd.Process.Pid
	}
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 10s). It runs on Cleanup; tests may call it earlier
// to take a server away.
func (s *Server) Stop() {
	if !s.stopped.CompareAndSwap(false, true) {
		return
	}
	cmd, exited := s.process()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Process.Signal(syscall.SIGCONT) // a frozen server takes SIGTERM only once resumed
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Freeze stops the server's process (SIGSTOP): it keeps its connections and its state, and answers nothing, as
// a server that is paused, swapping or still in crash recovery. Thaw resumes it. A frozen server is still
// killed when the test ends.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	cmd, _ := s.process()
	if cmd == nil || s.stopped.Load() {
		s.t.Fatalf("mysqltest: server %d is not running", s.ServerID)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("mysqltest: %s to server %d: %v", sig, s.ServerID, err)
	}
}

// Kill ends the server with SIGKILL, as a crash would.
func (s *Server) Kill() {
	if !s.stopped.CompareAndSwap(false, true) {
		return
	}
	cmd, exited := s.process()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// PurgeBinaryLogs rotates the server's binary log and purges every older one, as PURGE BINARY LOGS or
// binlog_expire_logs_seconds do in production: what the server executed until now is then in no binary log it
// keeps. MariaDB keeps a log while a replica still reads it or InnoDB's binlog checkpoint has not passed it, and
// PURGE then stops there without an error, so this tries again until only the newest is left, for at most a
// minute; it fails the test after that.
func (s *Server) PurgeBinaryLogs() {
	s.t.Helper()
	db, err := sql.Open("mysql", s.RootDSN())
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.Exec("FLUSH BINARY LOGS"); err != nil {
		s.t.Fatalf("mysqltest: FLUSH BINARY LOGS: %v", err)
	}
	var logs []string
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(ctx context.Context) (bool, error) {
			if logs, err = binaryLogs(db); err != nil || len(logs) == 1 {
				return err == nil, err
			}
			_, err := db.ExecContext(ctx, "PURGE BINARY LOGS TO '"+logs[len(logs)-1]+"'")
			return false, err
		})
	if err != nil {
		s.t.Fatalf("mysqltest: the server of port %d keeps binary logs %v after PURGE BINARY LOGS: %v", s.Port, logs,
			err)
	}
}

func binaryLogs(db *sql.DB) ([]string, error) {
	rows, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("mysqltest: SHOW BINARY LOGS: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var logs []string
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return nil, err
		}
		logs = append(logs, name)
	}
	return logs, rows.Err()
}

// ErrorLog is the server's error log so far, for failure messages.
func (s *Server) ErrorLog() string {
	b, _ := os.ReadFile(s.errLog)
	return string(b)
}

func (s *Server) errorLogTail() string {
	lines := strings.Split(strings.TrimSpace(s.ErrorLog()), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// freePorts finds two free ports at once, so that they differ: the server's port and its AdminPort.
func freePorts() (port, adminPort int, err error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, fmt.Errorf("failed to find a free port: %w", err)
		}
		defer func() { _ = l.Close() }()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}

// socketPath keeps the socket in the server's directory unless that path is too long for a Unix socket
// (108 bytes on Linux; long test names make long temporary directories).
func socketPath(t testing.TB, dir string) (string, error) {
	p := filepath.Join(dir, "mariadbd.sock")
	if len(p) < 100 {
		return p, nil
	}
	short, err := os.MkdirTemp("", "mdb")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { _ = os.RemoveAll(short) })
	return filepath.Join(short, "s.sock"), nil
}

// installArgs make the template data directory. The template is made once per mariadbd version and these
// arguments, and copied for each server: mariadb-install-db takes seconds, a copy of ~25 MB milliseconds.
var installArgs = []string{
	"--no-defaults",
	"--auth-root-authentication-method=normal",
	"--skip-test-db",
	"--innodb-log-file-size=8M",
}

// templateDataDir returns a freshly initialised data directory to copy, making it on first use. It lives in
// the user's cache directory (like Go's build cache), keyed by the mariadbd version and the install arguments,
// so later test runs skip mariadb-install-db too.
func templateDataDir(in *installation) (string, error) {
	key := sha256.Sum256([]byte(in.version + "\x00" + strings.Join(installArgs, "\x00")))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "mysqlfleet", "mysqltest", hex.EncodeToString(key[:8]))
	if _, err := os.Stat(filepath.Join(dir, "ok")); err == nil {
		return filepath.Join(dir, "data"), nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// One build at a time on the machine: on a fresh machine every parallel test of every test binary gets
	// here at once, and a dozen mariadb-install-db runs on two loaded cores once made one of them fail (CI, with
	// its output cut). The others wait for the lock and find the template made. Each call opens the lock file
	// itself, so goroutines of one process exclude each other too (flock belongs to the open file description).
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer func() { _ = lock.Close() }() // closing releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ok")); err == nil {
		return filepath.Join(dir, "data"), nil
	}
	// Build beside it and rename into place, so that concurrent test binaries never see half a template.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	args := append(slices.Clone(installArgs), "--datadir="+filepath.Join(tmp, "data"))
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(in.installDB, args...)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mariadb-install-db failed: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "ok"), []byte(in.version+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Made first by a test binary that does not take the lock (an older checkout sharing the cache).
		if _, statErr := os.Stat(filepath.Join(dir, "ok")); statErr != nil {
			return "", fmt.Errorf("failed to put the template data directory in place: %w", err)
		}
	}
	return filepath.Join(dir, "data"), nil
}

// copyDir copies a data directory: regular files and directories only, which is all a fresh one holds.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o660)
	})
}
