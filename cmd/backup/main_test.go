package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// TestCommands runs the subcommands as a backup Job and a restore would, against real mariadbd servers and a
// directory target (the stores themselves are tested in internal/backup).
func TestCommands(t *testing.T) {
	ctx := context.Background()
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO app.t VALUES (1, 'one'), (2, 'two')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "backups")
	cmd := dirRunner(ctx, t, dir)
	var names []string
	for range 3 {
		out, err := cmd("backup", "--socket", src.Socket, "--member", "eu-1", "--pod", "db-1", "--retention", "2")
		if err != nil {
			t.Fatal(err)
		}
		var m backup.Manifest
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("backup printed %q: %v", out, err)
		}
		if m.Member != "eu-1" || m.Pod != "db-1" || m.GTIDPosition == "" {
			t.Errorf("manifest %+v", m)
		}
		names = append(names, m.Name)
	}
	out, err := cmd("list", "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	var listed []backup.Manifest
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].Name != names[2] || listed[1].Name != names[1] {
		t.Errorf("after three backups with --retention 2, listed %+v, want %v", listed, names[1:])
	}
	if out, err := cmd("list"); err != nil || !strings.Contains(out, names[2]) || strings.Contains(out, names[0]) {
		t.Errorf("list printed %q, %v", out, err)
	}

	fresh := mysqltest.Start(t)
	if _, err := cmd("restore", "--socket", fresh.Socket, "--name", names[1]); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := fresh.OpenRoot().QueryRow("SELECT GROUP_CONCAT(v ORDER BY id) FROM app.t").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "one,two" {
		t.Errorf("restored %q", got)
	}
	if _, err := cmd("prune", "--retention", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd("restore", "--socket", fresh.Socket, "--name", names[1]); err == nil {
		t.Error("restored a pruned backup")
	}
	if _, err := cmd("backup", "--target", "tape"); err == nil || !strings.Contains(err.Error(), "tape") {
		t.Errorf("an unknown target: %v", err)
	}
	if _, err := cmd("backup", "--socket", src.Socket, "--engine", ""); err == nil {
		t.Error("a backup without an engine ran")
	}
}

// TestPhysicalCommands takes a physical backup and restores it into the data directory of a stopped server, as
// an agent beside the server and a restore init container would.
func TestPhysicalCommands(t *testing.T) {
	ctx := context.Background()
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO app.t VALUES (1, 'one'), (2, 'two')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	cmd := dirRunner(ctx, t, filepath.Join(t.TempDir(), "backups"))
	out, err := cmd("backup", "--method", "physical", "--socket", src.Socket, "--member", "eu-1")
	if err != nil {
		t.Fatal(err)
	}
	var m backup.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.Method != backup.Physical || m.GTIDPosition == "" {
		t.Fatalf("backup printed %q: %v", out, err)
	}
	if out, err := cmd("list"); err != nil || !strings.Contains(out, m.Name+"  physical") {
		t.Errorf("list printed %q, %v", out, err)
	}
	if _, err := cmd("restore", "--method", "physical"); err == nil {
		t.Error("a physical restore without a data directory ran")
	}
	fresh := mysqltest.Start(t)
	fresh.Stop()
	if _, err := cmd("restore", "--method", "physical", "--datadir", fresh.DataDir); err == nil {
		t.Error("a physical restore into a data directory in use ran")
	}
	if err := os.RemoveAll(fresh.DataDir); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd("restore", "--method", "physical", "--datadir", fresh.DataDir, "--work-dir", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	fresh.Restart()
	var got string
	if err := fresh.OpenRoot().QueryRow("SELECT GROUP_CONCAT(v ORDER BY id) FROM app.t").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "one,two" {
		t.Errorf("restored %q", got)
	}
}

// dirRunner sets the environment of a backup Job whose target is the directory dir, for MariaDB, and returns a
// function that runs the command with args and gives its output (its standard error is logged on failure).
func dirRunner(ctx context.Context, t *testing.T, dir string) func(args ...string) (string, error) {
	t.Helper()
	t.Setenv("BACKUP_TARGET", "dir")
	t.Setenv("BACKUP_DIR", dir)
	t.Setenv("MYSQL_PWD", "")
	t.Setenv("BACKUP_ENGINE", "MariaDB")
	return func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, &out, &errOut)
		if err != nil {
			t.Logf("%v: %s", args, errOut.String())
		}
		return out.String(), err
	}
}

