package backup_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// These tests run real mariadbd servers (mysqltest), the real mariadb-dump and mariadb client, and real object
// stores (servers_test.go). They prove the MariaDB flavor; the MySQL flavor's dump and restore have not run
// against a real MySQL 8.4 here.

var flavor = mysql.MariaDBFlavor{}

// target is one kind of store under test, each test getting its own prefix (or directory).
type target struct {
	name string
	// open returns a fresh, empty store.
	open func(t *testing.T) backup.Store
	// objects lists every object the store's server holds for the store, partial or not, as the store's
	// own List might not.
	objects func(t *testing.T, s backup.Store) []string
}

// targets are the stores under test. Their servers start when a test first opens one of their stores, so
// that a test run for the directory alone (-run X/dir) needs none.
func targets(t *testing.T) []target {
	s3Once := sync.OnceValue(func() *s3Server { return startS3(t) })
	gcsOnce := sync.OnceValue(func() *gcsServer { return startGCS(t) })
	var n atomic.Int32
	prefix := func(t *testing.T) string { return fmt.Sprintf("m%d/ns/db-%d", n.Add(1), len(t.Name())) }
	return []target{
		{
			name: "dir",
			open: func(t *testing.T) backup.Store { return backup.DirStore{Dir: filepath.Join(t.TempDir(), "pvc")} },
			objects: func(t *testing.T, s backup.Store) []string {
				var all []string
				_ = filepath.WalkDir(s.(backup.DirStore).Dir, func(p string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						all = append(all, filepath.Base(p))
					}
					return nil
				})
				return all
			},
		},
		{
			name: "s3",
			// Parts of 5 MiB, S3's least, so that the big dump of the interruption test goes in a multipart
			// upload.
			open: func(t *testing.T) backup.Store { return s3Once().store(t, prefix(t), 5<<20) },
			objects: func(t *testing.T, s backup.Store) []string {
				p := strings.TrimPrefix(s.String(), "s3://"+bucket+"/")
				return append(s3Once().keys(t, p), s3Once().uploads(t, p)...)
			},
		},
		{
			name: "gcs",
			open: func(t *testing.T) backup.Store { return gcsOnce().store(t, prefix(t)) },
			objects: func(t *testing.T, s backup.Store) []string {
				objs, err := s.List(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return keys(objs)
			},
		},
	}
}

// source is a MariaDB server with a shop: rows in several tables of two engines, binary data, a stored
// procedure, a function, a trigger and a view.
type source struct {
	*mysqltest.Server
	db *sql.DB
}

func startSource(t *testing.T) *source {
	t.Helper()
	s := &source{Server: mysqltest.Start(t)}
	s.db = s.OpenRoot()
	s.exec(t,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET utf8mb4, note TEXT NULL)",
		"CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer INT NOT NULL, "+
			"amount DECIMAL(10,2), placed DATETIME(6), KEY (customer))",
		"CREATE TABLE shop.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(64)) ENGINE=Aria",
		"CREATE TABLE shop.blobs (id INT PRIMARY KEY, data LONGBLOB)",
		"CREATE DATABASE stock",
		"CREATE TABLE stock.items (sku VARCHAR(32) PRIMARY KEY, qty INT)",
		`CREATE TRIGGER shop.orders_audit AFTER INSERT ON shop.orders FOR EACH ROW
			INSERT INTO shop.audit (what) VALUES (CONCAT('order ', NEW.id))`,
		`CREATE PROCEDURE shop.place_order(IN c INT, IN a DECIMAL(10,2))
			INSERT INTO shop.orders (customer, amount, placed) VALUES (c, a, NOW(6))`,
		`CREATE FUNCTION shop.order_total(c INT) RETURNS DECIMAL(12,2) READS SQL DATA
			RETURN (SELECT COALESCE(SUM(amount), 0) FROM shop.orders WHERE customer = c)`,
		"CREATE VIEW shop.totals AS SELECT customer, SUM(amount) AS total FROM shop.orders GROUP BY customer",
	)
	for i := 1; i <= 50; i++ {
		s.exec(t, fmt.Sprintf("INSERT INTO shop.customers VALUES (%d, 'Kundin %d — Grüße ✓', %s)", i, i,
			map[bool]string{true: "NULL", false: "'it''s a \"note\"\\\\n'"}[i%3 == 0]))
		s.exec(t, fmt.Sprintf("CALL shop.place_order(%d, %d.%02d)", i%7+1, i*3, i%100))
		s.exec(t, fmt.Sprintf("INSERT INTO stock.items VALUES ('sku-%03d', %d)", i, i*i))
	}
	s.addBlobs(t, 1, 4, 1000)
	return s
}

