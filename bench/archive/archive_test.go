package archive

import (
	"context"
	"database/sql"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	_ "github.com/go-sql-driver/mysql"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/backuptest"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

var (
	flagWriters  = flag.Int("writers", 4, "connections committing one-row transactions flat out during the load")
	flagDuration = flag.Duration("duration", 60*time.Second, "how long the load lasts")
	flagMaxAge   = flag.Duration("max-age", 5*time.Second, "the Keeper's MaxAge (spec.backup.archive.maxSegmentAge)")
	flagRuns     = flag.Int("runs", 3, "runs, each on fresh servers")
	flagStore    = flag.String("store", backup.TargetS3, "where the segments go: s3 (versitygw on loopback) or dir")
	flagOut      = flag.String("results", "", "results directory (default: bench/results of the module)")
)

const (
	// maxSize and serverID are the member controller's (controllers/member's archiveMaxSize and
	// archiverServerID).
	maxSize  = 16 << 20
	serverID = 65535
	// sampleEvery is how often the Keeper's Status and the primary's position are read during the load.
	sampleEvery = 100 * time.Millisecond
	// catchUpWithin is how long the archive may take to store what the primary logged once the writers stop,
	// before the run fails: far beyond any bound, it means the archive stopped.
	catchUpWithin = 2 * time.Minute
)

// replayTargetArgs relax the replay target's durability: it is the check of the archive, not what is timed,
// and a serial replay of the load's transactions with a sync each would take many times the load.
var replayTargetArgs = []string{"--sync-binlog=0", "--innodb-flush-log-at-trx-commit=0"}

// archiverAccount is the replication account the Keeper reads with, out of the binary log (SET STATEMENT: a
// pooled connection's session variables would outlive the statement).
var archiverAccount = []string{
	"SET STATEMENT sql_log_bin = 0 FOR CREATE USER archiver@'%' IDENTIFIED BY 'archiver-secret'",
	"SET STATEMENT sql_log_bin = 0 FOR GRANT REPLICATION SLAVE ON *.* TO archiver@'%'",
}

func BenchmarkArchiveUnderLoad(b *testing.B) {
	for b.Loop() {
		benchmark(b)
	}
}

func benchmark(b *testing.B) {
	if *flagStore != backup.TargetS3 && *flagStore != backup.TargetDir {
		b.Fatalf("-store=%s: s3 or dir", *flagStore)
	}
	res := &Results{Timestamp: time.Now().UTC().Format("20060102T150405Z"), Host: host(), Store: *flagStore,
		ServerOptions: mysql.MariaDBFlavor{}.BootOptions(), ReplayTargetArgs: replayTargetArgs, Writers: *flagWriters,
		LoadSeconds: flagDuration.Seconds(), MaxAgeSeconds: flagMaxAge.Seconds(), MaxSizeBytes: maxSize,
		SampleMillis: float64(sampleEvery.Milliseconds())}
	// One bucket for every run, each under its own prefix, as one bucket holds the archives of many sets.
	var s3 *backuptest.S3Server
	if *flagStore == backup.TargetS3 {
		s3 = backuptest.StartS3(b)
		res.StoreServer = versitygwVersion()
	}
	for i := range *flagRuns {
		r := runOnce(b, i, s3)
		b.Logf("run %d: %.0f commits/s, %.2f MiB/s of binary log in %d segments; recovery point age p50 %.2f s, "+
			"p99 %.2f s, max %.2f s; caught up %.2f s after the load; %d acknowledged writes replayed", i,
			r.CommitsPerSecond, r.BinlogBytesPerSecond/(1<<20), r.Segments, r.RecoveryPointAge.P50,
			r.RecoveryPointAge.P99, r.RecoveryPointAge.Max, r.CatchUpSeconds, r.AcknowledgedWrites)
		res.Runs = append(res.Runs, r)
	}
	res.Host.LoadEnd = machine.LoadAverage()
	res.summarize()
	res.print(os.Stdout)
	if err := res.write(); err != nil {
		b.Fatal(err)
	}
}

// runOnce is one run: a fresh primary archived into the run's own store under the load, the catch-up, and the
// replay of the archive into a fresh empty server.
func runOnce(b *testing.B, i int, s3 *backuptest.S3Server) Run {
	ctx := context.Background()
	r := Run{Index: i, Load1: machine.LoadAverage()[0]}
	src := mysqltest.Start(b)
	root := open(b, src, "")
	execAll(b, root, archiverAccount...)
	// A primary, as the controller leaves it: the writers' root would pass read_only anyway.
	execAll(b, root, "SET GLOBAL read_only = OFF")
	from := position(b, root)

	store := &timedStore{Store: openStore(b, s3, i)}
	logs := &streamLog{b: b}
	k := &archive.Keeper{Store: store, ServerID: serverID, MaxAge: *flagMaxAge, MaxSize: maxSize, Log: logs}
	k.SetSource(&archive.Source{Host: src.Host, Port: src.Port, User: "archiver", Password: "archiver-secret"})
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.Run(kctx)
	}()
	var once sync.Once
	stopKeeper := func() { once.Do(func() { cancel(); <-done }) }
	b.Cleanup(stopKeeper)

	execAll(b, root, "CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)")
	// The load starts on a live stream whose archive holds the schema: what the samples see is the load's.
	if _, err := waitStored(k, parse(b, position(b, root)), time.Minute); err != nil {
		b.Fatalf("run %d: before the load: %v", i, err)
	}

	app := open(b, src, "app")
	// Each writer keeps its connection, as an application's pool does, rather than reconnecting past the
	// pool's default of 2 idle ones.
	app.SetMaxIdleConns(*flagWriters)

	start := time.Now()
	samples := make(chan []sample, 1)
	stopSampling := make(chan struct{})
	go func() { samples <- sampleUntil(b, k, root, stopSampling) }()
	var writers []*mysqltest.Writer
	for w := range *flagWriters {
		writers = append(writers, mysqltest.StartWriter(b, 1+w*10_000_000, func() (*sql.DB, int) { return app, 1 }))
	}
	time.Sleep(*flagDuration)
	end := time.Now()
	close(stopSampling)
	var acked []int
	for _, w := range writers {
		w.Stop()
		r.Commits += int64(w.AcksBetween(start, end))
		acked = append(acked, w.Acked()...)
	}
	stopped := time.Now()
	ss := <-samples

	final := parse(b, position(b, root))
	caughtUp, err := waitStored(k, final, catchUpWithin)
	if err != nil {
		b.Fatalf("run %d: after the load: %v", i, err)
	}
	r.CatchUpSeconds = caughtUp.Sub(stopped).Seconds()
	stopKeeper()

	segs, err := archive.List(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	if gaps := archive.Chain(segs, ""); len(gaps) > 0 {
		b.Fatalf("run %d: the archive has %d gaps, first %s", i, len(gaps), gaps[0])
	}
	if n := len(segs); n == 0 || !parse(b, segs[n-1].End).Equal(final) {
		b.Fatalf("run %d: the store's last segment does not end at the primary's %s", i, final)
	}
	var window []sample
	for _, s := range ss {
		if !s.at.Before(start) && !s.at.After(end) {
			window = append(window, s)
		}
	}
	ages := recoveryPointAges(window, start)
	r.Samples = len(window)
	r.RecoveryPointAge, r.StoredPositionAge = percentiles(ages), percentiles(storedPositionAges(window))
	for _, a := range ages {
		if a > flagMaxAge.Seconds() {
			r.SamplesOverMaxAge++
		}
	}
	load := end.Sub(start).Seconds()
	r.CommitsPerSecond = float64(r.Commits) / load
	r.Segments = len(segs)
	for _, s := range segs {
		r.BinlogBytes += s.LogSize
		r.StoredBytes += s.Size
	}
	r.BinlogBytesPerSecond = float64(r.BinlogBytes) / load
	if r.StoredBytes > 0 {
		r.CompressionRatio = float64(r.BinlogBytes) / float64(r.StoredBytes)
	}
	r.SegmentStore = percentiles(store.segmentSeconds())
	r.StreamRestarts = logs.restarts()

	r.AcknowledgedWrites = len(acked)
	r.ReplayedSegments, r.ReplaySeconds = replayAndCheck(b, i, store, from, root, acked)
	// The pools first: a pool closed after its server logs a broken pipe per connection.
	_, _ = app.Close(), root.Close()
	src.Stop()
	_ = os.RemoveAll(filepath.Dir(src.DataDir))
	return r
}

// sampleUntil reads the primary's position, then the Keeper's Status, every sampleEvery until stop is closed.
func sampleUntil(b *testing.B, k *archive.Keeper, root *sql.DB, stop <-chan struct{}) []sample {
	var out []sample
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s := sample{posAt: time.Now()}
		var pos string
		if err := root.QueryRow("SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
			b.Errorf("sampling the primary's position: %v", err)
			return out
		}
		var err error
		if s.pos, err = gomysql.ParseMariadbGTIDSet(pos); err != nil {
			b.Errorf("the primary's position %q: %v", pos, err)
			return out
		}
		st := k.Status()
		s.at, s.through = time.Now(), st.ArchivedThrough
		if st.Latest != nil {
			if s.end, err = gomysql.ParseMariadbGTIDSet(st.Latest.End); err != nil {
				b.Errorf("the archive's end %q: %v", st.Latest.End, err)
				return out
			}
		}
		out = append(out, s)
		select {
		case <-stop:
			return out
		case <-t.C:
		}
	}
}

