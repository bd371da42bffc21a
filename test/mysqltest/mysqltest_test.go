package mysqltest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartBootsAReadOnlyGTIDServer(t *testing.T) {
	servers := StartN(t, 2)
	a, b := servers[0], servers[1]
	if a.ServerID == b.ServerID || a.Port == b.Port || a.DataDir == b.DataDir {
		t.Fatalf("servers share identity: %+v and %+v", a, b)
	}
	ctx := context.Background()
	// Over TCP, as replicas and clients reach it.
	db, err := sql.Open("mysql", a.DSN("root", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var id, readOnly, strict, logBin, slaveUpdates int
	var format, waitPoint string
	err = db.QueryRowContext(ctx, "SELECT @@server_id, @@read_only, @@gtid_strict_mode, @@log_bin, "+
		"@@log_slave_updates, @@binlog_format, @@rpl_semi_sync_master_wait_point").
		Scan(&id, &readOnly, &strict, &logBin, &slaveUpdates, &format, &waitPoint)
	if err != nil {
		t.Fatal(err)
	}
	if id != int(a.ServerID) || readOnly != 1 || strict != 1 || logBin != 1 || slaveUpdates != 1 || format != "ROW" ||
		waitPoint != "AFTER_SYNC" {
		t.Fatalf("server_id=%d read_only=%d gtid_strict_mode=%d log_bin=%d log_slave_updates=%d binlog_format=%s "+
			"wait_point=%s; want server_id=%d and the boot options", id, readOnly, strict, logBin, slaveUpdates,
			format, waitPoint, a.ServerID)
	}
	// Replication has not started: the server waits to be told its role.
	rows, err := b.OpenRoot().QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	if rows.Next() {
		t.Fatal("a fresh server has replication configured")
	}
}

// The server's AdminPort is its own (an option file's extra_port places nothing) and still takes logins once
// ordinary sessions exhaust max_connections: the test rig's side of render.AdminPort.
func TestAdminPortServesAFullServer(t *testing.T) {
	s := Start(t, WithOptionFile("[mysqld]\nextra_port = 33062\nmax_connections = 10\n"))
	ctx := context.Background()
	root := s.OpenRoot()
	for _, q := range []string{"CREATE USER app@'%' IDENTIFIED BY 'pw'", "CREATE USER admin@'%' IDENTIFIED BY 'pw'"} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	app, err := sql.Open("mysql", s.DSN("app", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	for n := 0; ; n++ {
		conn, err := app.Conn(ctx)
		if err != nil {
			if !strings.Contains(err.Error(), "1040") {
				t.Fatalf("connection %d: %v, want ERROR 1040", n, err)
			}
			break
		}
		defer func() { _ = conn.Close() }()
		if n > 20 {
			t.Fatal("max_connections = 10 from the option file was not applied")
		}
	}
	admin, err := sql.Open("mysql", s.AdminDSN("admin", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	var port int
	if err := admin.QueryRowContext(ctx, "SELECT @@extra_port").Scan(&port); err != nil {
		t.Fatalf("login on the admin port of a full server: %v", err)
	}
	if port != s.AdminPort || port == 33062 {
		t.Fatalf("extra_port = %d, want the server's own %d", port, s.AdminPort)
	}
}

func TestStopEndsTheProcess(t *testing.T) {
	s := Start(t)
	pid := s.cmd.Process.Pid
	s.Stop()
	if alive(pid) {
		t.Fatalf("mariadbd %d still runs after Stop", pid)
	}
	if _, err := os.Stat(s.Socket); err == nil {
		t.Fatalf("socket %s left behind: the server did not shut down cleanly", s.Socket)
	}
}

// fatalRecorder stands in for a test to see how the harness fails it.
type fatalRecorder struct {
	testing.TB
	fatal, skipped string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalRecorder) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalRecorder) Skip(args ...any) { f.Skipf("%s", fmt.Sprint(args...)) }
func (f *fatalRecorder) SkipNow()         { f.Skipf("SkipNow") }

func TestMissingMariaDBFailsTheTest(t *testing.T) {
	found.Lock()
	saved := found.installation
	found.installation = nil
	found.Unlock()
	savedDirs := searchDirs
	t.Cleanup(func() {
		found.Lock()
		found.installation = saved
		found.Unlock()
		searchDirs = savedDirs
	})
	empty := t.TempDir()
	searchDirs = []string{empty}
	t.Setenv("PATH", empty)

	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(rec)
		t.Error("Start returned without a server")
	}()
	<-done
	if rec.skipped != "" {
		t.Fatalf("the harness skipped: %s", rec.skipped)
	}
	if !strings.Contains(rec.fatal, "hack/install-deps.sh") || !strings.Contains(rec.fatal, "mariadbd") {
		t.Fatalf("failure message %q does not name mariadbd and hack/install-deps.sh", rec.fatal)
	}
}

// TestServersDieWithTheTestBinary starts a test binary that starts a server, kills that binary with SIGKILL
// (no cleanup runs) and expects the server to be gone too.
func TestServersDieWithTheTestBinary(t *testing.T) {
	if os.Getenv("MYSQLTEST_HELPER") == "1" {
		s := Start(t)
		fmt.Printf("PID %d\n", s.cmd.Process.Pid)
		time.Sleep(time.Hour)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServersDieWithTheTestBinary$", "-test.v")
	// The helper's temporary directories are left behind by the kill; keep them in ours.
	cmd.Env = append(os.Environ(), "MYSQLTEST_HELPER=1", "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := 0
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "PID "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
	}
	if pid == 0 {
		t.Fatal("the helper did not report its server's pid")
	}
	if !alive(pid) {
		t.Fatalf("mariadbd %d is not running", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("mariadbd %d outlived its test binary", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive tells whether a process runs; a zombie (dead, not yet reaped by an init that may never reap it) does
// not count.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces, the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