func (s *source) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// addBlobs inserts n rows of size random (incompressible) bytes each, every byte value included.
func (s *source) addBlobs(t *testing.T, first, n, size int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		if _, err := s.db.Exec("INSERT INTO shop.blobs VALUES (?, ?)", i, b); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *source) conn() backup.Source {
	return backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: s.Socket, User: "root"}}
}

// state is what a restore must reproduce: every table's checksum and the routines, triggers and views.
func state(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	rows, err := db.Query(`SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA IN ('shop', 'stock') AND TABLE_TYPE = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, "`"+schema+"`.`"+name+"`")
	}
	_ = rows.Close()
	for _, tbl := range tables {
		var name string
		var sum sql.NullString
		if err := db.QueryRow("CHECKSUM TABLE "+tbl).Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out["table "+tbl] = fmt.Sprintf("checksum %s, %d rows", sum.String, n)
	}
	for _, q := range []string{
		"SELECT CONCAT('routine ', ROUTINE_SCHEMA, '.', ROUTINE_NAME), CONCAT(ROUTINE_TYPE, ' ', ROUTINE_DEFINITION) " +
			"FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA IN ('shop', 'stock')",
		"SELECT CONCAT('trigger ', TRIGGER_SCHEMA, '.', TRIGGER_NAME), ACTION_STATEMENT " +
			"FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA IN ('shop', 'stock')",
		"SELECT CONCAT('view ', TABLE_SCHEMA, '.', TABLE_NAME), VIEW_DEFINITION " +
			"FROM information_schema.VIEWS WHERE TABLE_SCHEMA IN ('shop', 'stock')",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			out[k] = v
		}
		_ = rows.Close()
	}
	return out
}

func gtidPosition(t *testing.T, db *sql.DB, variable string) string {
	t.Helper()
	var pos string
	if err := db.QueryRow("SELECT @@GLOBAL." + variable).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	want := state(t, src.db)
	// Not a test that passes on two empty servers: the shop is there, with its routines.
	for _, k := range []string{"table `shop`.`orders`", "table `shop`.`blobs`", "table `stock`.`items`",
		"routine shop.place_order", "routine shop.order_total", "trigger shop.orders_audit", "view shop.totals"} {
		if _, ok := want[k]; !ok {
			t.Fatalf("the source has no %s: %v", k, want)
		}
	}
	for k, v := range want {
		if strings.HasPrefix(k, "table ") && (strings.HasPrefix(v, "checksum ,") || strings.HasSuffix(v, " 0 rows")) {
			t.Fatalf("%s: %s: the source table must have rows and a checksum", k, v)
		}
	}
	position := gtidPosition(t, src.db, "gtid_binlog_pos")
	if position == "" {
		t.Fatal("the source has written no GTID")
	}

	for _, tt := range targets(t) {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.open(t)
			m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store, Cluster: "orders",
				Namespace: "shop", Member: "eu-1", Pod: "orders-mysql-1"})
			if err != nil {
				t.Fatal(err)
			}
			if m.GTIDPosition != position {
				t.Errorf("manifest GTID position %q, the source is at %q", m.GTIDPosition, position)
			}
			if m.Engine != mysql.MariaDB || !strings.Contains(m.ServerVersion, "MariaDB") || m.Member != "eu-1" ||
				m.Pod != "orders-mysql-1" || m.Size == 0 || m.DumpSize <= m.Size/2 {
				t.Errorf("manifest %+v", m)
			}
			listed, err := backup.List(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			if len(listed) != 1 || listed[0].Name != m.Name || listed[0].SHA256 != m.SHA256 {
				t.Fatalf("listed %+v, want the one backup %s", listed, m.Name)
			}

			fresh := mysqltest.Start(t)
			freshDB := fresh.OpenRoot()
			if got := state(t, freshDB); len(got) != 0 {
				t.Fatalf("the fresh server is not empty: %v", got)
			}
			restored, err := backup.Restore(ctx, backup.RestoreOptions{Store: store,
				Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}}})
			if err != nil {
				t.Fatal(err)
			}
			if restored.Name != m.Name {
				t.Errorf("restored %s, want the newest %s", restored.Name, m.Name)
			}
			got := state(t, freshDB)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: restored %q, source %q", k, got[k], v)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: restored, not in the source", k)
				}
			}
			// The restored server knows where the source was: it could replicate from there.
			if got := gtidPosition(t, freshDB, "gtid_slave_pos"); got != position {
				t.Errorf("restored gtid_slave_pos %q, want %q", got, position)
			}
			// The restored routines run.
			var total string
			if err := freshDB.QueryRow("SELECT shop.order_total(3)").Scan(&total); err != nil || total == "0.00" {
				t.Errorf("shop.order_total(3) on the restored server: %q, %v", total, err)
			}
		})
	}
}

// cutReader cancels a context once n bytes went through it, as a killed Pod or a Job's deadline would end an
// upload midway.
type cutStore struct {
	backup.Store
	after  int64
	cancel context.CancelFunc
	seen   atomic.Int64
}

func (c *cutStore) Put(ctx context.Context, key string, r io.Reader) error {
	return c.Store.Put(ctx, key, &cutReader{r: r, s: c})
}

type cutReader struct {
	r io.Reader
	s *cutStore
}

func (c *cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.s.seen.Add(int64(n)) >= c.s.after {
		c.s.cancel()
	}
	return n, err
}

// killingTool is the tool NAME (mariadb-dump, mariadb-backup), killed after it wrote AFTER bytes of its output.
func killingTool(t *testing.T, name string, after int) string {
	t.Helper()
	real, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (%v): run hack/install-deps.sh", name, err)
	}
	p := filepath.Join(t.TempDir(), name)
	script := fmt.Sprintf("#!/bin/sh\n%q \"$@\" | head -c %d\nkill -KILL $$\n", real, after)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInterruptedBackupIsNeverListed(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	// 12 MiB of random bytes: more than two 5 MiB parts after compression, so that S3 gets a multipart upload
	// and the cut comes after parts were uploaded.
	src.addBlobs(t, 100, 12, 1<<20)

	for _, tt := range targets(t) {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.open(t)
			good, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
			if err != nil {
				t.Fatal(err)
			}
			if good.Size < 12<<20 {
				t.Fatalf("the dump is %d bytes, too small to be cut mid-upload", good.Size)
			}
			before := tt.objects(t, store)

			t.Run("upload cancelled", func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				cut := &cutStore{Store: store, after: 11 << 20, cancel: cancel}
				if m, err := backup.Run(cctx, backup.Options{Source: src.conn(), Store: cut}); err == nil {
					t.Fatalf("a backup cut after %d bytes succeeded: %+v", cut.seen.Load(), m)
				}
				if cut.seen.Load() < 11<<20 {
					t.Fatalf("the upload was cut after %d bytes, not midway", cut.seen.Load())
				}
				expectOnly(t, tt, store, good, before)
			})
			t.Run("dump killed", func(t *testing.T) {
				conn := src.conn()
				conn.Conn.Path = killingTool(t, "mariadb-dump", 8<<20)
				if m, err := backup.Run(ctx, backup.Options{Source: conn, Store: store}); err == nil {
					t.Fatalf("a backup whose dump tool was killed succeeded: %+v", m)
				}
				expectOnly(t, tt, store, good, before)
			})
		})
	}
}

// expectOnly checks that the store lists only the good backup and that its server holds no more than before.
func expectOnly(t *testing.T, tt target, store backup.Store, good *backup.Manifest, before []string) {
	t.Helper()
	listed, err := backup.List(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != good.Name {
		t.Errorf("listed %v, want only %s", names(listed), good.Name)
	}
	if after := tt.objects(t, store); !slices.Equal(slices.Sorted(slices.Values(after)), slices.Sorted(slices.Values(before))) {
		t.Errorf("the store holds %v, before the interrupted backup %v", after, before)
	}
}

func keys(objs []backup.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func names(ms []backup.Manifest) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestRetentionKeepsExactlyN(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	for _, tt := range targets(t) {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.open(t)
			var taken []string
			for i := range 5 {
				src.exec(t, fmt.Sprintf("REPLACE INTO stock.items VALUES ('retention-%d', %d)", i, i))
				m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
				if err != nil {
					t.Fatal(err)
				}
				taken = append(taken, m.Name)
			}
			// A data object without a manifest, older than the newest backup: left by a backup killed before
			// its manifest, or a run's still in progress.
			before := time.Now()
			if err := store.Put(ctx, "20000101T000000000Z.sql.gz", strings.NewReader("partial")); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			// The store dates it, by its server's clock (this machine's here; S3 keeps whole seconds).
			objs, err := store.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(objs, func(o backup.Object) bool { return o.Key == "20000101T000000000Z.sql.gz" })
			if i < 0 {
				t.Fatalf("the store lists %v", keys(objs))
			}
			if lm := objs[i].LastModified; lm.Before(before.Add(-5*time.Second)) || lm.After(after.Add(5*time.Second)) {
				t.Errorf("the object written between %v and %v is dated %v", before, after, lm)
			}
			// Just written, it may be a run's waiting for its manifest: a prune now keeps it.
			if deleted, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 5}); err != nil || len(deleted) != 0 {
				t.Fatalf("pruned %v, %v; want nothing", names(deleted), err)
			}
			if objs, err := store.List(ctx); err != nil || !slices.Contains(keys(objs), "20000101T000000000Z.sql.gz") {
				t.Fatalf("a prune deleted data that may be in flight: the store lists %v, %v", keys(objs), err)
			}
			// It is pruned once no run can still be writing it: a clock past the runs' bound shows that.
			later := func() time.Time { return time.Now().Add(backup.DefaultMaxRunDuration + 2*time.Hour) }
			deleted, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 2, Now: later})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(deleted); !slices.Equal(got, []string{taken[2], taken[1], taken[0]}) {
				t.Errorf("pruned %v, want the three oldest of %v", got, taken)
			}
			listed, err := backup.List(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(listed); !slices.Equal(got, []string{taken[4], taken[3]}) {
				t.Errorf("kept %v, want the two newest of %v", got, taken)
			}
			want := []string{taken[3] + ".manifest.json", taken[3] + ".sql.gz", taken[4] + ".manifest.json",
				taken[4] + ".sql.gz"}
			objs, err = store.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(slices.Values(keys(objs))); !slices.Equal(got, want) {
				t.Errorf("the store holds %v, want %v", got, want)
			}
			// Pruning again deletes nothing.
			if deleted, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 2, Now: later}); err != nil || len(deleted) != 0 {
				t.Errorf("a second prune deleted %v, %v", names(deleted), err)
			}
		})
	}
}

func TestRestoreRefusesAChecksumMismatch(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	store := backup.DirStore{Dir: t.TempDir()}
	first, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	src.exec(t, "INSERT INTO stock.items VALUES ('later', 1)")
	second, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	// Swap the second backup's data for the first's: a well-formed dump, just not the one the manifest names.
	data, err := os.ReadFile(filepath.Join(store.Dir, first.Object))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, second.Object, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	fresh := mysqltest.Start(t)
	_, err = backup.Restore(ctx, backup.RestoreOptions{Store: store, Name: second.Name,
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}}})
	if !errors.Is(err, backup.ErrChecksumMismatch) {
		t.Fatalf("restore of a swapped object: %v, want %v", err, backup.ErrChecksumMismatch)
	}
	// The first one, untouched, restores.
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Store: store, Name: first.Name,
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}}}); err != nil {
		t.Fatal(err)
	}
}

// A backup restored into the primary of a new set becomes that set's own history: every table, routine,
// trigger and view of the source, none of its accounts, no claim to its GTID position; and a replica of the new
// primary, replicating from an empty data directory, gets all of it.
func TestRestoreIntoANewClusterReplicates(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	src.exec(t, "CREATE USER 'source_only'@'%' IDENTIFIED BY 'x'")
	want := state(t, src.db)
	store := backup.DirStore{Dir: filepath.Join(t.TempDir(), "pvc")}
	if _, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store}); err != nil {
		t.Fatal(err)
	}

	servers := mysqltest.StartN(t, 2)
	primary, replica := servers[0].OpenRoot(), servers[1].OpenRoot()
	for _, db := range []*sql.DB{primary, replica} {
		if _, err := db.Exec("SET GLOBAL read_only = OFF"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Store: store, NewCluster: true,
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: servers[0].Socket, User: "root"}}}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := primary.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User = 'source_only'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the source's account came along: %d, %v", n, err)
	}
	if got := gtidPosition(t, primary, "gtid_slave_pos"); got != "" {
		t.Errorf("the new primary claims the source's position %q", got)
	}
	if got := gtidPosition(t, primary, "gtid_binlog_pos"); got == "" {
		t.Error("the restore is not in the new primary's binary log: its replicas could not get it")
	}

	// The replica starts empty and replicates from the new primary's first transaction.
	if _, err := replica.Exec(fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, "+
		"MASTER_USER='root', MASTER_USE_GTID=slave_pos", servers[0].Port)); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Exec("START SLAVE"); err != nil {
		t.Fatal(err)
	}
	binlogPos := gtidPosition(t, primary, "gtid_binlog_pos")
	if _, err := replica.Exec("SELECT MASTER_GTID_WAIT(?, 60)", binlogPos); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*sql.DB{"primary": primary, "replica": replica} {
		got := state(t, db)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s: %q, source %q", name, k, got[k], v)
			}
		}
	}
}
