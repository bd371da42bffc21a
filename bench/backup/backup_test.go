package backup

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

var (
	flagSizeMiB = flag.Int64("size-mib", 1126, "fill the database until its tables take at least this much on disk")
	flagRuns    = flag.Int("runs", 3, "runs; each takes both backups and both restores")
	flagTables  = flag.Int("tables", 8, "tables the data is spread over")
	flagRunner  = flag.String("runner", "", "a mysqlfleet-backup binary to time (default: build ./cmd/backup)")
	flagOut     = flag.String("results", "", "results directory (default: bench/results of the module)")
)

// serverArgs make the servers a database server rather than a test fixture: a buffer pool that holds a good part
// of the data, and a redo log that does not throttle a restore. Source and restore targets get the same.
var serverArgs = []string{
	"--innodb-buffer-pool-size=1G",
	"--innodb-log-file-size=512M",
	"--innodb-flush-log-at-trx-commit=2",
	"--max-allowed-packet=64M",
}

const (
	schema = "bench"
	// target is the maximal improvement allowed: the runner may take at most 10 % longer than the pipe.
	target = 1.10
)

var flavor = mysql.MariaDBFlavor{}

func BenchmarkBackupAndRestore(b *testing.B) {
	for b.Loop() {
		benchmark(b)
	}
}

func benchmark(b *testing.B) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	res := &Results{Timestamp: stamp, Host: host(), Target: target, ServerArgs: serverArgs}
	runner := *flagRunner
	if runner == "" {
		runner = build(b)
	}
	res.Runner = runner

	src := mysqltest.Start(b, mysqltest.WithArgs(serverArgs...))
	srcDB := open(b, src)
	start := time.Now()
	onDisk := fill(b, srcDB, src.DataDir)
	res.Database = Database{Tables: *flagTables, OnDiskBytes: onDisk, Rows: rows(b, srcDB),
		FillSeconds: time.Since(start).Seconds()}
	// The fill's binary logs are not part of what is dumped; they only take disk.
	src.PurgeBinaryLogs()
	want := checksums(b, srcDB)
	b.Logf("database: %d tables, %d rows, %.2f GiB on disk, filled in %s", *flagTables, res.Database.Rows,
		gib(onDisk), time.Since(start).Round(time.Second))

	work := b.TempDir()
	for i := range *flagRuns {
		dir := filepath.Join(work, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		r := Run{Index: i, Load1: machine.LoadAverage()[0], Order: "plain,runner"}
		kinds := []string{"plain", "runner"}
		if i%2 == 1 {
			slices.Reverse(kinds)
			r.Order = "runner,plain"
		}
		for _, kind := range kinds {
			var t Timing
			switch kind {
			case "plain":
				t = plainBackup(b, src, filepath.Join(dir, "plain.sql.gz"))
				r.PlainBackup = t
			case "runner":
				t = runnerBackup(b, runner, src, filepath.Join(dir, "runner"))
				r.RunnerBackup = t
			}
			b.Logf("run %d: %s backup %.1f s, %d bytes stored", i, kind, t.Seconds, t.StoredBytes)
		}
		for _, kind := range kinds {
			dst := mysqltest.Start(b, mysqltest.WithArgs(serverArgs...))
			var t Timing
			switch kind {
			case "plain":
				t = plainRestore(b, dst, filepath.Join(dir, "plain.sql.gz"))
				r.PlainRestore = t
			case "runner":
				t = runnerRestore(b, runner, dst, filepath.Join(dir, "runner"))
				r.RunnerRestore = t
			}
			dstDB := open(b, dst)
			if got := checksums(b, dstDB); !maps.Equal(got, want) {
				b.Fatalf("run %d: the %s restore differs from the source: %v, want %v", i, kind, got, want)
			}
			_ = dstDB.Close()
			dst.Stop()
			_ = os.RemoveAll(filepath.Dir(dst.DataDir))
			b.Logf("run %d: %s restore %.1f s, every table's checksum equal", i, kind, t.Seconds)
		}
		_ = os.RemoveAll(dir)
		res.Runs = append(res.Runs, r)
	}
	res.Host.LoadEnd = machine.LoadAverage()
	res.summarize()
	res.print(os.Stdout)
	if err := res.write(); err != nil {
		b.Fatal(err)
	}
}

// build compiles the runner as a backup Job gets it: a static binary.
func build(b *testing.B) string {
	out := filepath.Join(b.TempDir(), "mysqlfleet-backup")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/mysqlfleet/mysqlfleet/cmd/backup")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/backup: %v: %s", err, msg)
	}
	return out
}

