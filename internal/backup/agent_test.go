package backup_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// The agent runs the real mariadb-backup against a real mariadbd, as the sidecar of a database Pod does; the
// backup is taken by Run with Agents, as a backup Job takes it, and restored and started as in the other
// physical tests.

// startAgent serves an agent for src over loopback HTTP, with the token of password.
func startAgent(t *testing.T, src backup.Source, password, pod string) (*backup.Agent, string) {
	t.Helper()
	a := &backup.Agent{Source: src, Token: backup.AgentToken(password), Pod: pod, TempDir: t.TempDir(),
		Log: testLog{t}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, strings.TrimPrefix(srv.URL, "http://")
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("agent: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// closedAddr is a loopback address where nothing listens, as a Service without endpoints refuses.
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

// A backup asked of the agents in order (the replicas' Service, which refuses, then one that answers) is taken
// by the agent that answers: its manifest names that agent's Pod and address, and it restores into a server
// that holds every table as the source has it.
func TestPhysicalBackupThroughTheAgent(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	_, addr := startAgent(t, src.conn(), "admin-secret", "orders-1")
	store := backup.DirStore{Dir: t.TempDir()}
	want := checksums(t, src.db)
	m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical,
		Cluster: "orders", Member: "eu-1", Agents: &backup.Agents{Addrs: []string{closedAddr(t), addr},
			Token: backup.AgentToken("admin-secret")}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != backup.Physical || m.Pod != "orders-1" || m.Host != addr || m.GTIDPosition == "" ||
		!strings.HasPrefix(m.ServerVersion, "10.11.") || m.Size == 0 || m.DumpSize <= m.Size {
		t.Errorf("manifest %+v", m)
	}
	dst, restored := restoreInto(t, backup.PhysicalRestoreOptions{Store: store})
	if restored.Name != m.Name {
		t.Fatalf("restored %s, want %s", restored.Name, m.Name)
	}
	got := checksums(t, dst.OpenRoot())
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: restored %q, source %q", k, got[k], v)
		}
	}
}

// The agent copies nothing for a caller without the token, and a copy that fails on the agent's side or is
// abandoned by its caller is never listed; the agent then takes the next request.
func TestAgentRefusesAndFailsCleanly(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	// Incompressible, so that the stream is still running at the cuts below.
	src.addBlobs(t, 100, 16, 1<<20)
	_, addr := startAgent(t, src.conn(), "admin-secret", "orders-1")
	store := backup.DirStore{Dir: t.TempDir()}
	run := func(ctx context.Context, token string) (*backup.Manifest, error) {
		return backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical,
			Agents: &backup.Agents{Addrs: []string{addr}, Token: token}})
	}
	listed := func() int {
		l, err := backup.List(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}

	t.Run("wrong token", func(t *testing.T) {
		_, err := run(ctx, backup.AgentToken("another password"))
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("a backup with the wrong token: %v, want it refused with 401", err)
		}
		resp, err := http.Post("http://"+addr+backup.AgentPath, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a request without a token: %s, want 401", resp.Status)
		}
	})
	t.Run("mariadb-backup killed on the agent", func(t *testing.T) {
		conn := src.conn()
		conn.Conn.Path = killingTool(t, "mariadb-backup", 8<<20)
		_, killing := startAgent(t, conn, "admin-secret", "orders-1")
		_, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical,
			Agents: &backup.Agents{Addrs: []string{killing}, Token: backup.AgentToken("admin-secret")}})
		if err == nil || !strings.Contains(err.Error(), "mariadb-backup") {
			t.Fatalf("a backup whose mariadb-backup was killed: %v, want its failure", err)
		}
		if n := listed(); n != 0 {
			t.Errorf("%d backups listed after a failed copy", n)
		}
	})
	t.Run("caller gone midway", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cut := &cutStore{Store: store, after: 6 << 20, cancel: cancel}
		_, err := backup.Run(cctx, backup.Options{Source: src.conn(), Store: cut, Method: backup.Physical,
			Agents: &backup.Agents{Addrs: []string{addr}, Token: backup.AgentToken("admin-secret")}})
		cancel()
		if err == nil {
			t.Fatal("a backup whose caller gave up succeeded")
		}
		if n := listed(); n != 0 {
			t.Errorf("%d backups listed after an abandoned copy", n)
		}
	})
	// The agent is free again once the abandoned copy has ended (its mariadb-backup killed): the next
	// request is taken, not refused as a second backup at once.
	var m *backup.Manifest
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if m, err = run(ctx, backup.AgentToken("admin-secret")); err == nil || time.Now().After(deadline) ||
			!strings.Contains(err.Error(), "409") {
			break
		}
	}
	if err != nil {
		t.Fatalf("the agent did not take a backup after the failed ones: %v", err)
	}
	if n := listed(); n != 1 {
		t.Errorf("%d backups listed, want the one %s", n, m.Name)
	}
}

// While a copy runs, a second request is refused with 409 rather than starting a second mariadb-backup.
func TestAgentTakesOneBackupAtATime(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	src.addBlobs(t, 100, 16, 1<<20)
	_, addr := startAgent(t, src.conn(), "admin-secret", "orders-1")
	token := backup.AgentToken("admin-secret")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+backup.AgentPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	first, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Body.Close() }()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %s", first.Status)
	}
	// The first copy is held open: its body is not read.
	_, err = backup.Run(ctx, backup.Options{Source: src.conn(), Store: backup.DirStore{Dir: t.TempDir()},
		Method: backup.Physical, Agents: &backup.Agents{Addrs: []string{addr}, Token: token}})
	if err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("a second backup while one runs: %v, want it refused with 409", err)
	}
}
