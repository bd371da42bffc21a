package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// neverFallBack is semi-sync as the product runs it: one acknowledgement, no timeout.
var neverFallBack = mysql.SemiSync{WaitForReplicas: 1}

// pastDefaultTimeout is how long a test waits to show that a commit never falls back to asynchronous: longer
// than the engines' default semi-sync timeout, 10 s (rpl_semi_sync_master_timeout, rpl_semi_sync_source_timeout).
const pastDefaultTimeout = 12 * time.Second

func TestPrimaryAndTwoReplicasReplicateRows(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, neverFallBack)
	ctx := context.Background()

	primary := c.status(0)
	if primary.Role != mysql.RolePrimary || primary.ReadOnly || primary.Replica != nil {
		t.Fatalf("server 0 is not a writable primary: %+v", primary)
	}
	if !primary.SemiSync.SourceEnabled || primary.SemiSync.WaitPoint != "AFTER_SYNC" ||
		primary.SemiSync.WaitForReplicaCount != 1 || !primary.SemiSync.WaitNoReplica || !primary.SemiSync.SourceActive {
		t.Fatalf("semi-sync on the primary: %+v", primary.SemiSync)
	}
	for i := 1; i < 3; i++ {
		st := c.status(i)
		if st.Role != mysql.RoleReplica || !st.ReadOnly || st.Replica == nil {
			t.Fatalf("server %d is not a read-only replica:\n%s", i, c.describe(i))
		}
		if st.Replica.SourcePort != c.servers[0].Port || !st.SemiSync.ReplicaEnabled {
			t.Fatalf("server %d replicates from port %d (semi-sync %t), want %d", i, st.Replica.SourcePort,
				st.SemiSync.ReplicaEnabled, c.servers[0].Port)
		}
	}
	c.eventually("both replicas connected as semi-sync replicas", func() bool {
		return c.status(0).SemiSync.Replicas == 2
	})

	c.insertRows(0, 1, 50)
	c.waitReplicas(0)
	want := c.content(0)
	if !strings.HasPrefix(want, "50 rows") {
		t.Fatalf("primary holds %s, want 50 rows", want)
	}
	executed, err := c.admin[0].ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if got := c.content(i); got != want {
			t.Errorf("replica %d holds %s, primary %s", i, got, want)
		}
		st := c.status(i)
		if !st.Replica.Running() || st.Replica.LastIOErrno != 0 || st.Replica.LastSQLErrno != 0 {
			t.Errorf("replica %d is not replicating cleanly:\n%s", i, c.describe(i))
		}
		if st.Replica.Lag == nil || *st.Replica.Lag != 0 {
			t.Errorf("replica %d lag %v after catching up", i, st.Replica.Lag)
		}
		if !st.Executed.Contains(executed) || !st.Replica.Received.Contains(executed) {
			t.Errorf("replica %d executed %s received %s, primary %s", i, st.Executed, st.Replica.Received, executed)
		}
		if errant := mysql.ErrantTransactions(st.Executed, executed, primary.SourceID); !errant.IsEmpty() {
			t.Errorf("replica %d has errant transactions %s", i, errant)
		}
	}
	if async := c.status(0).SemiSync.AsyncCommits; async != 0 {
		t.Errorf("%d commits went without an acknowledgement", async)
	}
}

