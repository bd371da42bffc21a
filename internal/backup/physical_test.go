package backup_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// The physical tests run the real mariadb-backup and mbstream (Debian's mariadb-backup, which
// hack/install-deps.sh installs) against real mariadbd servers, and start a real mariadbd on every restored
// data directory.

// physicalSource is a source whose shop also holds a large-ish table, and a table that a writer (mysqltest's)
// fills, one transaction per row, while the test runs.
type physicalSource struct {
	*source
	writer *mysqltest.Writer
}

func startPhysicalSource(t *testing.T) *physicalSource {
	t.Helper()
	s := &physicalSource{source: startSource(t)}
	s.exec(t, "CREATE DATABASE app", "CREATE TABLE app.orders (id INT PRIMARY KEY, server INT)",
		"CREATE TABLE shop.big (id INT PRIMARY KEY, k INT, note VARCHAR(200), KEY (k))")
	wdb, err := sql.Open("mysql", "root@unix("+s.Socket+")/app")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wdb.Close() })
	s.writer = mysqltest.StartWriter(t, 1, func() (*sql.DB, int) { return wdb, 1 })
	if err := s.writer.WaitAcks(20, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// Written while the writer commits: 200 000 rows of text, and 16 MiB of incompressible blobs.
	s.exec(t, `INSERT INTO shop.big SELECT seq, seq * 7919 % 100003, CONCAT('row ', seq, ' ', MD5(seq))
		FROM shop.seq_1_to_200000`)
	s.addBlobs(t, 100, 16, 1<<20)
	return s
}

func (s *physicalSource) conn() backup.Source { return s.source.conn() }

// checksums is CHECKSUM TABLE and the row count of every user table.
func checksums(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT CONCAT('` + "`" + `', TABLE_SCHEMA, '` + "`.`" + `', TABLE_NAME, '` + "`" + `')
		FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('shop', 'stock', 'app') AND TABLE_TYPE = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	_ = rows.Close()
	out := map[string]string{}
	for _, tbl := range tables {
		var name string
		var sum sql.NullString
		var n int
		if err := db.QueryRow("CHECKSUM TABLE "+tbl).Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT COUNT(*) FROM " + tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tbl] = fmt.Sprintf("checksum %s, %d rows", sum.String, n)
	}
	return out
}

// restoreInto restores a physical backup into the data directory of a new server and starts the server on it,
// with its own server_id, port and options as any test server.
func restoreInto(t *testing.T, o backup.PhysicalRestoreOptions) (*mysqltest.Server, *backup.Manifest) {
	t.Helper()
	srv := mysqltest.Start(t)
	srv.Stop()
	if err := os.RemoveAll(srv.DataDir); err != nil {
		t.Fatal(err)
	}
	o.DataDir, o.WorkDir = srv.DataDir, t.TempDir()
	m, err := backup.RestorePhysical(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	return srv, m
}

// A physical backup taken while a writer commits restores into a fresh data directory on which mariadbd starts:
// every table the writer does not touch is the source's; the writer's table holds a gapless prefix of its
// commits; and the GTID position the restore returns is exactly that prefix's, as a replica started from it
// catches up with the source to the same checksum for every table, without a duplicate or a missing row.
func TestPhysicalRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := startPhysicalSource(t)
	for _, tt := range targets(t) {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.open(t)
			static := checksums(t, src.db)
			delete(static, "`app`.`orders`")
			m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical,
				Cluster: "orders", Member: "eu-1", Pod: "orders-mysql-1"})
			if err != nil {
				t.Fatal(err)
			}
			acked := len(src.writer.Acked())
			if m.Method != backup.Physical || !strings.HasSuffix(m.Object, ".xb.zst") || m.GTIDPosition == "" ||
				!strings.HasPrefix(m.ServerVersion, "10.11.") || m.Size == 0 || m.DumpSize <= m.Size ||
				m.Member != "eu-1" {
				t.Errorf("manifest %+v", m)
			}
			listed, err := backup.List(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			if len(listed) != 1 || listed[0].Name != m.Name || listed[0].Method != backup.Physical {
				t.Fatalf("listed %+v, want the one physical backup %s", listed, m.Name)
			}

			dst, restored := restoreInto(t, backup.PhysicalRestoreOptions{Store: store})
			if restored.Name != m.Name || restored.GTIDPosition != m.GTIDPosition {
				t.Errorf("restored %s at %q, want %s at %q", restored.Name, restored.GTIDPosition, m.Name,
					m.GTIDPosition)
			}
			db := dst.OpenRoot()
			got := checksums(t, db)
			for k, v := range static {
				if got[k] != v {
					t.Errorf("%s: restored %q, source %q", k, got[k], v)
				}
			}
			appDB, err := sql.Open("mysql", dst.RootDSN()+"app")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = appDB.Close() }()
			ids, err := mysqltest.IDs(appDB)
			if err != nil {
				t.Fatal(err)
			}
			// The writer's rows: 1..n with no gap, as one committed after the other; some but not all it
			// had committed when the backup ended (it commits on).
			n := len(ids)
			for id := 1; id <= n; id++ {
				if !ids[id] {
					t.Fatalf("the restored orders are not the writer's first %d: %d is missing", n, id)
				}
			}
			t.Logf("backup %s: %d bytes stored (%d streamed) at %s; %d of the writer's orders restored, %d "+
				"acknowledged at the backup's end", m.Name, m.Size, m.DumpSize, m.GTIDPosition, n, acked)
			if n == 0 || n > acked {
				t.Errorf("restored %d orders; the writer had %d acknowledged when the backup ended", n, acked)
			}

			// The restored server replicates from the source from the returned position: it ends up equal.
			if _, err := db.Exec("SET GLOBAL gtid_slave_pos = ?", restored.GTIDPosition); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, "+
				"MASTER_USER='root', MASTER_USE_GTID=slave_pos", src.Port)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("START SLAVE"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = db.Exec("STOP SLAVE") })
			src.writer.Stop()
			pos := gtidPosition(t, src.db, "gtid_binlog_pos")
			var waited int
			if err := db.QueryRow("SELECT MASTER_GTID_WAIT(?, 60)", pos).Scan(&waited); err != nil || waited != 0 {
				var status string
				_ = db.QueryRow("SELECT CONCAT(Last_SQL_Error, ' ', Last_IO_Error) FROM information_schema.SLAVE_STATUS").Scan(&status)
				t.Fatalf("the restored server did not reach the source's %s from %s: %d, %v %s", pos,
					restored.GTIDPosition, waited, err, status)
			}
			if want, got := checksums(t, src.db), checksums(t, db); !maps.Equal(got, want) {
				t.Errorf("replicating from the restored position: %v, the source %v", got, want)
			}
		})
	}
}

