package clustering_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
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

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// The real-server tests run MariaDB 10.11 processes (test/mysqltest) and drive them only through
// the engine: Reconcile over ServerOps, as the member controller will. The test plays the member controller
// (it keeps the record) and the application (writers that follow the recorded primary, as clients of the
// primary Service do once the role label moves).

const (
	adminUser     = "fleet-admin"
	adminPassword = `adm'n\pw`
	replUser      = "repl"
	replPassword  = `re"pl'pw`
	appUser       = "shop"
	appPassword   = "shop-pw"
	appDatabase   = "shop_db"

	convergeTimeout = 90 * time.Second
)

// fleet is one member's set of instances, its member controller's record, and the application's pools.
type fleet struct {
	t       *testing.T
	servers []*mysqltest.Server
	admin   []*mysql.Server
	// ops is what the engine acts through: server, possibly wrapped by a test.
	ops     clustering.Ops
	server  *clustering.ServerOps
	desired clustering.Desired

	mu  sync.Mutex
	rec clustering.Record
	// primary is the recorded primary, -1 before bootstrap; writers follow it.
	primary atomic.Int32
	apps    map[int]*sql.DB
	// decisions are the decisions of every pass that was not Steady, for assertions and logs; steps are the
	// steps of every pass.
	decisions []clustering.Decision
	steps     []clustering.Step
}

// newFleet starts n servers and creates the member controller's admin user and the replication user on each,
// unlogged, as a Pod's init would. Nothing else: the engine forms the set.
func newFleet(t *testing.T, n int) *fleet {
	t.Helper()
	f := &fleet{t: t, servers: mysqltest.StartN(t, n), apps: map[int]*sql.DB{}}
	f.primary.Store(-1)
	for _, s := range f.servers {
		f.admin = append(f.admin, initServer(t, s))
		f.desired.Addresses = append(f.desired.Addresses, clustering.Address{Host: s.Host, Port: s.Port})
	}
	f.desired.Name, f.desired.Engine, f.desired.MaxLag = "shop", mysql.MariaDB, 5*time.Second
	f.server = &clustering.ServerOps{
		Servers: f.admin, ReplicationUser: replUser, ReplicationPassword: replPassword,
		ConnectRetry: time.Second, Save: f.save, RebuildWith: f.rebuild, SeedWith: f.seed,
	}
	f.ops = f.server
	return f
}

// rebuild empties instance i as root, as the member controller does (there is no init script here: the
// accounts stay, and the application's database came through replication).
func (f *fleet) rebuild(ctx context.Context, i int, executed mysql.GTIDSet) error {
	f.mu.Lock()
	s := f.servers[i]
	f.mu.Unlock()
	root, err := mysql.Open(mysql.MariaDBFlavor{}, s.RootDSN())
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	return root.Empty(ctx, executed, "")
}

// seed loads instance i with a dump of source, as the member controller's seed Job does, and returns once done.
func (f *fleet) seed(ctx context.Context, i, source int) error {
	f.mu.Lock()
	target, src := f.servers[i], f.servers[source]
	f.mu.Unlock()
	flavor := mysql.MariaDBFlavor{}
	_, err := backup.Seed(ctx, backup.SeedOptions{
		Source: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Host: src.Host, Port: src.Port, User: adminUser},
			Password: adminPassword},
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: target.Socket, User: "root"}},
	})
	return err
}

