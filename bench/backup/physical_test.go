package backup

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/bench/stats"
	internal "github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// BenchmarkPhysical times physical backups and restores of MariaDB on the same database as
// BenchmarkBackupAndRestore (-size-mib, -tables, -runs), in the same run against the hand pipeline:
//
//	backup:  mariadb-backup --backup --stream=xbstream | zstd -1 -T2 > FILE   vs  internal/backup.Run, Physical
//	restore: zstd -dc FILE | mbstream -x; mariadb-backup --prepare; --move-back; start mariadbd
//	                                                                          vs  internal/backup.RestorePhysical; start
//
// The runner is the library in process (cmd/backup has no physical method yet). A writer commits one row at a
// time into its own table throughout; each backup records the longest gap between its acknowledged commits (the
// commit stall of BACKUP STAGE BLOCK_COMMIT) beside the longest gap of as long an idle time just before. Every
// restore is started as a server and checked: CHECKSUM TABLE of every table equal to the source's.
//
//	go test -run '^$' -bench Physical -benchtime 1x -timeout 90m ./bench/backup -args -runs=3
func BenchmarkPhysical(b *testing.B) {
	for b.Loop() {
		benchmarkPhysical(b)
	}
}

// idleWindow is how long the writer's idle gaps are measured before each backup.
const idleWindow = 5 * time.Second

