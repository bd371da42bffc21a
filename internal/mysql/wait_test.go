package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// A switchover target that lacks a whole (domain, server_id) run of the primary is not caught up, though its
// position in the domain is as far as the primary's: MariaDB positions keep one GTID per domain, and waiting by
// position would promote a server without that run (as one that skipped a former server's transactions is).
func TestWaitForGTIDNeedsEveryRunNotJustThePosition(t *testing.T) {
	ctx := context.Background()
	servers := mysqltest.StartN(t, 2)
	open := func(s *mysqltest.Server, state string) *mysql.Server {
		db := s.OpenRoot()
		defer func() { _ = db.Close() }()
		for _, stmt := range []string{"RESET MASTER", "SET GLOBAL gtid_binlog_state = '" + state + "'"} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		srv, err := mysql.Open(flavor, s.RootDSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		return srv
	}
	// Server 1 wrote up to 5, then server 2 up to 10, in domain 0.
	primary := open(servers[0], "0-1-5,0-2-10")
	target := open(servers[1], "0-2-10")
	want, err := primary.ExecutedGTIDSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := target.WaitForGTID(ctx, want, 2*time.Second); !errors.Is(err, mysql.ErrTimeout) {
		t.Fatalf("a target without server 1's run was taken as caught up with %s: %v", want, err)
	}

	target = open(servers[1], "0-1-5,0-2-10")
	if err := target.WaitForGTID(ctx, want, 2*time.Second); err != nil {
		t.Fatalf("a target holding %s was not taken as caught up: %v", want, err)
	}
}

// A limit of semi-sync on MariaDB, which docs/member.md states: an acknowledgement means the replica received the
// transaction into its relay log, and a replica that restarts in GTID mode discards its relay log and starts
// again from what it applied (gtid_slave_pos). Acknowledged transactions it had not applied are then on the
// primary only, and losing the primary too (a second fault) loses them.
func TestMariaDBReplicaRestartDiscardsWhatItHadNotApplied(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2, mysql.SemiSync{WaitForReplicas: 1})
	root := c.servers[1].OpenRoot()
	if _, err := root.Exec("STOP SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	_ = root.Close()
	c.insertRows(0, 1, 5) // each acknowledged by server 1, which receives them and applies nothing
	st := c.status(1)
	if st.Replica == nil || st.Replica.Received == nil || !st.Replica.Received.Contains(c.status(0).Executed) {
		t.Fatalf("server 1 did not receive the acknowledged rows: %s", c.describe(1))
	}

	c.servers[1].Restart()
	c.servers[0].Kill()
	st = c.status(1)
	if st.Replica == nil || (st.Replica.Received != nil && !st.Replica.Received.IsEmpty()) {
		t.Fatalf("after its restart server 1 still knows what it received: %s", c.describe(1))
	}
	if err := c.admin[1].StartReplica(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the applier has nothing to apply: its relay log was discarded
	var n int
	if err := c.app(1).QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("server 1 applied %d of the 5 acknowledged rows after its restart: MariaDB kept its relay log", n)
	}
}