// waitStored waits until the Keeper's newest stored segment holds pos, and returns when it saw it.
func waitStored(k *archive.Keeper, pos gomysql.GTIDSet, within time.Duration) (time.Time, error) {
	var st archive.Status
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st = k.Status()
		if st.Latest == nil || !st.Streaming || st.ArchivedThrough.IsZero() {
			continue
		}
		if end, err := gomysql.ParseMariadbGTIDSet(st.Latest.End); err == nil && end.Contain(pos) {
			return time.Now(), nil
		}
	}
	end := "nothing"
	if st.Latest != nil {
		end = st.Latest.End
	}
	return time.Time{}, fmt.Errorf("the archive ends at %s, not at the primary's %s, after %s (streaming %t, error %q)",
		end, pos, within, st.Streaming, st.Error)
}

// replayAndCheck replays the whole archive into a fresh empty server and fails the run unless every
// acknowledged write is there and the table's checksum is the primary's; it returns the segments replayed and
// how long the replay took.
func replayAndCheck(b *testing.B, i int, store backup.Store, from string, srcRoot *sql.DB, acked []int) (int, float64) {
	dst := mysqltest.Start(b, mysqltest.WithArgs(replayTargetArgs...))
	start := time.Now()
	segs, err := archive.Replay(context.Background(), archive.ReplayOptions{Store: store, From: from,
		Client: []string{"mariadb", "--no-defaults", "--socket=" + dst.Socket, "--user=root"}, WorkDir: b.TempDir()})
	if err != nil {
		b.Fatalf("run %d: the replay: %v", i, err)
	}
	took := time.Since(start).Seconds()
	dstApp := open(b, dst, "app")
	ids, err := mysqltest.IDs(dstApp)
	if err != nil {
		b.Fatalf("run %d: reading the replayed writes: %v", i, err)
	}
	var missing []int
	for _, id := range acked {
		if !ids[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		b.Fatalf("run %d: %d of %d acknowledged writes are missing from the replayed archive, first %d", i,
			len(missing), len(acked), missing[0])
	}
	if want, got := checksum(b, srcRoot), checksum(b, dstApp); got != want {
		b.Fatalf("run %d: app.orders replayed has checksum %s, the primary's is %s", i, got, want)
	}
	_ = dstApp.Close()
	dst.Stop()
	_ = os.RemoveAll(filepath.Dir(dst.DataDir))
	return len(segs), took
}

// openStore is run i's store: its own prefix in the bucket, opened as the member controller opens it (the
// credentials Secret's keys), or a directory.
func openStore(b *testing.B, s3 *backuptest.S3Server, i int) backup.Store {
	if s3 == nil {
		return backup.DirStore{Dir: b.TempDir()}
	}
	cfg := backup.StoreConfig{Target: backup.TargetS3, Bucket: backuptest.Bucket, Endpoint: s3.Endpoint,
		Prefix: fmt.Sprintf("bench/run-%d", i)}
	data := map[string][]byte{}
	for k, v := range s3.Env() {
		data[k] = []byte(v)
	}
	if err := backup.StoreCredentials(&cfg, data); err != nil {
		b.Fatal(err)
	}
	store, closer, err := backup.OpenStore(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = closer.Close() })
	return store
}

