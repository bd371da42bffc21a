//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlfleet/mysqlfleet/internal/cli"
	"github.com/mysqlfleet/mysqlfleet/test/localfleet"
)

// tourStep is what a command of the printed tour must show; a command whose effect takes a moment (a
// failover, a backup) is run again, as printed, until it does.
type tourStep struct {
	command *regexp.Regexp
	output  *regexp.Regexp
}

// What `make demo` promises a new user, as a user meets it: `fleet up` (in a directory of the test's, with
// binaries built for it) ends with every member of the demo's MySQLCluster Ready and replicating, on real
// MariaDB servers behind kwok's Pods; every command of the tour it prints works as printed; and `fleet down`
// leaves no process, port or file of the demo behind.
func TestDemo(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin, dir, tmpdir := filepath.Join(tmp, "bin"), filepath.Join(tmp, "fleet"), filepath.Join(tmp, "tmp")
	if err := os.MkdirAll(tmpdir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"./hack/fleet", "./cmd/mysqlfleet"} {
		build := exec.Command("go", "build", "-o", bin+"/", pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	// Everything the demo writes to a temporary directory lands in tmpdir, which must be empty at the end.
	env := append(os.Environ(), "TMPDIR="+tmpdir)
	if os.Getenv("MYSQLFLEET_BIN") == "" {
		env = append(env, "MYSQLFLEET_BIN="+filepath.Join(root, "bin"))
	}
	run := func(timeout time.Duration, line string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	fleet := filepath.Join(bin, "fleet") + " -dir " + dir
	downed := false
	t.Cleanup(func() {
		if !downed {
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(dir, "supervisor.log"))
				t.Logf("supervisor.log (tail):\n%s", tail(string(b), 20000))
			}
			_, _ = run(5*time.Minute, fleet+" down")
		}
	})

	out, err := run(20*time.Minute, fleet+" up")
	t.Logf("fleet up:\n%s", out)
	if err != nil {
		t.Fatalf("fleet up: %v", err)
	}

	// Every member Ready, replicating, with a primary and both replicas in sync.
	hub := filepath.Join(dir, "clusters", "hub", "kubeconfig")
	js, err := run(time.Minute, filepath.Join(bin, "mysqlfleet")+" --kubeconfig "+hub+" get orders -n shop -o json")
	if err != nil {
		t.Fatalf("mysqlfleet get: %v\n%s", err, js)
	}
	var views []cli.ClusterView
	if err := json.Unmarshal([]byte(js), &views); err != nil {
		t.Fatalf("mysqlfleet get -o json: %v\n%s", err, js)
	}
	if len(views) != 1 || views[0].Ready != "True" || len(views[0].Members) != 3 {
		t.Fatalf("want orders Ready on 3 members, got %s", js)
	}
	for _, m := range views[0].Members {
		r := m.Replication
		if m.Phase != "Ready" || m.Replicating != "True" || r == nil || r.Primary == "" || r.ReplicasInSync != 2 {
			t.Errorf("member %s: phase %s, replicating %s, replication %+v", m.Name, m.Phase, m.Replicating, r)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	steps := []tourStep{
		{regexp.MustCompile(`sql \S+ shop/orders-primary "CREATE TABLE`), nil},
		{regexp.MustCompile(`sql \S+ shop/orders-replicas "SELECT`), regexp.MustCompile(`orders-\d\s+1\s+tea`)},
		{regexp.MustCompile(`kill \S+ shop/orders-primary$`), regexp.MustCompile(`Killed mariadbd`)},
		{regexp.MustCompile(`get orders -n shop -o wide$`), regexp.MustCompile(`Failover:orders-\d→orders-\d`)},
		{regexp.MustCompile(`patch mysqlclusters.mysqlfleet.io orders`), nil},
		{regexp.MustCompile(`get orders -n shop -o wide$`), regexp.MustCompile(`Switchover:orders-\d→orders-1`)},
		{regexp.MustCompile(`backup orders -n shop --member \S+$`), nil},
		{regexp.MustCompile(`backups orders -n shop$`), regexp.MustCompile(`(?m)^\S+\s+aws-eu-west-1\s+\d{8}T\d{9}Z`)},
		{regexp.MustCompile(`apply --server-side -f hack/fleet/orders-copy.yaml$`), nil},
		{regexp.MustCompile(`get orders-copy -n shop$`), regexp.MustCompile(`shop/orders-copy\s+1/1 ready\s+Ready\s+True`)},
		{regexp.MustCompile(`sql \S+ shop/orders-copy-primary "SELECT`), regexp.MustCompile(`1\s+tea`)},
		{regexp.MustCompile(`^make demo-down$`), nil}, // run below as fleet down, on the test's directory
	}
	var tour []string
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "  $ "); ok {
			tour = append(tour, c)
		}
	}
	if len(tour) != len(steps) {
		t.Fatalf("the tour has %d commands, the test knows %d: %q", len(tour), len(steps), tour)
	}
	for i, line := range tour[:len(tour)-1] {
		s := steps[i]
		if !s.command.MatchString(line) {
			t.Fatalf("tour command %d is %q, want one matching %s", i+1, line, s.command)
		}
		var got string
		err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, 4*time.Minute, true,
			func(context.Context) (bool, error) {
				var err error
				got, err = run(time.Minute, line)
				return err == nil && (s.output == nil || s.output.MatchString(got)), nil
			})
		t.Logf("$ %s\n%s", line, got)
		if err != nil {
			t.Fatalf("tour command %d did not work as printed: %s\n%s", i+1, line, got)
		}
	}

	// What the demo runs, and where, before it goes down: every process that names its directory (the
	// supervisor, control planes, managers, mariadbd) and the ports of its API servers and database servers.
	pids := processesUnder(t, dir)
	ports := demoPorts(t, dir)
	if len(pids) == 0 || len(ports) == 0 {
		t.Fatalf("found %d processes and %d ports of the demo", len(pids), len(ports))
	}
	out, err = run(5*time.Minute, fleet+" down")
	downed = true
	if err != nil {
		t.Fatalf("fleet down: %v\n%s", err, out)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d of the demo still runs after fleet down", pid)
		}
	}
	for _, port := range ports {
		if c, err := net.DialTimeout("tcp", port, time.Second); err == nil {
			_ = c.Close()
			t.Errorf("something still listens on %s after fleet down", port)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after fleet down (%v)", dir, err)
	}
	if left, _ := os.ReadDir(tmpdir); len(left) > 0 {
		t.Errorf("the demo left %d files in its temporary directory, e.g. %s", len(left), left[0].Name())
	}
}

// processesUnder lists the processes whose command line names dir, and the supervisor.
func processesUnder(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	if b, err := os.ReadFile(filepath.Join(dir, "supervisor.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pids = append(pids, pid)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil &&
			strings.Contains(string(b), dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// demoPorts are the addresses of the fleet's API servers and of the servers behind its database Pods.
func demoPorts(t *testing.T, dir string) []string {
	t.Helper()
	infos, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, i := range infos {
		u, err := url.Parse(i.Server)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, u.Host)
		if i.Role != "member" {
			continue
		}
		recs, err := localfleet.ReadServers(localfleet.ServerFile(dbDir(dir, i.Name)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			addrs = append(addrs, net.JoinHostPort(r.Host, strconv.Itoa(r.Port)),
				net.JoinHostPort(r.Host, strconv.Itoa(r.AdminPort)))
		}
	}
	return addrs
}

// alive tells whether a process runs (a zombie, dead but not yet reaped by its parent, does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }
