package backup_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

const (
	seedAdmin         = "mysqlfleet_admin"
	seedAdminPassword = `adm'n"pw`
	seedRepl          = "mysqlfleet_repl"
	seedReplPassword  = "repl-pw"
)

// replicated makes s a server of a replicated set as the member controller finds it: the admin and
// replication accounts made out of the binary log (as the rendered init script makes them), and the admin's
// connection.
func replicated(t *testing.T, s *mysqltest.Server) *mysql.Server {
	t.Helper()
	ctx := context.Background()
	root, err := mysql.Open(flavor, s.RootDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	for _, u := range []mysql.User{
		{Kind: mysql.AdminUser, Name: seedAdmin, Password: seedAdminPassword},
		{Kind: mysql.ReplicationUser, Name: seedRepl, Password: seedReplPassword},
	} {
		if err := root.EnsureUserUnlogged(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := mysql.Open(flavor, s.DSN(seedAdmin, seedAdminPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

func replicationSource(s *mysqltest.Server) mysql.Source {
	return mysql.Source{Host: s.Host, Port: s.Port, User: seedRepl, Password: seedReplPassword,
		ConnectRetry: time.Second}
}

// An empty server cannot catch up from a primary whose binary logs were purged (MariaDB answers error 1236);
// seeded with a dump of a replica taken while the primary takes writes, it replicates from the primary, holds
// exactly what the primary holds, has no errant transaction, and tells a later replica through its own binary
// log that it does not hold the history before the dump. A server that holds transactions is never seeded.
func TestSeedAnEmptyReplicaFromADump(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	servers := mysqltest.StartN(t, 3)
	p, r, fresh := servers[0], servers[1], servers[2]
	admin := []*mysql.Server{replicated(t, p), replicated(t, r), replicated(t, fresh)}
	g.Expect(admin[0].Promote(ctx, mysql.SemiSync{WaitForReplicas: 1})).To(Succeed())
	g.Expect(admin[1].StartReplicaOf(ctx, replicationSource(p))).To(Succeed())

	db := p.OpenRoot()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, note VARCHAR(64))",
		"CREATE PROCEDURE shop.place(IN i INT) INSERT INTO shop.orders VALUES (i, 'placed')",
	} {
		_, err := db.Exec(q)
		g.Expect(err).NotTo(HaveOccurred(), q)
	}
	insert := func(from, to int) {
		for id := from; id <= to; id++ {
			_, err := db.Exec("CALL shop.place(?)", id)
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	insert(1, 20)
	purged, err := admin[0].PurgedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(purged.IsEmpty()).To(BeTrue(), "nothing purged yet: %s", purged)
	// Purge the primary's binary logs up to now: what it executed so far is gone from them.
	before, err := admin[0].ExecutedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	p.PurgeBinaryLogs()
	insert(21, 30)
	purged, err = admin[0].PurgedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(purged.String()).To(Equal(before.String()))

	// The motivating failure: pointed at the primary, the empty server cannot get what was purged.
	g.Expect(admin[2].StartReplicaOf(ctx, replicationSource(p))).To(Succeed())
	g.Eventually(func() int {
		st, err := admin[2].Status(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return st.Replica.LastIOErrno
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(1236))

	// Seed it from the replica, as the admin, while the primary takes writes.
	var wg sync.WaitGroup
	wg.Go(func() { insert(31, 60) })
	res, err := backup.Seed(ctx, backup.SeedOptions{
		Source: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Host: r.Host, Port: r.Port, User: seedAdmin},
			Password: seedAdminPassword},
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}},
	})
	wg.Wait()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Position).NotTo(BeEmpty())
	g.Expect(res.DumpSize).To(BeNumerically(">", 0))
	st, err := admin[2].Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Replica).To(BeNil(), "the seed forgot the failed replication")
	g.Expect(st.Executed.String()).To(Equal(res.Executed))
	g.Expect(st.Executed.Contains(purged)).To(BeTrue(), "the seed holds what the primary purged")
	// Its binary log says that it does not hold what the dump brought: a later empty replica of it is seeded too.
	own, err := admin[2].PurgedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(own.String()).To(Equal(res.Executed))

	g.Expect(admin[2].StartReplicaOf(ctx, replicationSource(p))).To(Succeed())
	insert(61, 70)
	primary, err := admin[0].Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(admin[2].WaitForGTID(ctx, primary.Executed, time.Minute)).To(Succeed())
	g.Expect(orders(g, fresh.OpenRoot())).To(Equal(orders(g, db)))
	g.Expect(orders(g, fresh.OpenRoot())).To(HavePrefix("70 rows"))
	st, err = admin[2].Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Replica.Running()).To(BeTrue(), "%+v", st.Replica)
	g.Expect(mysql.ErrantTransactions(st.Executed, primary.Executed, primary.SourceID).IsEmpty()).To(BeTrue())
	var place int
	g.Expect(fresh.OpenRoot().QueryRow("SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_NAME = 'place'").
		Scan(&place)).To(Succeed())
	g.Expect(place).To(Equal(1))

	// Now it holds transactions: seeding it again is refused before anything is loaded.
	_, err = db.Exec("CREATE TABLE shop.after (id INT PRIMARY KEY)")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = backup.Seed(ctx, backup.SeedOptions{
		Source: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: r.Socket, User: "root"}},
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}},
	})
	g.Expect(errors.Is(err, mysql.ErrHoldsTransactions)).To(BeTrue(), "%v", err)
	st, err = admin[2].Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Replica).NotTo(BeNil(), "the refused seed left its replication alone")
}

// orders is the rows of shop.orders and their checksum.
func orders(g Gomega, db *sql.DB) string {
	var n int
	var sum sql.NullString
	g.Expect(db.QueryRow("SELECT COUNT(*), SUM(CRC32(CONCAT_WS(',', id, note))) FROM shop.orders").Scan(&n, &sum)).
		To(Succeed())
	return fmt.Sprintf("%d rows, checksum %s", n, sum.String)
}
