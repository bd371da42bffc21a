package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// The real-server tests run MariaDB 10.11 processes (mysqltest) and drive them only through this package's
// Server operations, as the member controller will. They prove the MariaDB flavor; the MySQL flavor is not
// run here (see MySQLFlavor).

const (
	adminUser = "fleet-admin"
	// Quotes and backslashes make the quoting of passwords in CREATE USER and CHANGE MASTER part of every
	// test.
	adminPassword = `adm'n\pw`
	replUser      = "repl"
	replPassword  = `re"pl'pw`
	appUser       = "shop"
	appPassword   = "shop-pw"
	appDatabase   = "shop_db"

	waitTimeout = 60 * time.Second
)

var flavor = mysql.MariaDBFlavor{}

// cluster is a primary and its replicas on loopback, formed with the package's own operations.
type cluster struct {
	t       *testing.T
	servers []*mysqltest.Server
	// admin are the member controller's connections, one per server, as the admin user over TCP.
	admin []*mysql.Server
}

// newCluster starts n servers, bootstraps the admin and replication users on each (as a Pod's init would,
// without binary log), makes server 0 the primary with semi-sync configured by semi, the others its replicas,
// and creates the application user and database on the primary, whence they replicate.
func newCluster(t *testing.T, n int, semi mysql.SemiSync) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{t: t, servers: mysqltest.StartN(t, n)}
	for _, s := range c.servers {
		root, err := mysql.Open(flavor, s.RootDSN())
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []mysql.User{
			{Kind: mysql.AdminUser, Name: adminUser, Password: adminPassword},
			{Kind: mysql.ReplicationUser, Name: replUser, Password: replPassword},
		} {
			if err := root.EnsureUserUnlogged(ctx, u); err != nil {
				t.Fatalf("failed to bootstrap user %s on server %d: %v", u.Name, s.ServerID, err)
			}
		}
		_ = root.Close()
		admin, err := mysql.Open(flavor, s.DSN(adminUser, adminPassword))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Close() })
		c.admin = append(c.admin, admin)
	}
	if err := c.admin[0].Promote(ctx, semi); err != nil {
		t.Fatalf("failed to make server 0 the primary: %v", err)
	}
	for i := 1; i < n; i++ {
		if err := c.admin[i].StartReplicaOf(ctx, c.source(0)); err != nil {
			t.Fatalf("failed to make server %d a replica: %v", i, err)
		}
	}
	// After the replicas: with semi-sync on, these commits wait for one of them.
	err := c.admin[0].EnsureUser(ctx, mysql.User{Kind: mysql.ApplicationUser, Name: appUser,
		Password: appPassword, Database: appDatabase})
	if err != nil {
		t.Fatalf("failed to create the application user: %v", err)
	}
	c.exec(0, "CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(64) NOT NULL, server INT NOT NULL)")
	c.waitReplicas(0)
	return c
}

// source is how replicas reach server i.
func (c *cluster) source(i int) mysql.Source {
	s := c.servers[i]
	return mysql.Source{Host: s.Host, Port: s.Port, User: replUser, Password: replPassword,
		ConnectRetry: time.Second}
}

// app opens a connection pool to server i as the application user, in its database.
func (c *cluster) app(i int) *sql.DB {
	c.t.Helper()
	db, err := sql.Open("mysql", c.servers[i].DSN(appUser, appPassword)+appDatabase)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = db.Close() })
	return db
}

// exec runs statements on server i as the application user and fails the test on error.
func (c *cluster) exec(i int, stmts ...string) {
	c.t.Helper()
	db := c.app(i)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			c.t.Fatalf("server %d: %s: %v", i, s, err)
		}
	}
}

// insertRows commits n rows on server i, one transaction each, ids from first.
func (c *cluster) insertRows(i, first, n int) {
	c.t.Helper()
	db := c.app(i)
	for id := first; id < first+n; id++ {
		if _, err := db.Exec("INSERT INTO orders VALUES (?, ?, ?)", id, fmt.Sprintf("item-%d", id),
			c.servers[i].ServerID); err != nil {
			c.t.Fatalf("server %d: insert %d: %v", i, id, err)
		}
	}
}

// content summarises the orders table on server i: row count and a checksum of every row.
func (c *cluster) content(i int) string {
	c.t.Helper()
	var count int
	var sum sql.NullString
	err := c.app(i).QueryRow("SELECT COUNT(*), SUM(CRC32(CONCAT_WS(',', id, item, server))) FROM orders").
		Scan(&count, &sum)
	if err != nil {
		c.t.Fatalf("server %d: %v", i, err)
	}
	return fmt.Sprintf("%d rows, checksum %s", count, sum.String)
}

// waitReplicas waits until every other server has applied what primary has executed.
func (c *cluster) waitReplicas(primary int) {
	c.t.Helper()
	ctx := context.Background()
	executed, err := c.admin[primary].ExecutedGTIDSet(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	for i, admin := range c.admin {
		if i == primary {
			continue
		}
		if err := admin.WaitForGTID(ctx, executed, waitTimeout); err != nil {
			c.t.Fatalf("server %d did not apply %s: %v\n%s", i, executed, err, c.describe(i))
		}
	}
}

func (c *cluster) status(i int) *mysql.Status {
	c.t.Helper()
	st, err := c.admin[i].Status(context.Background())
	if err != nil {
		c.t.Fatalf("server %d: %v", i, err)
	}
	return st
}

// describe is server i's replication state and error log, for failure messages.
func (c *cluster) describe(i int) string {
	st, err := c.admin[i].Status(context.Background())
	if err != nil {
		return fmt.Sprintf("server %d: %v", i, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server %d: role %s, read-only %t, executed %s\n", i, st.Role, st.ReadOnly, st.Executed)
	if r := st.Replica; r != nil {
		fmt.Fprintf(&b, "  replica of %s:%d io=%s sql=%t io error %d %q sql error %d %q received %s\n",
			r.SourceHost, r.SourcePort, r.IOState, r.SQLRunning, r.LastIOErrno, r.LastIOError, r.LastSQLErrno,
			r.LastSQLError, r.Received)
	}
	fmt.Fprintf(&b, "  error log:\n%s", c.servers[i].ErrorLog())
	return b.String()
}

// eventually polls cond until it holds or the wait times out.
func (c *cluster) eventually(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