// TestAgentCommands takes a physical backup as a backup Job does for a database Pod: `agent` serves the server
// beside it with the admin account's password, and `backup --agents` asks it (after an address where nothing
// listens, as a Service without endpoints) for the copy. A Job with another password is refused.
func TestAgentCommands(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO app.t VALUES (1, 'one')", "CREATE USER admin@localhost IDENTIFIED BY 'admin-secret'",
		"GRANT ALL ON *.* TO admin@localhost"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	password := func(s string) string {
		p := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(p, []byte(s+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cmd := dirRunner(ctx, t, filepath.Join(t.TempDir(), "backups"))
	t.Setenv("POD_NAME", "orders-2")
	agent := func(args ...string) (string, <-chan error) {
		listen := closedAddr(t)
		done := make(chan error, 1)
		go func() {
			_, err := cmd(append([]string{"agent", "--socket", src.Socket, "--listen", listen}, args...)...)
			done <- err
		}()
		return listen, done
	}
	// An agent without a password keeps running (a sidecar that exits makes its Pod unready) and says why it
	// takes no backup.
	unusable, unusableDone := agent()
	listen, agentDone := agent("--user", "admin", "--password-file", password("admin-secret"))
	closed := closedAddr(t)
	var out string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, err = cmd("backup", "--method", "physical", "--agents", closed+","+listen, "--password-file",
			password("admin-secret"), "--member", "eu-1"); err == nil || !strings.Contains(err.Error(), listen+": ") ||
			!strings.Contains(err.Error(), "refused") {
			break // taken, or refused for another reason than the agent not listening yet
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var m backup.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.Method != backup.Physical || m.Pod != "orders-2" ||
		m.Member != "eu-1" || m.GTIDPosition == "" {
		t.Fatalf("backup printed %q: %v", out, err)
	}
	if _, err := cmd("backup", "--method", "physical", "--agents", listen, "--password-file",
		password("another password")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a backup with another password: %v, want it refused by the agent", err)
	}
	if _, err := cmd("backup", "--agents", listen); err == nil || !strings.Contains(err.Error(), "physical") {
		t.Errorf("a logical backup through agents: %v, want it refused", err)
	}
	if _, err := cmd("backup", "--method", "physical", "--agents", unusable, "--password-file",
		password("admin-secret")); err == nil || !strings.Contains(err.Error(), "503") ||
		!strings.Contains(err.Error(), "password") {
		t.Errorf("a backup of an agent without a password: %v, want its reason", err)
	}
	cancel()
	for _, done := range []<-chan error{agentDone, unusableDone} {
		if err := <-done; err != nil {
			t.Errorf("an agent ended with %v", err)
		}
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestArchiveCommands archives a server's binary log with `archive`, as a process beside a member would, and
// rolls another server forward with `replay` to a GTID: it holds exactly the rows up to it.
func TestArchiveCommands(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	for _, q := range []string{
		"SET STATEMENT sql_log_bin = 0 FOR CREATE USER archiver@'%' IDENTIFIED BY 'archiver-secret'",
		"SET STATEMENT sql_log_bin = 0 FOR GRANT REPLICATION SLAVE ON *.* TO archiver@'%'",
		"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cmd := dirRunner(ctx, t, filepath.Join(dir, "backups"))
	if _, err := cmd("archive", "--host", src.Host); err == nil || !strings.Contains(err.Error(), "server-id") {
		t.Errorf("archive without a server id: %v", err)
	}
	t.Setenv("MYSQL_PWD", "archiver-secret")
	done := make(chan error, 1)
	go func() {
		_, err := cmd("archive", "--host", src.Host, "--port", fmt.Sprint(src.Port), "--user", "archiver",
			"--server-id", "4000000010", "--max-age", "200ms")
		done <- err
	}()
	var positions []string
	for id := 1; id <= 3; id++ {
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO app.t VALUES (%d)", id)); err != nil {
			t.Fatal(err)
		}
		var pos string
		if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		positions = append(positions, pos)
	}
	dst := mysqltest.Start(t)
	t.Setenv("MYSQL_PWD", "")
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		// Until the archive holds the second write: a target past its end is refused, not half replayed.
		if _, err = cmd("replay", "--socket", dst.Socket, "--until-gtid", positions[1]); err == nil ||
			!strings.Contains(err.Error(), "past the end") {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := dst.OpenRoot().QueryRow("SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "1,2" {
		t.Errorf("replayed to the second write: %q, want 1,2", got)
	}

	// A backup at the third write, then a fourth write: restore-points says the backup and the archive reach it.
	// With its retention, a second backup prunes the first and the segments every retained backup holds, and
	// keeps the newest. The fourth write comes after the segment holding the second was closed, so the archive
	// has two segments or more once it holds the fourth.
	out, err := cmd("backup", "--socket", src.Socket)
	if err != nil {
		t.Fatal(err)
	}
	var first backup.Manifest
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO app.t VALUES (4)"); err != nil {
		t.Fatal(err)
	}
	var pos4 string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos4); err != nil {
		t.Fatal(err)
	}
	store := backup.DirStore{Dir: filepath.Join(dir, "backups")}
	var segs []archive.Segment
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if segs, err = archive.List(ctx, store); err != nil {
			t.Fatal(err)
		}
		if n := len(segs); n > 0 && segs[n-1].End == pos4 {
			break
		}
	}
	if n := len(segs); n < 2 || segs[n-1].End != pos4 {
		t.Fatalf("the archive does not hold the fourth write at %s in two segments or more: %+v", pos4, segs)
	}
	windows := func() []archive.Window {
		t.Helper()
		out, err := cmd("restore-points", "--output", "json")
		if err != nil {
			t.Fatal(err)
		}
		var ws []archive.Window
		if err := json.Unmarshal([]byte(out), &ws); err != nil {
			t.Fatalf("restore-points printed %q: %v", out, err)
		}
		return ws
	}
	if ws := windows(); len(ws) != 1 || ws[0].Backup != first.Name || ws[0].Until != pos4 || ws[0].Gap != nil ||
		!ws[0].From.Equal(first.EndTime) || ws[0].To.Before(segs[len(segs)-1].ClosedTime) {
		t.Errorf("restore points %+v, want backup %s (at %s) reaching %s", ws, first.Name, first.GTIDPosition, pos4)
	}
	if out, err := cmd("restore-points"); err != nil || !strings.Contains(out, first.Name) || !strings.Contains(out, pos4) {
		t.Errorf("restore-points printed %q, %v", out, err)
	}
	if _, err := cmd("backup", "--socket", src.Socket, "--retention", "1"); err != nil {
		t.Fatal(err)
	}
	if ws := windows(); len(ws) != 1 || ws[0].Backup == first.Name || ws[0].Until != pos4 {
		t.Errorf("after the second backup, restore points %+v, want only the second reaching %s", ws, pos4)
	}
	left, err := archive.List(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name != segs[len(segs)-1].Name {
		t.Errorf("after a backup at %s with --retention 1, the archive holds %+v, want only segment %s", pos4, left,
			segs[len(segs)-1].Name)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("archive ended with %v", err)
	}
}
