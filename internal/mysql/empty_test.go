package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// Emptying a fenced server on a real MariaDB: its databases go, the system schemas and accounts stay, it has
// executed nothing and its binary log is empty, the init script's databases are there again, and none of it is
// a transaction of its own. A writable server, or one that executed more than the caller judged, is refused.
func TestEmptyLeavesANewDataDirectory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := mysqltest.Start(t)
	db := s.OpenRoot()
	t.Cleanup(func() { _ = db.Close() })
	run := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	run("SET GLOBAL read_only = OFF", "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY)",
		"INSERT INTO shop.orders VALUES (1), (2)", "CREATE DATABASE other", "CREATE USER app@'%' IDENTIFIED BY 'pw'")
	srv, err := mysql.Open(flavor, s.RootDSN())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Close() })
	executed, err := srv.ExecutedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(executed.IsEmpty()).To(BeFalse())
	init, err := mysql.InitScript(flavor, []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(srv.Empty(ctx, executed, init)).To(MatchError(ContainSubstring("writable")))
	run("SET GLOBAL read_only = ON")
	stale, err := flavor.ParseGTIDSet("0-1-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errors.Is(srv.Empty(ctx, stale, init), mysql.ErrChanged)).To(BeTrue())
	n := 0
	g.Expect(db.QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&n)).To(Succeed())
	g.Expect(n).To(Equal(2), "a refused Empty dropped nothing")

	g.Expect(srv.Empty(ctx, executed, init)).To(Succeed())
	st, err := srv.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Executed.IsEmpty()).To(BeTrue(), "executed %s", st.Executed)
	g.Expect(st.ReadOnly).To(BeTrue())
	g.Expect(st.Replica).To(BeNil())
	var state string
	g.Expect(db.QueryRow("SELECT @@GLOBAL.gtid_binlog_state").Scan(&state)).To(Succeed())
	g.Expect(state).To(BeEmpty(), "the binary log holds nothing: the init script ran out of it")
	var dbs []string
	rows, err := db.Query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1")
	g.Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
		var d string
		g.Expect(rows.Scan(&d)).To(Succeed())
		dbs = append(dbs, d)
	}
	g.Expect(rows.Close()).To(Succeed())
	g.Expect(dbs).To(Equal([]string{"information_schema", "mysql", "performance_schema", "shop", "sys"}))
	g.Expect(db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'").Scan(&n)).To(Succeed())
	g.Expect(n).To(BeZero(), "shop is there again, empty")
	g.Expect(db.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User = 'app'").Scan(&n)).To(Succeed())
	g.Expect(n).To(Equal(1), "the accounts stay")
}

func TestInitStatements(t *testing.T) {
	g := NewWithT(t)
	script, err := mysql.InitScript(mysql.MariaDBFlavor{}, []string{"shop"},
		mysql.User{Kind: mysql.ApplicationUser, Name: "app", Password: "p;w", Database: "shop"})
	g.Expect(err).NotTo(HaveOccurred())
	stmts := mysql.InitStatements(script)
	g.Expect(stmts[0]).To(Equal("SET SESSION sql_log_bin = 0"))
	g.Expect(stmts).To(ContainElement("CREATE DATABASE IF NOT EXISTS `shop`"))
	g.Expect(stmts).To(ContainElement("CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY 'p;w'"))
}

// A replica still applying its source's writes is refused against the set read before, but replication stops
// first: read again, its set holds still, and Empty with it succeeds while the source is still written to.
func TestEmptyStopsReplicationBeforeComparing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	servers := mysqltest.StartN(t, 2)
	src, rep := servers[0].OpenRoot(), servers[1]
	t.Cleanup(func() { _ = src.Close() })
	for _, q := range []string{"SET GLOBAL read_only = OFF", "CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY)"} {
		_, err := src.Exec(q)
		g.Expect(err).NotTo(HaveOccurred(), q)
	}
	flavor := mysql.MariaDBFlavor{}
	srv, err := mysql.Open(flavor, rep.RootDSN())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Close() })
	g.Expect(srv.StartReplicaOf(ctx, mysql.Source{Host: servers[0].Host, Port: servers[0].Port, User: "root"})).To(Succeed())

	stop := make(chan struct{})
	writing := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				writing <- nil
				return
			default:
			}
			if _, err := src.Exec("INSERT INTO shop.orders () VALUES ()"); err != nil {
				writing <- err
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); g.Expect(<-writing).To(Succeed()) })
	g.Eventually(func() bool {
		st, err := srv.Status(ctx)
		return err == nil && st.Replica != nil && st.Replica.Running() && !st.Executed.IsEmpty()
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the replica applies the source's writes")

	before, err := srv.ExecutedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() mysql.GTIDSet {
		now, err := srv.ExecutedGTIDSet(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return now
	}, 30*time.Second, 50*time.Millisecond).ShouldNot(Equal(before), "still applying")
	err = srv.Empty(ctx, before, "")
	g.Expect(errors.Is(err, mysql.ErrChanged)).To(BeTrue(), "refused against the set read before: %v", err)

	st, err := srv.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Replica).NotTo(BeNil())
	g.Expect(st.Replica.IOState).To(Equal("No"), "the refused Empty stopped the receiver")
	g.Expect(st.Replica.SQLRunning).To(BeFalse(), "and the applier")
	g.Expect(srv.Empty(ctx, st.Executed, "")).To(Succeed(), "the set it holds still, read after the stop")
	g.Expect(srv.ExecutedGTIDSet(ctx)).To(Satisfy(mysql.GTIDSet.IsEmpty))
}