// A data object that is not the manifest's is refused before anything reaches the data directory: another
// backup's well-formed object in its place, and the object with one byte changed.
func TestPhysicalRestoreRefusesAChecksumMismatch(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	store := backup.DirStore{Dir: t.TempDir()}
	first, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical})
	if err != nil {
		t.Fatal(err)
	}
	src.exec(t, "INSERT INTO stock.items VALUES ('later', 1)")
	second, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical})
	if err != nil {
		t.Fatal(err)
	}
	firstData, err := os.ReadFile(filepath.Join(store.Dir, first.Object))
	if err != nil {
		t.Fatal(err)
	}
	secondData, err := os.ReadFile(filepath.Join(store.Dir, second.Object))
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(secondData)
	flipped[len(flipped)/2] ^= 0x40
	for name, data := range map[string][]byte{"swapped": firstData, "one byte changed": flipped} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(store.Dir, second.Object), data, 0o644); err != nil {
				t.Fatal(err)
			}
			dataDir := filepath.Join(t.TempDir(), "data")
			_, err := backup.RestorePhysical(ctx, backup.PhysicalRestoreOptions{Store: store, Name: second.Name,
				DataDir: dataDir, WorkDir: t.TempDir()})
			if !errors.Is(err, backup.ErrChecksumMismatch) {
				t.Fatalf("restore of a %s object: %v, want %v", name, err, backup.ErrChecksumMismatch)
			}
			if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
				t.Errorf("the refused restore wrote %d files into the data directory", len(entries))
			}
		})
	}
	// The first one, untouched, restores, and mariadbd runs on it: without the later row.
	dst, _ := restoreInto(t, backup.PhysicalRestoreOptions{Store: store, Name: first.Name})
	var n int
	if err := dst.OpenRoot().QueryRow("SELECT COUNT(*) FROM stock.items").Scan(&n); err != nil || n != 50 {
		t.Errorf("the first backup restored %d items (%v), want the 50 before the later one", n, err)
	}
}

