package archive_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// A Keeper is run as the member controller runs it, against real servers and a real store.

func sourceOf(srv *mysqltest.Server) *archive.Source {
	return &archive.Source{Host: srv.Host, Port: srv.Port, User: "archiver", Password: "archiver-secret"}
}

func addr(srv *mysqltest.Server) string { return fmt.Sprintf("%s:%d", srv.Host, srv.Port) }

// runKeeper runs k until the test ends or stop is called, which waits for it.
func runKeeper(t *testing.T, k *archive.Keeper) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitStatus waits until k's status is as ok wants it, for at most a minute.
func waitStatus(t *testing.T, k *archive.Keeper, what string, ok func(archive.Status) bool) archive.Status {
	t.Helper()
	var st archive.Status
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st = k.Status(); ok(st) {
			return st
		}
	}
	t.Fatalf("%s: the status stays %s", what, show(st))
	return st
}

// countingLog keeps the lines written to it.
type countingLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *countingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// count is how many lines hold s.
func (l *countingLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// waitFor waits until ok, for at most a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after a minute", what)
		}
	}
}

func show(st archive.Status) string {
	b, err := json.Marshal(st)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// clock moves only when it is set.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d and returns the new time.
func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// archiveObjects counts the objects under the archive's prefix, manifests or not.
func archiveObjects(t *testing.T, store backup.Store) int {
	t.Helper()
	objs, err := store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if strings.HasPrefix(o.Key, archive.Prefix) {
			n++
		}
	}
	return n
}