func TestSemiSyncCommitWaitsForAnAcknowledgementAndNeverFallsBack(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, neverFallBack)
	ctx := context.Background()
	c.eventually("both replicas connected as semi-sync replicas", func() bool {
		return c.status(0).SemiSync.Replicas == 2
	})
	for i := 1; i < 3; i++ {
		if err := c.admin[i].StopReplica(ctx); err != nil {
			t.Fatal(err)
		}
	}

	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	app := c.app(0)
	start := time.Now()
	go func() {
		_, err := app.Exec("INSERT INTO orders VALUES (1, 'waits for an ack', 0)")
		done <- result{err, time.Since(start)}
	}()

	// No acknowledgement can come. Past the engines' default timeout (10 s), which a setting that did not take
	// would leave in force: a shorter wait could not tell "never" from "after 10 s". It costs the test 12 s.
	select {
	case r := <-done:
		t.Fatalf("the commit returned after %s (error %v) with no replica to acknowledge it", r.took, r.err)
	case <-time.After(pastDefaultTimeout):
	}
	st := c.status(0)
	if st.SemiSync.WaitingSessions != 1 || !st.SemiSync.SourceActive || st.SemiSync.AsyncCommits != 0 {
		t.Fatalf("primary semi-sync while the commit waits: %+v", st.SemiSync)
	}
	// AFTER_SYNC: the transaction is in the binary log but not committed for anyone else yet.
	var visible int
	if err := c.app(0).QueryRow("SELECT COUNT(*) FROM orders WHERE id = 1").Scan(&visible); err != nil {
		t.Fatal(err)
	}
	if visible != 0 {
		t.Fatal("another session sees the unacknowledged row: the wait point is not AFTER_SYNC")
	}

	if err := c.admin[1].StartReplica(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("the commit failed once a replica acknowledged it: %v", r.err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("the commit still waits after replica 1 came back:\n%s", c.describe(1))
	}
	st = c.status(0)
	if st.SemiSync.AsyncCommits != 0 || !st.SemiSync.SourceActive {
		t.Fatalf("the primary fell back to asynchronous replication: %+v", st.SemiSync)
	}
	executed, err := c.admin[0].ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.admin[1].WaitForGTID(ctx, executed, waitTimeout); err != nil {
		t.Fatal(err)
	}
	// The executed set counts a transaction once it is in the replica's binary log, a moment before InnoDB
	// commits it: a read right after the wait can miss the row (it did in CI), so the read is retried a while.
	got := c.content(1)
	for deadline := time.Now().Add(10 * time.Second); !strings.HasPrefix(got, "1 rows") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		got = c.content(1)
	}
	if !strings.HasPrefix(got, "1 rows") {
		t.Fatalf("replica 1 holds %s, want the acknowledged row", got)
	}
}