func benchmarkPhysical(b *testing.B) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	res := &PhysicalResults{Timestamp: stamp, Host: host(), ServerArgs: serverArgs,
		RunnerLogCopyIntervalMs: float64(internal.DefaultLogCopyInterval.Milliseconds()),
		RunnerZstdLevel:         internal.ZstdLevel.String(),
		Hand:                    "mariadb-backup --backup --stream=xbstream | zstd -1 -T2 > FILE",
		HandRestore:             "zstd -dc FILE | mbstream -x -C DIR; mariadb-backup --prepare; mariadb-backup --move-back",
		MariaDBBackup:           firstLine(b, "mariadb-backup", "--version"),
		Zstd:                    firstLine(b, "zstd", "--version")}
	src := mysqltest.Start(b, mysqltest.WithArgs(serverArgs...))
	srcDB := open(b, src)
	start := time.Now()
	onDisk := fill(b, srcDB, src.DataDir)
	res.Database = Database{Tables: *flagTables, OnDiskBytes: onDisk, Rows: rows(b, srcDB),
		FillSeconds: time.Since(start).Seconds()}
	src.PurgeBinaryLogs()
	want := checksums(b, srcDB)
	b.Logf("database: %d tables, %d rows, %.2f GiB on disk, filled in %s", *flagTables, res.Database.Rows,
		gib(onDisk), time.Since(start).Round(time.Second))

	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)"} {
		if _, err := srcDB.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	appDB, err := sql.Open("mysql", src.RootDSN()+"app")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = appDB.Close() })
	writer := mysqltest.StartWriter(b, 1, func() (*sql.DB, int) { return appDB, 1 })

	work := b.TempDir()
	for i := range *flagRuns {
		dir := filepath.Join(work, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		r := PhysicalRun{Index: i, Load1: machine.LoadAverage()[0], Order: "hand,runner"}
		kinds := []string{"hand", "runner"}
		if i%2 == 1 {
			slices.Reverse(kinds)
			r.Order = "runner,hand"
		}
		store := internal.DirStore{Dir: filepath.Join(dir, "runner")}
		for _, kind := range kinds {
			idleStart := time.Now()
			time.Sleep(idleWindow)
			idleEnd := time.Now()
			var t PhysicalTiming
			switch kind {
			case "hand":
				t = handPhysicalBackup(b, src, filepath.Join(dir, "hand.xb.zst"))
			case "runner":
				t = runnerPhysicalBackup(b, src, store)
			}
			end := idleEnd.Add(time.Duration(t.Seconds * float64(time.Second)))
			t.LongestCommitGapSeconds = writer.LongestGap(idleEnd, end).Seconds()
			t.IdleLongestGapSeconds = writer.LongestGap(idleStart, idleEnd).Seconds()
			t.CommitsPerSecond = float64(writer.AcksBetween(idleEnd, end)) / t.Seconds
			t.IdleCommitsPerSecond = float64(writer.AcksBetween(idleStart, idleEnd)) / idleWindow.Seconds()
			if kind == "hand" {
				r.HandBackup = t
			} else {
				r.RunnerBackup = t
			}
			b.Logf("run %d: %s backup %.1f s, %d bytes stored, longest commit gap %.3f s (idle %.3f s)", i, kind,
				t.Seconds, t.StoredBytes, t.LongestCommitGapSeconds, t.IdleLongestGapSeconds)
		}
		for _, kind := range kinds {
			dst := mysqltest.Start(b, mysqltest.WithArgs(serverArgs...))
			dst.Stop()
			if err := os.RemoveAll(dst.DataDir); err != nil {
				b.Fatal(err)
			}
			restoreWork := filepath.Join(dir, kind+"-restore")
			if err := os.MkdirAll(restoreWork, 0o755); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			switch kind {
			case "hand":
				handPhysicalRestore(b, filepath.Join(dir, "hand.xb.zst"), restoreWork, dst.DataDir)
			case "runner":
				if _, err := internal.RestorePhysical(context.Background(), internal.PhysicalRestoreOptions{
					Store: store, DataDir: dst.DataDir, WorkDir: restoreWork}); err != nil {
					b.Fatal(err)
				}
			}
			dst.Restart()
			t := PhysicalTiming{Seconds: time.Since(start).Seconds()}
			dstDB := open(b, dst)
			got := checksums(b, dstDB)
			if !maps.Equal(got, want) {
				b.Fatalf("run %d: the %s restore differs from the source: %v, want %v", i, kind, got, want)
			}
			_ = dstDB.Close()
			dst.Stop()
			_ = os.RemoveAll(filepath.Dir(dst.DataDir))
			if kind == "hand" {
				r.HandRestore = t
			} else {
				r.RunnerRestore = t
			}
			b.Logf("run %d: %s restore %.1f s to a server up, every table's checksum equal", i, kind, t.Seconds)
		}
		_ = os.RemoveAll(dir)
		res.Runs = append(res.Runs, r)
	}
	writer.Stop()
	res.Host.LoadEnd = machine.LoadAverage()
	res.summarize()
	res.print(os.Stdout)
	if err := res.write(); err != nil {
		b.Fatal(err)
	}
}

func handPhysicalBackup(b *testing.B, src *mysqltest.Server, file string) PhysicalTiming {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	backup := exec.Command(lookPath(b, "mariadb-backup"), "--no-defaults", "--backup", "--stream=xbstream",
		"--target-dir="+b.TempDir(), "--socket="+src.Socket, "--user=root")
	zstd := exec.Command(lookPath(b, "zstd"), "-1", "-T2", "-q")
	took, size := pipeToFile(b, backup, zstd, f)
	return PhysicalTiming{Seconds: took.Seconds(), StoredBytes: size}
}

func runnerPhysicalBackup(b *testing.B, src *mysqltest.Server, store internal.Store) PhysicalTiming {
	start := time.Now()
	m, err := internal.Run(context.Background(), internal.Options{Method: internal.Physical, Store: store,
		Source: internal.Source{Flavor: flavor, Conn: conn(src)}})
	if err != nil {
		b.Fatal(err)
	}
	return PhysicalTiming{Seconds: time.Since(start).Seconds(), StoredBytes: m.Size, StreamBytes: m.DumpSize,
		GTIDPosition: m.GTIDPosition}
}