// timedStore times each segment's store: the Put of its object and that of its manifest, which the Archiver
// writes one after the other while the stream waits.
type timedStore struct {
	backup.Store
	mu       sync.Mutex
	object   time.Duration
	segments []float64
}

func (s *timedStore) Put(ctx context.Context, key string, r io.Reader) error {
	start := time.Now()
	err := s.Store.Put(ctx, key, r)
	took := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case strings.HasSuffix(key, ".binlog.zst"):
		s.object = took
	case strings.HasSuffix(key, ".segment.json"):
		s.segments = append(s.segments, (s.object + took).Seconds())
	}
	return err
}

func (s *timedStore) segmentSeconds() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.segments...)
}

// streamLog takes the Keeper's lines: a line per segment, kept quiet, and one per stream that ended, logged
// and counted.
type streamLog struct {
	b     *testing.B
	mu    sync.Mutex
	ended int
}

func (l *streamLog) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	if strings.Contains(line, " stopped, again in ") {
		l.mu.Lock()
		l.ended++
		l.mu.Unlock()
		l.b.Logf("keeper: %s", line)
	}
	return len(p), nil
}

func (l *streamLog) restarts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// open is a root pool on s's database db ("" for none), closed when the benchmark ends at the latest.
func open(b *testing.B, s *mysqltest.Server, db string) *sql.DB {
	pool, err := sql.Open("mysql", s.RootDSN()+db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pool.Close() })
	return pool
}

