package archive_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// The archive is read from real mariadbd servers by the archiver's replication client, and checked by
// replaying it with the real mariadb-binlog into another real server.

func exec1(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func position(t *testing.T, db *sql.DB) string {
	t.Helper()
	var pos string
	if err := db.QueryRow("SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

// startArchiving runs an archiver of srv into store, from from when the store is empty, until the test ends or
// stop is called, which waits for it.
func startArchiving(t *testing.T, srv *mysqltest.Server, store backup.Store, id uint32, from string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &archive.Archiver{Store: store, ServerID: id, MaxAge: 300 * time.Millisecond, From: from,
		Source: archive.Source{Host: srv.Host, Port: srv.Port, User: "archiver", Password: "archiver-secret"},
		Log:    testLog{t}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("the archiver of %s:%d ended: %v", srv.Host, srv.Port, err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("archive: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// archiverAccount makes the replication account the archiver reads with, out of the binary log (SET STATEMENT:
// a pooled connection's session variables would outlive the statement).
var archiverAccount = []string{
	"SET STATEMENT sql_log_bin = 0 FOR CREATE USER archiver@'%' IDENTIFIED BY 'archiver-secret'",
	"SET STATEMENT sql_log_bin = 0 FOR GRANT REPLICATION SLAVE ON *.* TO archiver@'%'",
}

// waitArchived waits until the archive ends at pos.
func waitArchived(t *testing.T, store backup.Store, pos string) []archive.Segment {
	t.Helper()
	var segs []archive.Segment
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if segs, err = archive.List(context.Background(), store); err == nil && len(segs) > 0 && segs[len(segs)-1].End == pos {
			return segs
		}
	}
	end := "nothing"
	if len(segs) > 0 {
		end = segs[len(segs)-1].End
	}
	t.Fatalf("the archive ends at %s (%v), not at the server's %s", end, err, pos)
	return nil
}

// replay rolls dst forward from from with the whole archive, as a point-in-time recovery does.
func replay(t *testing.T, store backup.Store, from string, dst *mysqltest.Server) []archive.Segment {
	t.Helper()
	segs, err := archive.Replay(context.Background(), archive.ReplayOptions{Store: store, From: from,
		Client: client(dst), WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

func client(srv *mysqltest.Server) []string {
	return []string{"mariadb", "--no-defaults", "--socket=" + srv.Socket, "--user=root"}
}

func checksums(t *testing.T, db *sql.DB, tables ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tbl := range tables {
		var name string
		var sum sql.NullString
		if err := db.QueryRow("CHECKSUM TABLE "+tbl).Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		out[tbl] = sum.String
	}
	return out
}

func missing(t *testing.T, db *sql.DB, acked []int) []int {
	t.Helper()
	ids, err := mysqltest.IDs(db)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, id := range acked {
		if !ids[id] {
			out = append(out, id)
		}
	}
	return out
}

func openApp(t *testing.T, srv *mysqltest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", srv.RootDSN()+"app")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// A server written by several connections is archived in segments that follow each other by GTID position; a
// transaction written alone, with none after it, reaches the archive too (segments close on time, not on the
// next write); replayed with mariadb-binlog into an empty server, the archive gives every acknowledged write
// and the source's checksums. A segment deleted from the store is found as a gap, by position.
func TestArchiveIsContinuousAndReplays(t *testing.T) {
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	exec1(t, db, archiverAccount...)
	store := backup.DirStore{Dir: t.TempDir()}
	from := position(t, db)
	stop := startArchiving(t, src, store, 4000000001, from)

	exec1(t, db, "CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)",
		"CREATE TABLE app.notes (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT) ENGINE=Aria")
	app := openApp(t, src)
	var writers []*mysqltest.Writer
	for k := range 4 {
		writers = append(writers, mysqltest.StartWriter(t, 1+k*1_000_000, func() (*sql.DB, int) { return app, 1 }))
	}
	for _, w := range writers {
		if err := w.WaitAcks(300, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var acked []int
	for _, w := range writers {
		w.Stop()
		acked = append(acked, w.Acked()...)
	}
	waitArchived(t, store, position(t, db))

	// One transaction, and nothing after it.
	exec1(t, db, "INSERT INTO app.notes (note) VALUES ('alone')")
	segs := waitArchived(t, store, position(t, db))
	stop()
	if gaps := archive.Chain(segs, from); len(gaps) != 0 {
		t.Fatalf("gaps in a continuous archive: %v", gaps)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments: the archive was not cut by age", len(segs))
	}
	t.Logf("%d acknowledged writes archived in %d segments", len(acked), len(segs))

	dst := mysqltest.Start(t)
	if replayed := replay(t, store, from, dst); len(replayed) != len(segs) {
		t.Errorf("replayed %d segments of %d", len(replayed), len(segs))
	}
	dstDB := dst.OpenRoot()
	if m := missing(t, openApp(t, dst), acked); len(m) != 0 {
		t.Errorf("%d acknowledged writes missing from the replayed archive, first %d", len(m), m[0])
	}
	tables := []string{"app.orders", "app.notes"}
	if want, got := checksums(t, db, tables...), checksums(t, dstDB, tables...); !maps.Equal(got, want) {
		t.Errorf("the replayed archive holds %v, the source %v", got, want)
	}

	// The backups' retention, run in the same store long after, leaves the archive alone.
	if _, err := backup.Run(context.Background(), backup.Options{Store: store, Source: backup.Source{
		Flavor: mysql.MariaDBFlavor{}, Conn: mysql.DumpOptions{Socket: src.Socket, User: "root"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Prune(context.Background(), store, backup.PruneOptions{Keep: 1,
		Now: func() time.Time { return time.Now().Add(72 * time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	if kept, err := archive.List(context.Background(), store); err != nil || len(kept) != len(segs) {
		t.Fatalf("after a prune of the backups %d of %d segments are listed (%v)", len(kept), len(segs), err)
	}

	// A segment lost from the store: the archive is no longer continuous, and says between which segments.
	lost := segs[1]
	for _, key := range []string{lost.Object, archive.Prefix + lost.Name + ".segment.json"} {
		if err := store.Delete(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	left, err := archive.List(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	gaps := archive.Chain(left, from)
	if len(gaps) != 1 || gaps[0].After != segs[0].Name || gaps[0].Before != segs[2].Name ||
		gaps[0].From != segs[0].End || gaps[0].To != segs[2].Start || !gaps[0].Reached.Equal(segs[0].LastEventTime) {
		t.Errorf("with segment %s deleted the gaps are %v", lost.Name, gaps)
	}
}

// After a failover the archive goes on from the new primary, where the old one's archive ended: no gap, and the
// replay holds every write acknowledged by either primary.
func TestArchiveFollowsAFailover(t *testing.T) {
	old, next := primaryAndReplica(t)
	oldDB, nextDB := old.OpenRoot(), next.OpenRoot()
	store := backup.DirStore{Dir: t.TempDir()}
	from := position(t, oldDB)
	stop := startArchiving(t, old, store, 4000000002, from)

	exec1(t, oldDB, "CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)")
	oldApp := openApp(t, old)
	w := mysqltest.StartWriter(t, 1, func() (*sql.DB, int) { return oldApp, 1 })
	if err := w.WaitAcks(200, time.Minute); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	acked := w.Acked()
	waitArchived(t, store, position(t, oldDB))
	stop()

	// The failover: the replica, holding everything, becomes the primary and takes writes.
	promote(t, old, next)
	stop = startArchiving(t, next, store, 4000000003, "")
	nextApp := openApp(t, next)
	w = mysqltest.StartWriter(t, 1_000_000, func() (*sql.DB, int) { return nextApp, 2 })
	if err := w.WaitAcks(200, time.Minute); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	acked = append(acked, w.Acked()...)
	segs := waitArchived(t, store, position(t, nextDB))
	stop()
	checkAcrossPrimaries(t, store, from, segs, old, next, acked)
}

// primaryAndReplica starts two servers with the archiver's account, the second replicating from the first.
func primaryAndReplica(t *testing.T) (primary, replica *mysqltest.Server) {
	t.Helper()
	servers := mysqltest.StartN(t, 2)
	primary, replica = servers[0], servers[1]
	for _, srv := range servers {
		exec1(t, srv.OpenRoot(), archiverAccount...)
	}
	exec1(t, replica.OpenRoot(), fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%d, MASTER_USER='archiver', "+
		"MASTER_PASSWORD='archiver-secret', MASTER_USE_GTID=slave_pos", primary.Host, primary.Port), "START SLAVE")
	return primary, replica
}

// promote makes replica the primary once it holds everything old executed.
func promote(t *testing.T, old, replica *mysqltest.Server) {
	t.Helper()
	pos := position(t, old.OpenRoot())
	var waited int
	if err := replica.OpenRoot().QueryRow("SELECT MASTER_GTID_WAIT(?, 60)", pos).Scan(&waited); err != nil || waited != 0 {
		t.Fatalf("the replica did not reach %s: %d %v", pos, waited, err)
	}
	exec1(t, replica.OpenRoot(), "STOP SLAVE", "RESET SLAVE ALL")
}

// checkAcrossPrimaries checks an archive taken from old, then from next (its new primary): no gap from from,
// segments from both, and the archive replayed into an empty server holds every acknowledged write and what
// next holds.
func checkAcrossPrimaries(t *testing.T, store backup.Store, from string, segs []archive.Segment, old, next *mysqltest.Server, acked []int) {
	t.Helper()
	if gaps := archive.Chain(segs, from); len(gaps) != 0 {
		t.Fatalf("gaps across the change of primary: %v", gaps)
	}
	sources := map[uint32]bool{}
	for _, s := range segs {
		sources[s.SourceServerID] = true
	}
	if !sources[old.ServerID] || !sources[next.ServerID] {
		t.Errorf("segments from servers %v, want from both %d and %d", sources, old.ServerID, next.ServerID)
	}
	dst := mysqltest.Start(t)
	replay(t, store, from, dst)
	if m := missing(t, openApp(t, dst), acked); len(m) != 0 {
		t.Errorf("%d acknowledged writes missing from the replayed archive, first %d", len(m), m[0])
	}
	if want, got := checksums(t, next.OpenRoot(), "app.orders"), checksums(t, dst.OpenRoot(), "app.orders"); !maps.Equal(got, want) {
		t.Errorf("the replayed archive holds %v, the new primary %v", got, want)
	}
}

// A point-in-time recovery from a backup's position: to a GTID, exactly the transactions up to it; to a time,
// exactly those logged before it. A gap before the target refuses the replay; a target before the gap does not.
func TestPointInTimeReplay(t *testing.T) {
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	exec1(t, db, archiverAccount...)
	exec1(t, db, "CREATE DATABASE app", "CREATE TABLE app.events (id INT PRIMARY KEY, at BIGINT)")
	// The backup: the position of a server that holds the schema, as a restored backup would stand.
	base := position(t, db)
	store := backup.DirStore{Dir: t.TempDir()}
	stop := startArchiving(t, src, store, 4000000004, base)

	// Three writes, each in a second of its own by the server's clock, their GTIDs and seconds noted.
	var gtids []string
	var seconds []int64
	for id := 1; id <= 3; id++ {
		var now int64
		for {
			if err := db.QueryRow("SELECT UNIX_TIMESTAMP()").Scan(&now); err != nil {
				t.Fatal(err)
			}
			if len(seconds) == 0 || now >= seconds[len(seconds)-1]+2 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		exec1(t, db, fmt.Sprintf("INSERT INTO app.events VALUES (%d, UNIX_TIMESTAMP())", id))
		var at int64
		if err := db.QueryRow("SELECT at FROM app.events WHERE id = ?", id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		gtids, seconds = append(gtids, position(t, db)), append(seconds, at)
		// A segment per write: the gap below removes exactly the second one.
		waitArchived(t, store, gtids[len(gtids)-1])
	}
	// Three more at once, in one segment: a target inside it is where mariadb-binlog stops, not a segment's end.
	for id := 4; id <= 6; id++ {
		exec1(t, db, fmt.Sprintf("INSERT INTO app.events VALUES (%d, UNIX_TIMESTAMP())", id))
		gtids = append(gtids, position(t, db))
	}
	waitArchived(t, store, gtids[5])
	stop()
	segs, err := archive.List(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}

	restoredAt := func(o archive.ReplayOptions) ([]int, error) {
		dst := mysqltest.Start(t)
		dstDB := dst.OpenRoot()
		exec1(t, dstDB, "CREATE DATABASE app", "CREATE TABLE app.events (id INT PRIMARY KEY, at BIGINT)")
		// The restored server stands at the backup's position, as a restore sets it.
		exec1(t, dstDB, "SET GLOBAL gtid_slave_pos = '"+base+"'")
		o.Store, o.From, o.Client, o.WorkDir = store, base, client(dst), t.TempDir()
		if _, err := archive.Replay(context.Background(), o); err != nil {
			return nil, err
		}
		var ids []int
		rows, err := dstDB.Query("SELECT id FROM app.events ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	for name, tt := range map[string]struct {
		o    archive.ReplayOptions
		want []int
	}{
		"to the second write's GTID":      {o: archive.ReplayOptions{UntilGTID: gtids[1]}, want: []int{1, 2}},
		"to the first write's GTID":       {o: archive.ReplayOptions{UntilGTID: gtids[0]}, want: []int{1}},
		"to a time between the first two": {o: archive.ReplayOptions{UntilTime: time.Unix(seconds[0]+1, 0)}, want: []int{1}},
		"to a time between the last two":  {o: archive.ReplayOptions{UntilTime: time.Unix(seconds[2], 0)}, want: []int{1, 2}},
		"to the archive's end":            {want: []int{1, 2, 3, 4, 5, 6}},
		"to a GTID inside a segment":      {o: archive.ReplayOptions{UntilGTID: gtids[4]}, want: []int{1, 2, 3, 4, 5}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := restoredAt(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("restored %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := restoredAt(archive.ReplayOptions{UntilGTID: "0-1-999999"}); !errors.Is(err, archive.ErrBeyondArchive) {
		t.Errorf("a replay past the archive's end: %v, want %v", err, archive.ErrBeyondArchive)
	}

	// The segment with the second write is lost.
	var lost archive.Segment
	for _, s := range segs {
		if s.End == gtids[1] {
			lost = s
		}
	}
	if lost.Name == "" {
		t.Fatalf("no segment ends at the second write's %s: %+v", gtids[1], segs)
	}
	for _, key := range []string{lost.Object, archive.Prefix + lost.Name + ".segment.json"} {
		if err := store.Delete(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := restoredAt(archive.ReplayOptions{UntilGTID: gtids[2]}); !errors.Is(err, archive.ErrGap) {
		t.Errorf("a replay across the lost segment: %v, want %v", err, archive.ErrGap)
	}
	if got, err := restoredAt(archive.ReplayOptions{UntilGTID: gtids[0]}); err != nil || !slices.Equal(got, []int{1}) {
		t.Errorf("a replay to before the lost segment: %v, %v; want [1]", got, err)
	}
}