// TestFallenBackSourceIsReArmed lets a commit wait out a short timeout with the only replica stopped: it
// returns without an acknowledgement, counted, and leaves the source asynchronous (enabled, not active), as
// MySQL's longest timeout (49.7 days) would. Setting the product's settings again does not bring semi-sync
// back while no replica catches up; ConfigureSemiSync re-arms it, and the next commit waits again.
func TestFallenBackSourceIsReArmed(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, mysql.SemiSync{WaitForReplicas: 1, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	if err := c.admin[1].StopReplica(ctx); err != nil {
		t.Fatal(err)
	}
	c.exec(0, "INSERT INTO orders VALUES (1, 'falls back', 0)")
	st := c.status(0).SemiSync
	if !st.SourceEnabled || st.SourceActive || st.AsyncCommits != 1 {
		t.Fatalf("after a commit waited out the timeout: %+v", st)
	}

	root := mysql.NewDB(c.servers[0].OpenRoot())
	if err := flavor.ConfigureSemiSyncSource(ctx, root, neverFallBack); err != nil {
		t.Fatal(err)
	}
	if st := c.status(0).SemiSync; st.SourceActive || st.Timeout < 49*24*time.Hour {
		t.Fatalf("the settings alone re-armed the source, or were not set: %+v", st)
	}
	if err := c.admin[0].ConfigureSemiSync(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	if st := c.status(0).SemiSync; !st.SourceActive || st.AsyncCommits != 1 {
		t.Fatalf("ConfigureSemiSync did not re-arm the source: %+v", st)
	}

	done := make(chan error, 1)
	go func() {
		_, err := c.app(0).Exec("INSERT INTO orders VALUES (2, 'waits again', 0)")
		done <- err
	}()
	c.eventually("the next commit to wait for an acknowledgement", func() bool {
		return c.status(0).SemiSync.WaitingSessions == 1
	})
	if err := c.admin[1].StartReplica(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("the commit still waits after the replica came back:\n%s", c.describe(1))
	}
	if st := c.status(0).SemiSync; st.AsyncCommits != 1 || !st.SourceActive {
		t.Fatalf("after the replica acknowledged: %+v", st)
	}
}

func TestErrantWriteOnAReplica(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, neverFallBack)
	ctx := context.Background()
	primaryID := c.status(0).SourceID

	// Read the primary, then let it go on: a replica read afterwards holds transactions the primary's old set
	// lacks, all the primary's own. Not errant.
	before, err := c.admin[0].ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.insertRows(0, 1, 3)
	c.waitReplicas(0)
	replica1, err := c.admin[1].ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if replica1.Subtract(before).IsEmpty() {
		t.Fatalf("replica 1 (%s) holds nothing beyond the primary's earlier set (%s)", replica1, before)
	}
	if errant := mysql.ErrantTransactions(replica1, before, primaryID); !errant.IsEmpty() {
		t.Fatalf("the primary's own newer transactions count as errant: %s", errant)
	}

	// A write made directly on replica 2.
	if err := c.admin[2].SetReadOnly(ctx, false); err != nil {
		t.Fatal(err)
	}
	c.exec(2, "INSERT INTO orders VALUES (100, 'written on a replica', 0)")
	if err := c.admin[2].SetReadOnly(ctx, true); err != nil {
		t.Fatal(err)
	}
	primary, err := c.admin[0].ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replica2 := c.status(2)
	errant := mysql.ErrantTransactions(replica2.Executed, primary, primaryID)
	if want := fmt.Sprintf("0-%d-", replica2.ServerID); !strings.HasPrefix(errant.String(), want) ||
		strings.Contains(errant.String(), ",") {
		t.Fatalf("errant transactions of replica 2: %q, want its one write (%s...)", errant, want)
	}
	if mysql.IsErrant(replica1, primary, primaryID) {
		t.Fatal("replica 1 counts as errant")
	}

	// Why it matters: the next write on the primary breaks replica 2 (GTID strict mode), and it stays errant
	// however far the primary goes.
	c.insertRows(0, 4, 1)
	c.eventually("replica 2 to stop on the diverged history", func() bool {
		r := c.status(2).Replica
		return r != nil && r.LastSQLErrno != 0
	})
	primary, err = c.admin[0].ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !mysql.IsErrant(c.status(2).Executed, primary, primaryID) {
		t.Fatal("replica 2 no longer counts as errant once the primary moved past it")
	}
}

// TestFencingAPrimaryNoReplicaAcknowledges is the failover case: the primary's replicas are gone (here,
// stopped) while a client commits. read_only cannot be set while that commit waits; ending the connections
// releases it, and the commit stays in the old primary's binary log, in doubt, which makes the old primary
// errant against the replica that takes over.
func TestFencingAPrimaryNoReplicaAcknowledges(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, neverFallBack)
	ctx := context.Background()
	if err := c.admin[1].StopReplica(ctx); err != nil {
		t.Fatal(err)
	}
	app := c.app(0)
	done := make(chan error, 1)
	go func() {
		_, err := app.Exec("INSERT INTO orders VALUES (1, 'in doubt', 0)")
		done <- err
	}()
	c.eventually("the commit to wait for an acknowledgement", func() bool {
		return c.status(0).SemiSync.WaitingSessions == 1
	})

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.admin[0].SetReadOnly(short, true); err == nil {
		t.Fatal("read_only was set while a commit waited for an acknowledgement")
	}
	if killed, err := c.admin[0].KillConnections(ctx); err != nil || killed < 1 {
		t.Fatalf("KillConnections: %d, %v", killed, err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the client was told its unacknowledged commit succeeded")
		}
	case <-time.After(waitTimeout):
		t.Fatal("the waiting commit outlived its connection")
	}
	if err := c.admin[0].SetReadOnly(ctx, true); err != nil {
		t.Fatal(err)
	}

	old, replica := c.status(0), c.status(1)
	errant := mysql.ErrantTransactions(old.Executed, replica.Executed, replica.SourceID)
	if want := fmt.Sprintf("0-%d-", old.ServerID); !strings.HasPrefix(errant.String(), want) {
		t.Fatalf("the old primary's in-doubt commit: errant %q, want one of server %d", errant, old.ServerID)
	}
}