func execAll(b *testing.B, db *sql.DB, stmts ...string) {
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

func position(b *testing.B, db *sql.DB) string {
	var pos string
	if err := db.QueryRow("SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
		b.Fatal(err)
	}
	return pos
}

func parse(b *testing.B, pos string) gomysql.GTIDSet {
	s, err := gomysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		b.Fatalf("position %q: %v", pos, err)
	}
	return s
}

func checksum(b *testing.B, db *sql.DB) string {
	var name string
	var sum sql.NullString
	if err := db.QueryRow("CHECKSUM TABLE app.orders").Scan(&name, &sum); err != nil {
		b.Fatal(err)
	}
	return sum.String
}

func host() machine.Host {
	h := machine.Now()
	for _, bin := range []string{"mariadbd", "/usr/sbin/mariadbd"} {
		if out, err := exec.Command(bin, "--version").Output(); err == nil {
			h.MariaDB = strings.TrimSpace(string(out))
			break
		}
	}
	return h
}

// versitygwVersion is the module version of the versitygw binary backuptest runs (its --version says "git").
func versitygwVersion() string {
	for _, dir := range []string{os.Getenv("MYSQLFLEET_BIN"), filepath.Join("..", "..", "bin")} {
		if dir == "" {
			continue
		}
		if info, err := buildinfo.ReadFile(filepath.Join(dir, "versitygw")); err == nil {
			return "versitygw " + info.Main.Version
		} else if !errors.Is(err, os.ErrNotExist) {
			return ""
		}
	}
	return ""
}

// resultsDir is bench/results of the module this package is in.
func resultsDir() string {
	if *flagOut != "" {
		return *flagOut
	}
	return filepath.Join("..", "results")
}