// initServer creates the admin and replication users on a fresh server, unlogged, as a Pod's init would, and
// opens the member controller's connection to it.
func initServer(t *testing.T, s *mysqltest.Server) *mysql.Server {
	t.Helper()
	root, err := mysql.Open(mysql.MariaDBFlavor{}, s.RootDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	for _, u := range []mysql.User{
		{Kind: mysql.AdminUser, Name: adminUser, Password: adminPassword},
		{Kind: mysql.ReplicationUser, Name: replUser, Password: replPassword},
	} {
		if err := root.EnsureUserUnlogged(context.Background(), u); err != nil {
			t.Fatalf("failed to bootstrap user %s on server %d: %v", u.Name, s.ServerID, err)
		}
	}
	admin, err := mysql.Open(mysql.MariaDBFlavor{}, s.DSN(adminUser, adminPassword)+"?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

// replace puts a fresh server in place of instance i, as a Pod recreated on a new, empty volume. Its address
// changes here (a Pod keeps its name), which the desired set follows.
func (f *fleet) replace(i int) {
	f.t.Helper()
	s := mysqltest.Start(f.t)
	admin := initServer(f.t, s)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.servers[i], f.admin[i] = s, admin // f.server.Servers is f.admin
	f.desired.Addresses[i] = clustering.Address{Host: s.Host, Port: s.Port}
	delete(f.apps, i)
}

// newBootstrappedFleet forms the set through the engine and creates the application's user and table.
func newBootstrappedFleet(t *testing.T, n int) *fleet {
	t.Helper()
	f := newFleet(t, n)
	f.converge()
	if f.decisions[0].Kind != clustering.Bootstrap {
		t.Fatalf("the first decision was %s, want Bootstrap", f.decisions[0])
	}
	p := f.primaryIndex()
	err := f.admin[p].EnsureUser(context.Background(), mysql.User{Kind: mysql.ApplicationUser, Name: appUser,
		Password: appPassword, Database: appDatabase})
	if err != nil {
		t.Fatalf("failed to create the application user: %v", err)
	}
	if _, err := f.app(p).Exec("CREATE TABLE orders (id INT PRIMARY KEY, server INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	f.waitReplicas(p)
	return f
}

func (f *fleet) save(_ context.Context, r clustering.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec = r
	f.primary.Store(int32(r.PrimaryIndex()))
	return nil
}

func (f *fleet) record() clustering.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rec
}

func (f *fleet) primaryIndex() int { return int(f.primary.Load()) }

// pass runs the engine once.
func (f *fleet) pass() (clustering.Plan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()
	start := time.Now()
	plan, err := clustering.Reconcile(ctx, f.desired, f.record(), f.ops, 2*time.Second)
	f.steps = append(f.steps, plan.Steps...)
	if plan.Decision.Kind != clustering.Steady || err != nil {
		f.decisions = append(f.decisions, plan.Decision)
		var steps []string
		for _, s := range plan.Steps {
			steps = append(steps, s.String())
		}
		f.t.Logf("pass (%s): %s; steps %q; error %v", time.Since(start).Round(time.Millisecond), plan.Decision,
			steps, err)
	}
	return plan, err
}

// converge runs passes until one is Steady with every instance that answers in a role (no replica still
// connecting) and returns its plan.
func (f *fleet) converge() clustering.Plan {
	f.t.Helper()
	return f.until("a steady pass", func(p clustering.Plan) bool {
		return p.Decision.Kind == clustering.Steady && !slices.ContainsFunc(p.Report.Instances,
			func(in clustering.InstanceReport) bool { return in.Role == clustering.RoleNone })
	})
}

// until runs passes, as the member controller would (at once after a change, a little later otherwise),
// until done holds for a pass that ran without error.
func (f *fleet) until(what string, done func(clustering.Plan) bool) clustering.Plan {
	f.t.Helper()
	deadline := time.Now().Add(convergeTimeout)
	for {
		plan, err := f.pass()
		if err == nil && done(plan) {
			return plan
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out after %s waiting for %s; last decision %s, error %v\n%s", convergeTimeout, what,
				plan.Decision, err, f.describe())
		}
		if err != nil || !plan.Requeue() {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// decided tells whether a pass since the fleet started decided kind, from and to (-1 for any).
func (f *fleet) decided(kind clustering.Kind, from, to int) bool {
	return slices.ContainsFunc(f.decisions, func(d clustering.Decision) bool {
		return d.Kind == kind && (from < 0 || d.From == from) && (to < 0 || d.To == to)
	})
}

// app is the application's pool for server i.
func (f *fleet) app(i int) *sql.DB {
	f.mu.Lock()
	defer f.mu.Unlock()
	if db, ok := f.apps[i]; ok {
		return db
	}
	db, err := sql.Open("mysql", f.servers[i].DSN(appUser, appPassword)+appDatabase+"?timeout=1s")
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = db.Close() })
	f.apps[i] = db
	return db
}

// insert commits rows on server i, one transaction each.
func (f *fleet) insert(i int, ids ...int) {
	f.t.Helper()
	for _, id := range ids {
		if _, err := f.app(i).Exec("INSERT INTO orders (id, server) VALUES (?, ?)", id, i); err != nil {
			f.t.Fatalf("server %d: insert %d: %v", i, id, err)
		}
	}
}

// ids reads the ids of the orders on server i.
func (f *fleet) ids(i int) map[int]bool {
	f.t.Helper()
	ids, err := mysqltest.IDs(f.app(i))
	if err != nil {
		f.t.Fatalf("server %d: %v", i, err)
	}
	return ids
}

// missing returns the ids server i lacks, ascending.
func (f *fleet) missing(i int, ids []int) []int {
	f.t.Helper()
	have := f.ids(i)
	var out []int
	for _, id := range ids {
		if !have[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// waitReplicas waits until every instance in the report's replica role has applied the primary's executed set.
func (f *fleet) waitReplicas(primary int, except ...int) {
	f.t.Helper()
	ctx := context.Background()
	executed, err := f.admin[primary].ExecutedGTIDSet(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for i, admin := range f.admin {
		if i == primary || slices.Contains(except, i) {
			continue
		}
		if err := admin.WaitForGTID(ctx, executed, 60*time.Second); err != nil {
			f.t.Fatalf("server %d did not apply %s: %v\n%s", i, executed, err, f.describe())
		}
	}
}

func (f *fleet) status(i int) *mysql.Status {
	f.t.Helper()
	st, err := f.admin[i].Status(context.Background())
	if err != nil {
		f.t.Fatalf("server %d: %v", i, err)
	}
	return st
}

// describe is every server's replication state, for failure messages.
func (f *fleet) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "record %s\n", f.record())
	for i, a := range f.admin {
		st, err := a.Status(context.Background())
		if err != nil {
			fmt.Fprintf(&b, "server %d: %v\n", i, err)
			continue
		}
		fmt.Fprintf(&b, "server %d: role %s, read-only %t, executed %s, semi-sync %+v\n", i, st.Role, st.ReadOnly,
			st.Executed, *st.SemiSync)
		if r := st.Replica; r != nil {
			fmt.Fprintf(&b, "  replica of %s:%d io=%s sql=%t io error %d %q sql error %d %q received %s\n",
				r.SourceHost, r.SourcePort, r.IOState, r.SQLRunning, r.LastIOErrno, r.LastIOError, r.LastSQLErrno,
				r.LastSQLError, r.Received)
		}
	}
	return b.String()
}

// root runs a statement on server i as root over its socket: root holds READ_ONLY ADMIN and writes past
// read_only, as a human with too many privileges would.
func (f *fleet) root(i int, stmts ...string) {
	f.t.Helper()
	db, err := sql.Open("mysql", f.servers[i].RootDSN())
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			f.t.Fatalf("server %d: %s: %v", i, s, err)
		}
	}
}

// writer is the application of the tests (mysqltest.Writer) writing through the app pool of the server target
// names (-1 for none).
type writer struct {
	*mysqltest.Writer
	f *fleet
}

// startWriter starts a writer with ids from first; it stops when the test ends, at the latest.
func (f *fleet) startWriter(first int, target func() int) writer {
	return writer{f: f, Writer: mysqltest.StartWriter(f.t, first, func() (*sql.DB, int) {
		i := target()
		if i < 0 {
			return nil, i
		}
		return f.app(i), i
	})}
}

// waitAcks waits until the writer has n more acknowledgements than it had when called.
func (w writer) waitAcks(n int) {
	w.f.t.Helper()
	if err := w.WaitAcks(n, 60*time.Second); err != nil {
		w.f.t.Fatalf("%v\n%s", err, w.f.describe())
	}
}

// restart starts a killed server again on its data directory, port and socket, as the kubelet restarts a
// container. mysqltest has no restart; the options mirror the ones it starts servers with.
func restart(t *testing.T, s *mysqltest.Server) {
	t.Helper()
	bin := "/usr/sbin/mariadbd"
	if p, err := exec.LookPath("mariadbd"); err == nil {
		bin = p
	}
	dir := t.TempDir()
	args := []string{
		"--no-defaults",
		"--datadir=" + s.DataDir,
		"--tmpdir=" + dir,
		"--socket=" + s.Socket,
		"--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--log-error=" + filepath.Join(dir, "error.log"),
		"--server-id=" + strconv.FormatUint(uint64(s.ServerID), 10),
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=8M",
		"--performance-schema=OFF",
		"--max-connections=100",
	}
	for _, o := range (mysql.MariaDBFlavor{}).BootOptions() {
		args = append(args, "--"+o)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to restart server %d: %v", s.ServerID, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	db, err := sql.Open("mysql", s.RootDSN()+"?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for db.Ping() != nil {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("restarted server %d exited:\n%s", s.ServerID, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted server %d is not ready after 60s", s.ServerID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// partition is Ops that cannot reach the instances cut off, as a member controller on the other side of a
// network partition; the instances still reach each other and their clients.
type partition struct {
	clustering.Ops
	mu  sync.Mutex
	cut map[int]bool
}

var errPartitioned = errors.New("partitioned from the member controller")

func (p *partition) set(i int, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut[i] = cut
}

func (p *partition) check(is ...int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, i := range is {
		if p.cut[i] {
			return fmt.Errorf("instance %d: %w", i, errPartitioned)
		}
	}
	return nil
}

func (p *partition) Status(ctx context.Context, i int) (*mysql.Status, error) {
	if err := p.check(i); err != nil {
		return nil, err
	}
	return p.Ops.Status(ctx, i)
}

func (p *partition) Fence(ctx context.Context, i int) error {
	if err := p.check(i); err != nil {
		return err
	}
	return p.Ops.Fence(ctx, i)
}

func (p *partition) StopReplicaIO(ctx context.Context, i int) error {
	if err := p.check(i); err != nil {
		return err
	}
	return p.Ops.StopReplicaIO(ctx, i)
}

func (p *partition) Replicate(ctx context.Context, i int, a clustering.Address) error {
	if err := p.check(i); err != nil {
		return err
	}
	return p.Ops.Replicate(ctx, i, a)
}

func (p *partition) Promote(ctx context.Context, i int, s mysql.SemiSync) error {
	if err := p.check(i); err != nil {
		return err
	}
	return p.Ops.Promote(ctx, i, s)
}

func (p *partition) ConfigureSemiSync(ctx context.Context, i int, s mysql.SemiSync) error {
	if err := p.check(i); err != nil {
		return err
	}
	return p.Ops.ConfigureSemiSync(ctx, i, s)
}

func (p *partition) WaitForExecuted(ctx context.Context, i, of int, timeout time.Duration) error {
	if err := p.check(i, of); err != nil {
		return err
	}
	return p.Ops.WaitForExecuted(ctx, i, of, timeout)
}

// readsOnly is Ops that fails the test on anything but a status read: a steady member gets no writes.
type readsOnly struct {
	clustering.Ops
	t *testing.T
}

func (r readsOnly) write(what string) error {
	r.t.Errorf("a steady pass wrote: %s", what)
	return errors.New("no writes expected")
}

func (r readsOnly) Fence(_ context.Context, i int) error { return r.write(fmt.Sprint("fence ", i)) }
func (r readsOnly) StopReplicaIO(_ context.Context, i int) error {
	return r.write(fmt.Sprint("stop-replica-io ", i))
}
func (r readsOnly) Replicate(_ context.Context, i int, _ clustering.Address) error {
	return r.write(fmt.Sprint("replicate ", i))
}
func (r readsOnly) Promote(_ context.Context, i int, _ mysql.SemiSync) error {
	return r.write(fmt.Sprint("promote ", i))
}
func (r readsOnly) ConfigureSemiSync(_ context.Context, i int, _ mysql.SemiSync) error {
	return r.write(fmt.Sprint("configure-semi-sync ", i))
}
func (r readsOnly) WaitForExecuted(_ context.Context, i, _ int, _ time.Duration) error {
	return r.write(fmt.Sprint("wait ", i))
}
func (r readsOnly) SaveRecord(_ context.Context, rec clustering.Record) error {
	return r.write("save-record " + rec.String())
}

func ints(from, n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = from + k
	}
	return out
}

// hooked is Ops that runs beforeFence before each fence: a test's way to make something happen at that moment.
type hooked struct {
	clustering.Ops
	beforeFence  func(i int)
	afterPromote func(i int)
}

func (h hooked) Promote(ctx context.Context, i int, semi mysql.SemiSync) error {
	err := h.Ops.Promote(ctx, i, semi)
	if err == nil && h.afterPromote != nil {
		h.afterPromote(i)
	}
	return err
}

func (h hooked) Fence(ctx context.Context, i int) error {
	if h.beforeFence != nil {
		h.beforeFence(i)
	}
	return h.Ops.Fence(ctx, i)
}

// rootExec runs a statement on server i as root and returns its error; for goroutines, which must not fail
// the test.
func (f *fleet) rootExec(i int, stmt string) error {
	db, err := sql.Open("mysql", f.servers[i].RootDSN())
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	_, err = db.Exec(stmt)
	return err
}

// replicated returns the ids server i still lacks after waiting up to ten seconds for them. A replica's
// executed set (MariaDB's gtid_binlog_state) counts a transaction once it is in the binary log, a moment before
// the storage engine commits it, so a read right after WaitForGTID may miss the last row.
func (f *fleet) replicated(i int, ids []int) []int {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		missing := f.missing(i, ids)
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sameRows waits up to ten seconds for server i to hold exactly the rows of server j, and returns both sets.
func (f *fleet) sameRows(i, j int) (map[int]bool, map[int]bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, b := f.ids(i), f.ids(j)
		if maps.Equal(a, b) || time.Now().After(deadline) {
			return a, b
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dying is Ops of a member controller that dies when it reaches the action at (once armed): that call and every
// later one fail, as if the process had gone, until the test hands over to a standby.
type dying struct {
	clustering.Ops
	at    clustering.Action
	mu    sync.Mutex
	armed bool
	died  bool
}

var errDied = errors.New("the member controller died")

func (d *dying) arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = true
}

func (d *dying) dead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.died
}

func (d *dying) gate(a clustering.Action) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed && a == d.at {
		d.died = true
	}
	if d.died {
		return errDied
	}
	return nil
}

func (d *dying) Status(ctx context.Context, i int) (*mysql.Status, error) {
	if err := d.gate(""); err != nil {
		return nil, err
	}
	return d.Ops.Status(ctx, i)
}

func (d *dying) Fence(ctx context.Context, i int) error {
	if err := d.gate(clustering.ActionFence); err != nil {
		return err
	}
	return d.Ops.Fence(ctx, i)
}

func (d *dying) StopReplicaIO(ctx context.Context, i int) error {
	if err := d.gate(clustering.ActionStopReplicaIO); err != nil {
		return err
	}
	return d.Ops.StopReplicaIO(ctx, i)
}

func (d *dying) Replicate(ctx context.Context, i int, a clustering.Address) error {
	if err := d.gate(clustering.ActionReplicate); err != nil {
		return err
	}
	return d.Ops.Replicate(ctx, i, a)
}

func (d *dying) Promote(ctx context.Context, i int, s mysql.SemiSync) error {
	if err := d.gate(clustering.ActionPromote); err != nil {
		return err
	}
	return d.Ops.Promote(ctx, i, s)
}

func (d *dying) ConfigureSemiSync(ctx context.Context, i int, s mysql.SemiSync) error {
	if err := d.gate(clustering.ActionConfigureSemiSync); err != nil {
		return err
	}
	return d.Ops.ConfigureSemiSync(ctx, i, s)
}

func (d *dying) WaitForExecuted(ctx context.Context, i, of int, timeout time.Duration) error {
	if err := d.gate(clustering.ActionWaitForExecuted); err != nil {
		return err
	}
	return d.Ops.WaitForExecuted(ctx, i, of, timeout)
}

func (d *dying) SaveRecord(ctx context.Context, r clustering.Record) error {
	if err := d.gate(clustering.ActionSaveRecord); err != nil {
		return err
	}
	return d.Ops.SaveRecord(ctx, r)
}

// writable lists the instances that answer and are not read-only.
func (f *fleet) writable() []int {
	var out []int
	for i, a := range f.admin {
		if st, err := a.Status(context.Background()); err == nil && !st.ReadOnly {
			out = append(out, i)
		}
	}
	return out
}
