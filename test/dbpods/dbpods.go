// Package dbpods stands real mariadbd processes (test/mysqltest) behind Pods that run no container,
// such as kwok's or those a test creates by hand, as a kubelet would run the database image: each server boots
// with the my.cnf the member's ConfigMap holds and runs the credentials Secret's init script on its new data
// directory, as the image's entrypoint does. The member controller reaches a Pod's server through Resolve, which
// is the only seam between it and production, where it dials the Pod IP.
package dbpods

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// Servers maps Pod names to the servers standing behind them.
type Servers struct {
	t     testing.TB
	opts  []mysqltest.Option
	mu    sync.Mutex
	byPod map[string]*mysqltest.Server
}

// New returns an empty set of servers, stopped when the test ends. opts apply to every server it starts (e.g.
// mysqltest.OnPodIP, for a controller that reaches Pods at their IPs).
func New(t testing.TB, opts ...mysqltest.Option) *Servers {
	return &Servers{t: t, opts: opts, byPod: map[string]*mysqltest.Server{}}
}

// Resolve is a member.Resolver: where the Pod's server listens on its own administrative port
// (mysqltest.Server.AdminPort, the rendered extra_port), for the controller and for replication.
func (p *Servers) Resolve(pod *corev1.Pod) (clustering.Address, error) {
	s, err := p.serverOf(pod)
	if err != nil {
		return clustering.Address{}, err
	}
	return clustering.Address{Host: s.Host, Port: s.AdminPort}, nil
}

// MySQLAddr is where the Pod's server listens on its MySQL port, as the Pod's Services reach it (applications,
// backup Jobs).
func (p *Servers) MySQLAddr(pod *corev1.Pod) (clustering.Address, error) {
	s, err := p.serverOf(pod)
	if err != nil {
		return clustering.Address{}, err
	}
	return clustering.Address{Host: s.Host, Port: s.Port}, nil
}

func (p *Servers) serverOf(pod *corev1.Pod) (*mysqltest.Server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.byPod[pod.Name]
	if !ok {
		return nil, fmt.Errorf("no server runs for pod %s", pod.Name)
	}
	return s, nil
}

// Start runs a new server, with an empty data directory, for the Pod: booted with cnf (the [mysqld] options of a
// my.cnf; those that place files and ports, extra_port included, are the test's) and then given script (SQL run as root in one
// session, as the image runs /docker-entrypoint-initdb.d). A server it replaces is killed first.
func (p *Servers) Start(pod, cnf, script string) *mysqltest.Server {
	return p.StartWithRoot(pod, cnf, script, "")
}

// StartWithRoot is Start that also does what the image's entrypoint does with MYSQL_ROOT_PASSWORD: root's
// network accounts (root@'%', and the loopback ones that TCP logins from 127.0.0.1 would match) get that
// password, out of the binary log. root over the server's socket keeps no password, for the test's own use.
func (p *Servers) StartWithRoot(pod, cnf, script, rootPassword string) *mysqltest.Server {
	if rootPassword != "" {
		pw := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(rootPassword)
		script = "SET SESSION sql_log_bin = 0;\n" +
			fmt.Sprintf("ALTER USER IF EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '%s';\n", pw) +
			fmt.Sprintf("ALTER USER IF EXISTS 'root'@'::1' IDENTIFIED BY '%s';\n", pw) +
			fmt.Sprintf("CREATE USER IF NOT EXISTS 'root'@'%%' IDENTIFIED BY '%s';\n", pw) +
			"GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;\n" + script
	}
	p.t.Helper()
	if old := p.Server(pod); old != nil {
		old.Kill()
	}
	// report_host is the Pod's name, and server_id the new data directory's own, as the rendered command line
	// sets them.
	s := mysqltest.Start(p.t, append(slices.Clone(p.opts), mysqltest.WithOptionFile(cnf),
		mysqltest.WithServerID(p.serverID(pod)), mysqltest.WithArgs("--report-host="+pod))...)
	if script != "" {
		db, err := sql.Open("mysql", s.RootDSN()+"?multiStatements=true")
		if err != nil {
			p.t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		if _, err := db.Exec(script); err != nil {
			p.t.Fatalf("dbpods: the init script failed on the server of %s: %v", pod, err)
		}
	}
	p.mu.Lock()
	p.byPod[pod] = s
	p.mu.Unlock()
	return s
}

// serverID runs the rendered server command's identity script (render.ServerIDScript) for a new volume of the
// Pod, as the Pod's container does before the image's entrypoint initialises the data directory.
func (p *Servers) serverID(pod string) uint32 {
	p.t.Helper()
	volume := p.t.TempDir()
	ordinal := pod[strings.LastIndex(pod, "-")+1:]
	cmd := exec.Command("sh", "-c", "set -eu\n"+render.ServerIDScript+`echo "$server_id"`)
	cmd.Env = append(os.Environ(), "volume="+volume, "datadir="+filepath.Join(volume, "data"), "ordinal="+ordinal)
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("dbpods: the server-id script failed for %s: %v: %s", pod, err, out)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
	if err != nil {
		p.t.Fatalf("dbpods: the server-id script printed %q for %s: %v", out, pod, err)
	}
	return uint32(id)
}

// Server is the server behind the Pod, nil if none was started.
func (p *Servers) Server(pod string) *mysqltest.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byPod[pod]
}
