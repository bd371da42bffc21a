package mysql_test

import (
	"context"
	"errors"
	"testing"

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
