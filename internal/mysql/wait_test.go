package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql/mysqltest"
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
