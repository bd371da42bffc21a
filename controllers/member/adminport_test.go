package member

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// The primary's only replica is frozen (SIGSTOP: its receiver keeps its connection and acknowledges nothing), so
// every commit waits for semi-sync; the application's sessions pile up, each waiting in a commit, until the
// server refuses more with ERROR 1040. The controller's sessions are then dropped, as a restart of the
// controller or a network blip drops them, and it must log in again on the full server: on the reserved
// administrative port it does, and its passes go on reading the primary. The rendered readiness probe passes
// there too. Then the replica's server restarts: its receiver must connect again to the full primary, which it
// does on the administrative port too (on the MySQL port it is refused with ERROR 1040, see Resolver), and the
// waiting commits complete.
func TestControllerIsNotLockedOutOfAFullPrimary(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("full", 2, mysqltest.WithArgs("--max-connections=10"))
	key := types.NamespacedName{Namespace: testNS, Name: "full"}
	s.waitFormed(g, 0, 1)
	s.root(0, "CREATE TABLE shop.orders (id INT PRIMARY KEY, server INT)")
	primary := s.server(0)
	admin := openAdmin(t, primary)

	s.server(1).Freeze()
	app := newWaitingApp(t, primary)
	app.fill(g)
	g.Eventually(func() (int, error) { return inQuery(admin, appUser) }, convergeWithin, 100*time.Millisecond).
		Should(Equal(app.sessions), "every application session waits in its commit")
	g.Expect(app.committed()).To(BeZero())
	killed := killSessions(g, admin, v1alpha1.AdminUser)
	g.Expect(killed).NotTo(BeZero(), "the controller had no session on the primary")
	// Slots the controller's sessions held on the MySQL port are taken, as by an application that keeps
	// opening sessions.
	app.fill(g)
	t.Logf("%d application sessions wait in a commit; %d controller sessions dropped", app.sessions, killed)

	// A pass that was running when the sessions were dropped may have seen them go; the next starts after.
	from := e.r.passCount(key)
	g.Eventually(func() int { return e.r.passCount(key) }, convergeWithin, 100*time.Millisecond).
		Should(BeNumerically(">=", from+2))
	// Then every report shows the primary read, while three more passes run.
	from = e.r.passCount(key)
	g.Eventually(func() (int, error) {
		if err := readsPrimary(s.report(), s.pod(0)); err != nil {
			return 0, StopTrying("the controller lost the primary").Wrap(err)
		}
		return e.r.passCount(key), nil
	}, convergeWithin, 100*time.Millisecond).Should(BeNumerically(">=", from+3))

	probe := s.sts.Spec.Template.Spec.Containers[0].ReadinessProbe.Exec.Command[2]
	g.Expect(runProbe(probe, primary.AdminPort)).To(Succeed(), "the rendered readiness probe on the admin port")
	g.Expect(runProbe(probe, primary.Port)).To(MatchError(ContainSubstring("Too many connections")),
		"the same probe on the MySQL port")

	// A replica's receiver that connects now is refused on the MySQL port and let in on the administrative one.
	for port, refused := range map[int]bool{primary.Port: true, primary.AdminPort: false} {
		cfg := driver.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net = v1alpha1.ReplicationUser, replPassword, "tcp"
		cfg.Addr = net.JoinHostPort(primary.Host, strconv.Itoa(port))
		db, err := sql.Open("mysql", cfg.FormatDSN())
		g.Expect(err).NotTo(HaveOccurred())
		err = db.Ping()
		_ = db.Close()
		if refused {
			g.Expect(isTooMany(err)).To(BeTrue(), "the replication account on port %d: %v", port, err)
		} else {
			g.Expect(err).NotTo(HaveOccurred(), "the replication account on port %d", port)
		}
	}
	s.server(1).Stop() // a frozen server takes its SIGTERM once resumed
	s.server(1).Restart()
	g.Eventually(app.committed, convergeWithin, 100*time.Millisecond).Should(Equal(app.sessions))
	g.Expect(app.errs).To(BeEmpty())
	s.waitFormed(g, 0, 1)
}

// readsPrimary tells whether the report shows pod as the primary, read without an error by the last pass.
func readsPrimary(rep *v1alpha1.ReplicationReport, pod string) error {
	switch {
	case rep == nil:
		return errors.New("no report")
	case rep.Primary != pod:
		return fmt.Errorf("the primary is %q, not %s; last error %q", rep.Primary, pod, rep.LastError)
	case strings.Contains(rep.LastError, "Too many connections"):
		return fmt.Errorf("last error %q", rep.LastError)
	}
	for _, in := range rep.Instances {
		if in.Pod == pod && (in.Role != v1alpha1.ReplicationRolePrimary || in.Error != "") {
			return fmt.Errorf("%s has role %s, error %q", pod, in.Role, in.Error)
		}
	}
	return nil
}