func open(b *testing.B, s *mysqltest.Server) *sql.DB {
	db, err := sql.Open("mysql", s.RootDSN())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// batch is the rows one INSERT … SELECT adds to one table.
const batch = 250_000

// fill creates the schema (tables, a view, a stored procedure and function, a trigger) and adds rows in batches
// until the tables' files hold at least -size-mib. The rows mix what real tables hold: keys, numbers, dates,
// hashes (which compress badly) and text (which compresses well).
func fill(b *testing.B, db *sql.DB, dataDir string) int64 {
	stmts := []string{"CREATE DATABASE " + schema}
	for t := range *flagTables {
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE %s.t%d (
			id BIGINT NOT NULL PRIMARY KEY,
			k INT NOT NULL,
			amount DECIMAL(12,2) NOT NULL,
			created DATETIME NOT NULL,
			token CHAR(64) NOT NULL,
			note VARCHAR(255) NOT NULL,
			KEY k (k)) ENGINE=InnoDB`, schema, t))
	}
	stmts = append(stmts,
		"CREATE VIEW "+schema+".totals AS SELECT k, SUM(amount) AS amount FROM "+schema+".t0 GROUP BY k",
		"CREATE PROCEDURE "+schema+".touch(IN n BIGINT) UPDATE "+schema+".t0 SET k = k + 1 WHERE id = n",
		"CREATE FUNCTION "+schema+".cents(a DECIMAL(12,2)) RETURNS BIGINT DETERMINISTIC RETURN a * 100",
		"CREATE TABLE "+schema+".audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, row_id BIGINT NOT NULL)",
		"CREATE TRIGGER "+schema+".t1_audit AFTER UPDATE ON "+schema+".t1 FOR EACH ROW INSERT INTO "+schema+
			".audit (row_id) VALUES (NEW.id)",
	)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
	}
	limit := *flagSizeMiB << 20
	next := make([]int64, *flagTables)
	for i := 0; ; i++ {
		if size := tableBytes(b, dataDir); size >= limit {
			return size
		}
		t := i % *flagTables
		q := fmt.Sprintf(`INSERT INTO %s.t%d (id, k, amount, created, token, note)
			SELECT seq + %d, seq * 7919 %% 1000003, (seq * 104729 %% 10000000) / 100,
				'2026-01-01' + INTERVAL (seq * 37 %% 31536000) SECOND, SHA2(CONCAT(%d, '-', seq), 256),
				CONCAT('order ', seq, ' for customer ', seq %% 50000, ' shipped to warehouse ', seq %% 17,
					' by carrier ', ELT(1 + seq %% 4, 'north', 'south', 'east', 'west'), ' ref ',
					LEFT(MD5(seq), 12))
			FROM %s.seq_1_to_%d`, schema, t, next[t], t, schema, batch)
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("fill: %v", err)
		}
		next[t] += batch
	}
}

// tableBytes is what the schema's tables take on disk (their .ibd files).
func tableBytes(b *testing.B, dataDir string) int64 {
	var n int64
	err := filepath.WalkDir(filepath.Join(dataDir, schema), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ibd") {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func tables() []string {
	var out []string
	for t := range *flagTables {
		out = append(out, fmt.Sprintf("%s.t%d", schema, t))
	}
	return append(out, schema+".audit")
}

func rows(b *testing.B, db *sql.DB) int64 {
	var total int64
	for _, t := range tables() {
		var n int64
		if err := db.QueryRow("SELECT COUNT(*) FROM " + t).Scan(&n); err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}

// checksums is CHECKSUM TABLE of every table, and the routines, view and trigger the dump must carry.
func checksums(b *testing.B, db *sql.DB) map[string]string {
	out := map[string]string{}
	rs, err := db.Query("CHECKSUM TABLE " + strings.Join(tables(), ", "))
	if err != nil {
		b.Fatal(err)
	}
	for rs.Next() {
		var name string
		var sum sql.NullString
		if err := rs.Scan(&name, &sum); err != nil {
			b.Fatal(err)
		}
		out[name] = sum.String
	}
	if err := rs.Close(); err != nil {
		b.Fatal(err)
	}
	for what, q := range map[string]string{
		"routines": "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = '" + schema + "'",
		"views":    "SELECT COUNT(*) FROM information_schema.views WHERE table_schema = '" + schema + "'",
		"triggers": "SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema = '" + schema + "'",
	} {
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			b.Fatal(err)
		}
		out[what] = strconv.Itoa(n)
	}
	return out
}

func conn(s *mysqltest.Server) mysql.DumpOptions {
	return mysql.DumpOptions{Socket: s.Socket, User: "root"}
}

// pipe runs first | second, as a shell pipeline does: first's output is second's input, and both must exit 0.
func pipe(b *testing.B, first, second *exec.Cmd) time.Duration {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	var firstErr, secondErr strings.Builder
	first.Stdout, first.Stderr = w, &firstErr
	second.Stdin = r
	if second.Stderr == nil {
		second.Stderr = &secondErr
	}
	start := time.Now()
	if err := first.Start(); err != nil {
		b.Fatal(err)
	}
	if err := second.Start(); err != nil {
		b.Fatal(err)
	}
	// The children hold their ends; ours must go so that EOF and SIGPIPE happen as in a shell.
	_ = r.Close()
	_ = w.Close()
	err1, err2 := first.Wait(), second.Wait()
	took := time.Since(start)
	if err1 != nil || err2 != nil {
		b.Fatalf("%s | %s: %v, %v: %s %s", filepath.Base(first.Path), filepath.Base(second.Path), err1, err2,
			firstErr.String(), secondErr.String())
	}
	return took
}

func plainBackup(b *testing.B, src *mysqltest.Server, file string) Timing {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	args := flavor.DumpCommand(conn(src))
	dump := exec.Command(lookPath(b, args[0]), args[1:]...)
	gz := exec.Command(lookPath(b, "gzip"))
	took, size := pipeToFile(b, dump, gz, f)
	return Timing{Seconds: took.Seconds(), StoredBytes: size}
}

// pipeToFile runs first | second > f, then syncs f, and returns the time both took with the sync, and f's size.
// The runner's dir store syncs what it wrote before it counts it stored; so does the hand pipeline, timed.
func pipeToFile(b *testing.B, first, second *exec.Cmd, f *os.File) (time.Duration, int64) {
	second.Stdout = f
	took := pipe(b, first, second)
	start := time.Now()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	took += time.Since(start)
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return took, st.Size()
}

func runnerBackup(b *testing.B, runner string, src *mysqltest.Server, dir string) Timing {
	cmd := exec.Command(runner, "backup", "--engine=MariaDB", "--socket="+src.Socket, "--user=root",
		"--target=dir", "--dir="+dir)
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s backup: %v: %s", runner, err, stderrOf(err))
	}
	var m struct {
		Size     int64  `json:"size"`
		DumpSize int64  `json:"dumpSize"`
		GTID     string `json:"gtidPosition"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		b.Fatalf("the runner's manifest: %v: %s", err, out)
	}
	return Timing{Seconds: took.Seconds(), StoredBytes: m.Size, DumpBytes: m.DumpSize, GTIDPosition: m.GTID}
}

func plainRestore(b *testing.B, dst *mysqltest.Server, file string) Timing {
	args := flavor.RestoreCommand(conn(dst))
	gunzip := exec.Command(lookPath(b, "gzip"), "-dc", file)
	client := exec.Command(lookPath(b, args[0]), args[1:]...)
	var out strings.Builder
	client.Stdout, client.Stderr = &out, &out
	took := pipe(b, gunzip, client)
	return Timing{Seconds: took.Seconds()}
}

func runnerRestore(b *testing.B, runner string, dst *mysqltest.Server, dir string) Timing {
	cmd := exec.Command(runner, "restore", "--engine=MariaDB", "--socket="+dst.Socket, "--user=root",
		"--target=dir", "--dir="+dir)
	start := time.Now()
	if _, err := cmd.Output(); err != nil {
		b.Fatalf("%s restore: %v: %s", runner, err, stderrOf(err))
	}
	return Timing{Seconds: time.Since(start).Seconds()}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func lookPath(b *testing.B, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		b.Fatalf("%s: %v (make deps installs MariaDB's tools)", name, err)
	}
	return p
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }

func host() machine.Host {
	h := machine.Now()
	if out, err := exec.Command("mariadbd", "--version").Output(); err == nil {
		h.MariaDB = strings.TrimSpace(string(out))
	} else if out, err := exec.Command("/usr/sbin/mariadbd", "--version").Output(); err == nil {
		h.MariaDB = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("gzip", "--version").Output(); err == nil {
		h.Gzip, _, _ = strings.Cut(string(out), "\n")
	}
	return h
}

// resultsDir is bench/results of the module this package is in.
func resultsDir() string {
	if *flagOut != "" {
		return *flagOut
	}
	return filepath.Join("..", "results")
}