func TestReadOnlyStopsTheApplicationUser(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, neverFallBack)
	ctx := context.Background()

	_, err := c.app(1).Exec("INSERT INTO orders VALUES (1, 'on a replica', 0)")
	if !mysql.IsReadOnlyError(err) {
		t.Fatalf("the application user wrote on a read-only replica (error %v)", err)
	}
	c.insertRows(0, 1, 1)

	if err := c.admin[0].SetReadOnly(ctx, true); err != nil {
		t.Fatal(err)
	}
	if st := c.status(0); !st.ReadOnly || st.Role != mysql.RoleNone {
		t.Fatalf("after SetReadOnly: read-only %t, role %s", st.ReadOnly, st.Role)
	}
	_, err = c.app(0).Exec("INSERT INTO orders VALUES (2, 'on a fenced primary', 0)")
	if !mysql.IsReadOnlyError(err) {
		t.Fatalf("the application user wrote on a read-only primary (error %v)", err)
	}
	err = c.admin[0].EnsureUser(ctx, mysql.User{Kind: mysql.ApplicationUser, Name: "other", Password: "pw",
		Database: "other"})
	if !errors.Is(err, mysql.ErrReadOnly) {
		t.Fatalf("EnsureUser on a read-only server: %v, want ErrReadOnly", err)
	}
	if err := c.admin[0].SetReadOnly(ctx, false); err != nil {
		t.Fatal(err)
	}
	c.insertRows(0, 2, 1)

	// MariaDB has no super_read_only; read_only holds because the application user has no privilege that
	// passes it.
	rows, err := c.app(0).Query("SHOW GRANTS")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var grants []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			t.Fatal(err)
		}
		grants = append(grants, g)
	}
	if len(grants) == 0 {
		t.Fatal("SHOW GRANTS returned nothing")
	}
	for _, g := range grants {
		if strings.Contains(g, "ON *.*") && !strings.HasPrefix(g, "GRANT USAGE ON *.*") {
			t.Errorf("the application user holds a global privilege: %s", g)
		}
		for _, p := range []string{"SUPER", "READ_ONLY ADMIN", "CONNECTION ADMIN"} {
			if strings.Contains(g, p) {
				t.Errorf("the application user holds %s: %s", p, g)
			}
		}
	}
}

func TestSwitchoverFencesThePrimaryAndReattachesIt(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, neverFallBack)
	ctx := context.Background()
	c.insertRows(0, 1, 20)

	// A client in the middle of a transaction on the old primary.
	conn, err := c.app(0).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES (1000, 'in flight at switchover', 0)"); err != nil {
		t.Fatal(err)
	}

	c.switchover(0, 1)
	if err := tx.Commit(); err == nil {
		t.Fatal("a transaction of a killed connection committed")
	}
	c.insertRows(1, 21, 20)
	c.waitReplicas(1)
	c.expectFollowers(1, "40 rows")

	// And back: server 1 now re-attaches with the position it had as a replica of 0, older than its own
	// writes as primary.
	c.switchover(1, 0)
	c.insertRows(0, 41, 20)
	c.waitReplicas(0)
	c.expectFollowers(0, "60 rows")
}