// A physical backup cut midway, by its upload's end or by the tool's death, is never listed and leaves the
// store as it was.
func TestPhysicalInterruptedBackupIsNeverListed(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	// Incompressible: the stream stays above the cuts below after zstd.
	src.addBlobs(t, 100, 16, 1<<20)
	for _, tt := range targets(t) {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.open(t)
			good, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: backup.Physical})
			if err != nil {
				t.Fatal(err)
			}
			if good.Size < 16<<20 {
				t.Fatalf("the backup is %d bytes, too small to be cut mid-upload", good.Size)
			}
			before := tt.objects(t, store)
			t.Run("upload cancelled", func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				cut := &cutStore{Store: store, after: 11 << 20, cancel: cancel}
				if m, err := backup.Run(cctx, backup.Options{Source: src.conn(), Store: cut,
					Method: backup.Physical}); err == nil {
					t.Fatalf("a backup cut after %d bytes succeeded: %+v", cut.seen.Load(), m)
				}
				if cut.seen.Load() < 11<<20 {
					t.Fatalf("the upload was cut after %d bytes, not midway", cut.seen.Load())
				}
				expectOnly(t, tt, store, good, before)
			})
			t.Run("mariadb-backup killed", func(t *testing.T) {
				conn := src.conn()
				conn.Conn.Path = killingTool(t, "mariadb-backup", 8<<20)
				if m, err := backup.Run(ctx, backup.Options{Source: conn, Store: store, Method: backup.Physical}); err == nil {
					t.Fatalf("a backup whose mariadb-backup was killed succeeded: %+v", m)
				}
				expectOnly(t, tt, store, good, before)
			})
		})
	}
}

// Logical and physical backups share a store: both are listed, each restore takes the newest of its own kind,
// and retention counts them together.
func TestPhysicalAndLogicalShareAStore(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	store := backup.DirStore{Dir: t.TempDir()}
	var taken []*backup.Manifest
	for _, method := range []backup.Method{backup.Physical, backup.Logical, backup.Physical, ""} {
		m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, m)
	}
	listed, err := backup.List(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var methods []backup.Method
	for _, m := range listed {
		methods = append(methods, m.Method)
	}
	if want := []backup.Method{backup.Logical, backup.Physical, backup.Logical, backup.Physical}; !slices.Equal(methods, want) {
		t.Errorf("listed methods %v, want %v", methods, want)
	}
	// The logical restore takes the newest logical backup, the physical one the newest physical.
	fresh := mysqltest.Start(t)
	target := backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}}
	m, err := backup.Restore(ctx, backup.RestoreOptions{Store: store, Target: target})
	if err != nil || m.Name != taken[3].Name {
		t.Errorf("logical restore of %v, %v; want %s", m, err, taken[3].Name)
	}
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Store: store, Name: taken[2].Name,
		Target: target}); err == nil {
		t.Error("a physical backup was loaded through the client")
	}
	_, m = restoreInto(t, backup.PhysicalRestoreOptions{Store: store})
	if m.Name != taken[2].Name {
		t.Errorf("physical restore of %s, want %s", m.Name, taken[2].Name)
	}
	deleted, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(deleted); !slices.Equal(got, []string{taken[1].Name, taken[0].Name}) {
		t.Errorf("pruned %v, want the two oldest", got)
	}
	objs, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{taken[2].Name + ".manifest.json", taken[2].Name + ".xb.zst", taken[3].Name + ".manifest.json",
		taken[3].Name + ".sql.gz"}
	if got := slices.Sorted(slices.Values(keys(objs))); !slices.Equal(got, want) {
		t.Errorf("the store holds %v, want %v", got, want)
	}
}

// A physical backup of another major.minor version is refused before anything is fetched or written; so is a
// data directory that holds anything. No server is needed: the manifest says it all.
func TestPhysicalRestoreRefusesAnotherVersion(t *testing.T) {
	ctx := context.Background()
	store := backup.DirStore{Dir: t.TempDir()}
	manifest := `{"formatVersion": 2, "name": "20261129T030000000Z", "method": "physical",
		"object": "20261129T030000000Z.xb.zst", "engine": "MariaDB", "serverVersion": "10.6.20-MariaDB-log",
		"gtidPosition": "0-1-5", "size": 4, "sha256": "` + strings.Repeat("0", 64) + `", "compression": "zstd"}`
	for key, data := range map[string]string{"20261129T030000000Z.manifest.json": manifest,
		"20261129T030000000Z.xb.zst": "junk"} {
		if err := store.Put(ctx, key, strings.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	_, err := backup.RestorePhysical(ctx, backup.PhysicalRestoreOptions{Store: store, DataDir: dataDir,
		ServerVersion: "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"})
	if !errors.Is(err, backup.ErrVersionMismatch) {
		t.Fatalf("restore of a 10.6 backup into 10.11: %v, want %v", err, backup.ErrVersionMismatch)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused restore made the data directory: %v", err)
	}
	// Same version, but a data directory in use.
	if err := os.MkdirAll(filepath.Join(dataDir, "mysql"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = backup.RestorePhysical(ctx, backup.PhysicalRestoreOptions{Store: store, DataDir: dataDir,
		ServerVersion: "10.6.21-MariaDB"})
	if !errors.Is(err, backup.ErrDataDirNotEmpty) {
		t.Fatalf("restore into a data directory that holds mysql/: %v, want %v", err, backup.ErrDataDirNotEmpty)
	}
}