// waitingApp is an application whose every session commits an insert that waits for an acknowledgement.
type waitingApp struct {
	t         *testing.T
	ctx       context.Context
	app, root *sql.DB
	// sessions counts the sessions opened; their commits' outcomes arrive on done, and returned counts those
	// received, errs the failed ones.
	sessions, returned int
	done               chan error
	errs               []error
}

func newWaitingApp(t *testing.T, srv *mysqltest.Server) *waitingApp {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the servers stop: the sessions end with their connections
	a := &waitingApp{t: t, ctx: ctx, done: make(chan error, 100)}
	var err error
	if a.app, err = sql.Open("mysql", srv.DSN(appUser, appPassword)+"shop?timeout=1s"); err != nil {
		t.Fatal(err)
	}
	if a.root, err = sql.Open("mysql", srv.DSN("root", rootPassword)+"?timeout=1s"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.app.Close(); _ = a.root.Close() })
	return a
}

// fill opens sessions on the MySQL port until the server refuses one with ERROR 1040, each committing an insert
// in the background, then root sessions until it refuses those too: MariaDB lets one connection beyond
// max_connections in for an account with CONNECTION ADMIN, which the controller's has, and a root session takes
// it, as a human's or a monitoring agent's would.
func (a *waitingApp) fill(g Gomega) {
	for {
		conn, err := a.app.Conn(a.ctx)
		if err != nil {
			g.Expect(isTooMany(err)).To(BeTrue(), "opening an application session: %v", err)
			break
		}
		a.sessions++
		go func(id int) {
			defer func() { _ = conn.Close() }()
			_, err := conn.ExecContext(a.ctx, "INSERT INTO orders VALUES (?, 0)", id)
			a.done <- err
		}(a.sessions)
		g.Expect(a.sessions).To(BeNumerically("<", 50), "the server never refused a session")
	}
	for {
		conn, err := a.root.Conn(a.ctx)
		if err != nil {
			g.Expect(isTooMany(err)).To(BeTrue(), "opening a root session: %v", err)
			return
		}
		a.t.Cleanup(func() { _ = conn.Close() })
	}
}

// committed is how many sessions' commits have returned; those that failed are in errs.
func (a *waitingApp) committed() int {
	for {
		select {
		case err := <-a.done:
			a.returned++
			if err != nil {
				a.errs = append(a.errs, err)
			}
		default:
			return a.returned
		}
	}
}

func isTooMany(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1040
}

// openAdmin opens a root pool on the server's administrative port, for the test to look on while it is full.
func openAdmin(t *testing.T, srv *mysqltest.Server) *sql.DB {
	db, err := sql.Open("mysql", srv.AdminDSN("root", rootPassword))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// inQuery is the number of user's sessions running a statement. (Rpl_semi_sync_master_wait_sessions counts one:
// the others wait behind it in the commit.)
func inQuery(db *sql.DB, user string) (int, error) {
	var n int
	err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND <> 'Sleep'",
		user).Scan(&n)
	return n, err
}

// killSessions ends every session of user and returns how many it ended.
func killSessions(g Gomega, db *sql.DB, user string) int {
	rows, err := db.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", user)
	g.Expect(err).NotTo(HaveOccurred())
	var ids []int64
	for rows.Next() {
		var id int64
		g.Expect(rows.Scan(&id)).To(Succeed())
		ids = append(ids, id)
	}
	g.Expect(rows.Close()).To(Succeed())
	for _, id := range ids {
		_, err := db.Exec("KILL CONNECTION " + strconv.FormatInt(id, 10))
		var me *driver.MySQLError
		if !errors.As(err, &me) || me.Number != 1094 { // 1094: unknown thread, one that ended meanwhile
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	return len(ids)
}

// runProbe runs the rendered readiness probe as the container would, on port instead of render.AdminPort (the
// test's servers share 127.0.0.1).
func runProbe(script string, port int) error {
	script = strings.Replace(script, "--port="+strconv.Itoa(render.AdminPort), "--port="+strconv.Itoa(port), 1)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MYSQL_ROOT_PASSWORD=" + rootPassword}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}