// switchover moves the primary from one server to another as the member controller will: fence the old
// primary (read-only, end its clients), wait until the candidate holds everything it has, check the old
// primary can follow the candidate, promote the candidate and point every other server at it.
func (c *cluster) switchover(from, to int) {
	c.t.Helper()
	ctx := context.Background()
	if err := c.admin[from].SetReadOnly(ctx, true); err != nil {
		c.t.Fatal(err)
	}
	killed, err := c.admin[from].KillConnections(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	if killed < 1 {
		c.t.Fatalf("KillConnections ended %d connections, want the clients'", killed)
	}
	// Replication connections survive the kill.
	for i := range c.servers {
		if r := c.status(i).Replica; i != from && !r.Running() {
			c.t.Fatalf("server %d stopped replicating after KillConnections:\n%s", i, c.describe(i))
		}
	}
	old, err := c.admin[from].ExecutedGTIDSet(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.admin[to].WaitForGTID(ctx, old, waitTimeout); err != nil {
		c.t.Fatal(err)
	}
	candidate := c.status(to)
	if errant := mysql.ErrantTransactions(old, candidate.Executed, candidate.SourceID); !errant.IsEmpty() {
		c.t.Fatalf("the old primary has transactions the candidate lacks: %s", errant)
	}
	if err := c.admin[to].Promote(ctx, neverFallBack); err != nil {
		c.t.Fatal(err)
	}
	for i := range c.servers {
		if i == to {
			continue
		}
		if err := c.admin[i].StartReplicaOf(ctx, c.source(to)); err != nil {
			c.t.Fatalf("failed to point server %d at the new primary: %v", i, err)
		}
	}
}

// expectFollowers checks that primary holds want and every other server the same rows, replicating from it
// without errors.
func (c *cluster) expectFollowers(primary int, want string) {
	c.t.Helper()
	content := c.content(primary)
	if !strings.HasPrefix(content, want) {
		c.t.Fatalf("primary %d holds %s, want %s", primary, content, want)
	}
	if st := c.status(primary); st.Role != mysql.RolePrimary || st.Replica != nil {
		c.t.Errorf("server %d after promotion: role %s, replica %+v", primary, st.Role, st.Replica)
	}
	for i := range c.servers {
		if i == primary {
			continue
		}
		if got := c.content(i); got != content {
			c.t.Errorf("server %d holds %s, primary %s", i, got, content)
		}
		st := c.status(i)
		if st.Role != mysql.RoleReplica || st.Replica.SourcePort != c.servers[primary].Port ||
			!st.Replica.Running() || st.Replica.LastSQLErrno != 0 {
			c.t.Errorf("server %d does not follow the primary cleanly:\n%s", i, c.describe(i))
		}
	}
}

func TestSeedAReplicaFromADump(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, neverFallBack)
	ctx := context.Background()
	c.insertRows(0, 1, 30)

	// An empty server, as a new Pod or one whose volume was lost: only its own admin user, made at init.
	fresh := mysqltest.Start(t)
	root, err := mysql.Open(flavor, fresh.RootDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	if err := root.EnsureUserUnlogged(ctx, mysql.User{Kind: mysql.AdminUser, Name: adminUser,
		Password: adminPassword}); err != nil {
		t.Fatal(err)
	}

	// Dump from the replica, as the admin user over the network, while the primary takes writes; restore into
	// the fresh server as its root over the socket, as the new Pod would.
	defaults := filepath.Join(t.TempDir(), "client.cnf")
	escaped := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(adminPassword)
	if err := os.WriteFile(defaults, []byte("[client]\npassword=\""+escaped+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	from := mysql.DumpOptions{DefaultsFile: defaults, Host: c.servers[1].Host, Port: c.servers[1].Port, User: adminUser}
	to := mysql.DumpOptions{Socket: fresh.Socket, User: "root"}
	dumpArgs, restoreArgs := flavor.DumpCommand(from), flavor.RestoreCommand(to)
	dump := exec.Command(dumpArgs[0], dumpArgs[1:]...)
	restore := exec.Command(restoreArgs[0], restoreArgs[1:]...)
	var dumpErr, restoreOut strings.Builder
	dump.Stderr = &dumpErr
	restore.Stdout, restore.Stderr = &restoreOut, &restoreOut
	pipe, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	restore.Stdin = pipe
	writes := make(chan struct{})
	db := c.app(0)
	go func() {
		defer close(writes)
		for id := 31; id <= 60; id++ {
			if _, err := db.Exec("INSERT INTO orders VALUES (?, 'during the dump', 0)", id); err != nil {
				t.Errorf("insert during the dump: %v", err)
				return
			}
		}
	}()
	if err := restore.Start(); err != nil {
		t.Fatal(err)
	}
	if err := dump.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", dumpArgs, err, dumpErr.String())
	}
	if err := restore.Wait(); err != nil {
		t.Fatalf("%v: %v\n%s", restoreArgs, err, restoreOut.String())
	}
	<-writes

	seed, err := mysql.Open(flavor, fresh.DSN(adminUser, adminPassword))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = seed.Close() }()
	st, err := seed.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Executed.IsEmpty() {
		t.Fatal("the restored server has no GTID position: the dump did not carry one")
	}
	if err := seed.StartReplicaOf(ctx, c.source(0)); err != nil {
		t.Fatal(err)
	}
	c.insertRows(0, 61, 10)
	primary := c.status(0)
	if err := seed.WaitForGTID(ctx, primary.Executed, waitTimeout); err != nil {
		t.Fatal(err)
	}
	var count int
	var sum sql.NullString
	seeded, err := sql.Open("mysql", fresh.DSN(appUser, appPassword)+appDatabase)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = seeded.Close() }()
	if err := seeded.QueryRow("SELECT COUNT(*), SUM(CRC32(CONCAT_WS(',', id, item, server))) FROM orders").
		Scan(&count, &sum); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%d rows, checksum %s", count, sum.String), c.content(0); got != want {
		t.Fatalf("the seeded replica holds %s, the primary %s", got, want)
	}
	st, err = seed.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Replica.Running() || st.Replica.LastSQLErrno != 0 {
		t.Fatalf("the seeded replica does not replicate cleanly: %+v", st.Replica)
	}
	if errant := mysql.ErrantTransactions(st.Executed, primary.Executed, primary.SourceID); !errant.IsEmpty() {
		t.Fatalf("the seeded replica has errant transactions: %s", errant)
	}
}