func handPhysicalRestore(b *testing.B, file, work, dataDir string) {
	extracted := filepath.Join(work, "x")
	if err := os.MkdirAll(extracted, 0o755); err != nil {
		b.Fatal(err)
	}
	unzstd := exec.Command(lookPath(b, "zstd"), "-dc", "-q", file)
	mbstream := exec.Command(lookPath(b, "mbstream"), "-x", "-C", extracted)
	pipe(b, unzstd, mbstream)
	for _, args := range [][]string{
		{"--no-defaults", "--prepare", "--target-dir=" + extracted},
		{"--no-defaults", "--move-back", "--target-dir=" + extracted, "--datadir=" + dataDir},
	} {
		if out, err := exec.Command(lookPath(b, "mariadb-backup"), args...).CombinedOutput(); err != nil {
			b.Fatalf("mariadb-backup %s: %v: %s", args[1], err, tail(out))
		}
	}
}

func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	return s[max(0, len(s)-2000):]
}

func firstLine(b *testing.B, name string, args ...string) string {
	out, err := exec.Command(lookPath(b, name), args...).CombinedOutput()
	if err != nil {
		b.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func (r *PhysicalResults) summarize() {
	var stream []float64
	for _, run := range r.Runs {
		stream = append(stream, float64(run.RunnerBackup.StreamBytes))
	}
	mib := stats.Median(stream) / (1 << 20)
	sum := func(hand, runner func(PhysicalRun) PhysicalTiming) PhysicalSummary {
		var h, q, paired []float64
		for _, run := range r.Runs {
			h, q = append(h, hand(run).Seconds), append(q, runner(run).Seconds)
			paired = append(paired, runner(run).Seconds/hand(run).Seconds)
		}
		s := PhysicalSummary{HandMedianSeconds: stats.Median(h), RunnerMedianSeconds: stats.Median(q), PairedRatios: paired}
		if s.HandMedianSeconds > 0 && s.RunnerMedianSeconds > 0 {
			s.Ratio = s.RunnerMedianSeconds / s.HandMedianSeconds
			s.HandMiBps, s.RunnerMiBps = mib/s.HandMedianSeconds, mib/s.RunnerMedianSeconds
		}
		return s
	}
	r.Backup = sum(func(x PhysicalRun) PhysicalTiming { return x.HandBackup },
		func(x PhysicalRun) PhysicalTiming { return x.RunnerBackup })
	r.Restore = sum(func(x PhysicalRun) PhysicalTiming { return x.HandRestore },
		func(x PhysicalRun) PhysicalTiming { return x.RunnerRestore })
	for _, run := range r.Runs {
		r.Stall.HandMaxSeconds = max(r.Stall.HandMaxSeconds, run.HandBackup.LongestCommitGapSeconds)
		r.Stall.RunnerMaxSeconds = max(r.Stall.RunnerMaxSeconds, run.RunnerBackup.LongestCommitGapSeconds)
		r.Stall.IdleMaxSeconds = max(r.Stall.IdleMaxSeconds, run.HandBackup.IdleLongestGapSeconds,
			run.RunnerBackup.IdleLongestGapSeconds)
	}
}

func (r *PhysicalResults) print(w *os.File) {
	_, _ = fmt.Fprintf(w, "physical: backup hand %.1f s (%.0f MiB/s), runner %.1f s (%.0f MiB/s), runner/hand %.2f; "+
		"restore hand %.1f s, runner %.1f s, runner/hand %.2f; longest commit gap: hand %.3f s, runner %.3f s, "+
		"idle %.3f s\n", r.Backup.HandMedianSeconds, r.Backup.HandMiBps, r.Backup.RunnerMedianSeconds,
		r.Backup.RunnerMiBps, r.Backup.Ratio, r.Restore.HandMedianSeconds, r.Restore.RunnerMedianSeconds,
		r.Restore.Ratio, r.Stall.HandMaxSeconds, r.Stall.RunnerMaxSeconds, r.Stall.IdleMaxSeconds)
}

func (r *PhysicalResults) write() error { return writeResults("physical", r.Timestamp, r) }