// A planned change of primary: the Keeper archives the primary while it takes writes, is pointed at the replica
// once that holds everything and has become the primary, and goes on there with no gap; the replay holds every
// write either primary acknowledged. Status.Source follows, and pointing it at the same server again does not
// restart the stream.
func TestKeeperFollowsAPlannedSwitchover(t *testing.T) {
	old, next := primaryAndReplica(t)
	oldDB, nextDB := old.OpenRoot(), next.OpenRoot()
	from := position(t, oldDB)
	store := backup.DirStore{Dir: t.TempDir()}
	k := &archive.Keeper{Store: store, ServerID: 4000000011, MaxAge: 300 * time.Millisecond,
		Retry: 100 * time.Millisecond, Log: testLog{t}}
	k.SetSource(sourceOf(old))
	runKeeper(t, k)
	waitStatus(t, k, "reading the primary", func(st archive.Status) bool { return st.Streaming && st.Source == addr(old) })

	exec1(t, oldDB, "CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)")
	write := func(srv *mysqltest.Server, where int) []int {
		app := openApp(t, srv)
		var writers []*mysqltest.Writer
		for n := range 2 {
			writers = append(writers, mysqltest.StartWriter(t, where*1_000_000+n*100_000, func() (*sql.DB, int) { return app, where }))
		}
		var acked []int
		for _, w := range writers {
			if err := w.WaitAcks(150, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range writers {
			w.Stop()
			acked = append(acked, w.Acked()...)
		}
		return acked
	}
	acked := write(old, 1)

	// The switchover: the replica reaches the primary's position and becomes the primary.
	promote(t, old, next)
	k.SetSource(sourceOf(next))
	st := waitStatus(t, k, "reading the new primary", func(st archive.Status) bool {
		return st.Streaming && st.Source == addr(next)
	})
	k.SetSource(sourceOf(next)) // the same server, as each pass of the controller says it
	acked = append(acked, write(next, 2)...)
	segs := waitArchived(t, store, position(t, nextDB))

	if after := k.Status(); !after.Streaming || !after.Since.Equal(st.Since) || after.Source != addr(next) {
		t.Errorf("the stream from the new primary began at %s; the status is now %s", st.Since, show(after))
	}
	checkAcrossPrimaries(t, store, from, segs, old, next, acked)
}

// ArchivedThrough, by the Keeper's clock: while nothing is pending it follows the clock as the stream delivers
// (the server's heartbeats); from a transaction's arrival it stays there while the segment holding it is open
// (MaxAge 1 h), however the clock moves; once the segment is stored it follows the clock again.
func TestKeeperArchivedThroughFollowsTheStream(t *testing.T) {
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	exec1(t, db, archiverAccount...)
	store := backup.DirStore{Dir: t.TempDir()}
	clk := newClock()
	k := &archive.Keeper{Store: store, ServerID: 4000000012, MaxAge: time.Hour, MaxSize: 1 << 30, Now: clk.Now,
		Log: testLog{t}}
	if st := k.Status(); st.Streaming || !st.ArchivedThrough.IsZero() || st.Source != "" || st.Latest != nil {
		t.Fatalf("the status of a Keeper not run: %s", show(st))
	}
	k.SetSource(sourceOf(src))
	runKeeper(t, k)
	t1 := clk.Now()
	waitStatus(t, k, "streaming", func(st archive.Status) bool {
		return st.Streaming && st.Since.Equal(t1) && st.ArchivedThrough.Equal(t1) && st.Error == ""
	})
	t2 := clk.Add(time.Minute)
	waitStatus(t, k, "idle, following the clock", func(st archive.Status) bool { return st.ArchivedThrough.Equal(t2) })

	// One transaction, at t3 by the Keeper's clock.
	t3 := clk.Add(time.Minute)
	exec1(t, db, "CREATE DATABASE app")
	pos := position(t, db)
	time.Sleep(time.Second) // for it to arrive: milliseconds, here
	clk.Add(time.Minute)
	time.Sleep(3 * time.Second) // three of the server's heartbeats, each of which an idle stream would follow
	st := k.Status()
	if !st.Streaming || !st.ArchivedThrough.Equal(t3) {
		t.Errorf("with a transaction pending since %s: %s", t3, show(st))
	}
	if segs, err := archive.List(context.Background(), store); err != nil || len(segs) != 0 {
		t.Fatalf("a segment closed before its age: %v %v", segs, err)
	}

	// The segment is due: stored, and nothing is pending any more.
	t4 := clk.Add(2 * time.Hour)
	st = waitStatus(t, k, "the segment stored", func(st archive.Status) bool {
		return st.Latest != nil && st.Latest.End == pos && st.ArchivedThrough.Equal(t4)
	})
	if !st.Latest.ClosedTime.Equal(t4) || !st.Streaming || !st.Since.Equal(t1) {
		t.Errorf("after the segment was stored: %s", show(st))
	}
}

// ArchivedThrough stays where the stream was last heard from, however the clock moves: while a server that stopped
// answering sends no heartbeat, and after its stream ends. Without a source, or with one that cannot be reached,
// nothing streams and Error says why. A failed start is tried again after Retry, or at once when the source
// changes: then it streams again.
func TestKeeperWithoutAReachableSource(t *testing.T) {
	src := mysqltest.Start(t)
	exec1(t, src.OpenRoot(), archiverAccount...)
	clk := newClock()
	var log countingLog
	k := &archive.Keeper{Store: backup.DirStore{Dir: t.TempDir()}, ServerID: 4000000013, Retry: time.Hour,
		Now: clk.Now, Log: io.MultiWriter(testLog{t}, &log)}
	runKeeper(t, k)
	waitStatus(t, k, "no source yet", func(st archive.Status) bool {
		return !st.Streaming && st.Error != "" && st.Source == "" && st.ArchivedThrough.IsZero()
	})
	k.SetSource(sourceOf(src))
	t1 := clk.Now()
	waitStatus(t, k, "streaming", func(st archive.Status) bool { return st.Streaming && st.ArchivedThrough.Equal(t1) })

	// The server stops answering (SIGSTOP): the stream is open still, and silent.
	src.Freeze()
	time.Sleep(100 * time.Millisecond) // for a heartbeat sent before to arrive
	t2 := clk.Add(time.Minute)
	time.Sleep(2 * time.Second) // two heartbeat periods
	if st := k.Status(); !st.Streaming || !st.ArchivedThrough.Equal(t1) {
		t.Errorf("a silent stream, last heard at %s, at %s: %s", t1, t2, show(st))
	}
	k.SetSource(nil)
	st := waitStatus(t, k, "no source", func(st archive.Status) bool {
		return !st.Streaming && st.Error != "" && st.Source == ""
	})
	src.Thaw()
	if !st.ArchivedThrough.Equal(t1) || !st.Since.Equal(t2) {
		t.Errorf("stopped at %s, last heard at %s: %s", t2, t1, show(st))
	}

	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	k.SetSource(&archive.Source{Host: "127.0.0.1", Port: closed, User: "archiver", Password: "archiver-secret"})
	clk.Add(time.Minute)
	st = waitStatus(t, k, "an unreachable source", func(st archive.Status) bool {
		return st.Source == fmt.Sprintf("127.0.0.1:%d", closed) && strings.Contains(st.Error, "connection refused")
	})
	if st.Streaming || !st.ArchivedThrough.Equal(t1) {
		t.Errorf("with an unreachable source: %s", show(st))
	}
	time.Sleep(300 * time.Millisecond)
	if n := log.count("stopped, again in 1h0m0s"); n != 1 {
		t.Errorf("%d failed starts within an hour's Retry", n)
	}

	k.SetSource(sourceOf(src))
	t3 := clk.Add(time.Minute)
	waitStatus(t, k, "streaming again", func(st archive.Status) bool {
		return st.Streaming && st.Error == "" && st.ArchivedThrough.Equal(t3) && st.Source == addr(src)
	})
}

// A segment deleted from the store is reported between its neighbours at the next gap check, while the stream
// runs on.
func TestKeeperReportsADeletedSegment(t *testing.T) {
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	exec1(t, db, archiverAccount...)
	store := backup.DirStore{Dir: t.TempDir()}
	k := &archive.Keeper{Store: store, ServerID: 4000000014, MaxAge: 200 * time.Millisecond,
		GapCheck: 200 * time.Millisecond, Log: testLog{t}}
	k.SetSource(sourceOf(src))
	runKeeper(t, k)
	var segs []archive.Segment
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)"} {
		exec1(t, db, q)
		segs = waitArchived(t, store, position(t, db))
	}
	if len(segs) != 3 {
		t.Fatalf("%d segments, want one per transaction", len(segs))
	}
	st := waitStatus(t, k, "the last segment stored", func(st archive.Status) bool {
		return st.Latest != nil && st.Latest.Name == segs[2].Name
	})
	if len(st.Gaps) != 0 {
		t.Fatalf("gaps in a continuous archive: %s", show(st))
	}
	since := st.Since

	lost := segs[1]
	for _, key := range []string{archive.Prefix + lost.Name + ".segment.json", lost.Object} {
		if err := store.Delete(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	want := archive.Gap{After: segs[0].Name, Before: segs[2].Name, From: segs[0].End, To: segs[2].Start, Reached: segs[0].LastEventTime}
	st = waitStatus(t, k, "the lost segment found", func(st archive.Status) bool {
		return len(st.Gaps) == 1 && st.Gaps[0] == want
	})
	if !st.Streaming || !st.Since.Equal(since) {
		t.Errorf("the stream restarted: %s", show(st))
	}
}

// A Guard that refuses stops the archive's writes: nothing more is stored, the Keeper tries again and again,
// Error says why, and ArchivedThrough stays at the refused transaction's arrival (each new stream reads it
// again, later). Once the Guard allows it, the archive goes on with no gap.
func TestKeeperStoresNothingItsGuardRefuses(t *testing.T) {
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	exec1(t, db, archiverAccount...)
	store := backup.DirStore{Dir: t.TempDir()}
	lapsed := errors.New("the leader lease lapsed")
	var refuse atomic.Bool
	var calls, refused atomic.Int64
	clk := newClock()
	// Every transaction is a segment of its own (MaxSize 1), stored as soon as it arrived.
	k := &archive.Keeper{Store: store, ServerID: 4000000015, MaxAge: time.Hour, MaxSize: 1, Retry: 50 * time.Millisecond,
		Now: clk.Now, Log: testLog{t}, Guard: func() error {
			calls.Add(1)
			if refuse.Load() {
				refused.Add(1)
				return lapsed
			}
			return nil
		}}
	k.SetSource(sourceOf(src))
	runKeeper(t, k)
	exec1(t, db, "CREATE DATABASE app")
	if segs := waitArchived(t, store, position(t, db)); calls.Load() != int64(2*len(segs)) {
		t.Fatalf("Guard called %d times for %d segments and their manifests", calls.Load(), len(segs))
	}
	stored := archiveObjects(t, store)

	refuse.Store(true)
	t1 := clk.Now()
	exec1(t, db, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	waitStatus(t, k, "refused", func(st archive.Status) bool { return strings.Contains(st.Error, lapsed.Error()) })
	clk.Add(time.Minute)
	n := refused.Load()
	waitFor(t, "five more tries", func() bool { return refused.Load() >= n+5 })
	if n := archiveObjects(t, store); n != stored {
		t.Errorf("%d objects stored while the Guard refused", n-stored)
	}
	if st := k.Status(); !st.ArchivedThrough.Equal(t1) {
		t.Errorf("the refused transaction arrived at %s: %s", t1, show(st))
	}

	refuse.Store(false)
	segs := waitArchived(t, store, position(t, db))
	if gaps := archive.Chain(segs, ""); len(gaps) != 0 {
		t.Errorf("gaps after the Guard allowed it again: %v", gaps)
	}
	t2 := clk.Add(time.Minute)
	waitStatus(t, k, "going on", func(st archive.Status) bool {
		return st.Streaming && st.Error == "" && st.ArchivedThrough.Equal(t2)
	})
}

// With no segment in the store, the archive starts at the newest backup's position, so that a restore from it
// rolls forward; a newest backup whose position cannot be read starts nothing (Error says so) until there is
// a newer one.
func TestKeeperStartsAtTheNewestBackup(t *testing.T) {
	ctx := context.Background()
	src := mysqltest.Start(t)
	db := src.OpenRoot()
	exec1(t, db, archiverAccount...)
	exec1(t, db, "CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)")
	app := openApp(t, src)
	conn := backup.Source{Flavor: mysql.MariaDBFlavor{}, Conn: mysql.DumpOptions{Socket: src.Socket, User: "root"}}
	store := backup.DirStore{Dir: t.TempDir()}
	exec1(t, app, "INSERT INTO orders VALUES (1, 1)")
	unreadable, err := backup.Run(ctx, backup.Options{Store: store, Source: conn})
	if err != nil {
		t.Fatal(err)
	}
	unreadable.GTIDPosition = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5" // MySQL's, not MariaDB's
	m, err := json.Marshal(unreadable)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, unreadable.Name+".manifest.json", bytes.NewReader(m)); err != nil {
		t.Fatal(err)
	}
	k := &archive.Keeper{Store: store, ServerID: 4000000016, MaxAge: 200 * time.Millisecond,
		Retry: 100 * time.Millisecond, Log: testLog{t}}
	k.SetSource(sourceOf(src))
	runKeeper(t, k)
	waitStatus(t, k, "refusing to start", func(st archive.Status) bool {
		return !st.Streaming && strings.Contains(st.Error, unreadable.Name)
	})
	if n := archiveObjects(t, store); n != 0 {
		t.Fatalf("%d objects archived from an unknown position", n)
	}

	exec1(t, app, "INSERT INTO orders VALUES (2, 1)")
	newest, err := backup.Run(ctx, backup.Options{Store: store, Source: conn})
	if err != nil {
		t.Fatal(err)
	}
	exec1(t, app, "INSERT INTO orders VALUES (3, 1)")
	segs := waitArchived(t, store, position(t, db))
	if segs[0].Start != newest.GTIDPosition || newest.GTIDPosition == "" {
		t.Fatalf("the archive starts at %q, the newest backup is at %q", segs[0].Start, newest.GTIDPosition)
	}
	if gaps := archive.Chain(segs, newest.GTIDPosition); len(gaps) != 0 {
		t.Fatalf("gaps after the backup: %v", gaps)
	}

	// A restore from the backup, rolled forward with the archive.
	dst := mysqltest.Start(t)
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Store: store, Name: newest.Name,
		Target: backup.Source{Flavor: mysql.MariaDBFlavor{}, Conn: mysql.DumpOptions{Socket: dst.Socket, User: "root"}}}); err != nil {
		t.Fatal(err)
	}
	replay(t, store, newest.GTIDPosition, dst)
	if m := missing(t, openApp(t, dst), []int{1, 2, 3}); len(m) != 0 {
		t.Errorf("rows %v missing after the restore and the replay", m)
	}
}
