package clustering_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// statements is a mysql.DB that records what it is sent and answers no rows.
type statements struct{ sent []string }

func (s *statements) Exec(_ context.Context, query string, _ ...any) error {
	s.sent = append(s.sent, query)
	return nil
}

func (s *statements) Query(_ context.Context, query string, _ ...any) ([]mysql.Row, error) {
	s.sent = append(s.sent, query)
	return nil, nil
}

func (s *statements) Session(_ context.Context, fn func(mysql.DB) error) error { return fn(s) }

// Once the guard refuses, every operation that changes an instance or the record is refused with its error
// before anything is sent, saved or started.
func TestServerOpsRefuseEveryChangeOnceTheGuardDoes(t *testing.T) {
	g := NewWithT(t)
	expired := errors.New("lease may have expired")
	db := &statements{}
	var called []string
	ops := &clustering.ServerOps{
		Servers: []*mysql.Server{mysql.NewServer(mysql.MariaDBFlavor{}, db)},
		Guard:   func() (time.Time, error) { return time.Time{}, expired },
		Save: func(context.Context, clustering.Record) error {
			called = append(called, "save")
			return nil
		},
		SeedWith: func(context.Context, int, int) error {
			called = append(called, "seed")
			return nil
		},
	}
	ctx := context.Background()
	semi := mysql.SemiSync{WaitForReplicas: 1}
	for name, op := range map[string]func() error{
		"fence":               func() error { return ops.Fence(ctx, 0) },
		"stop-replica-io":     func() error { return ops.StopReplicaIO(ctx, 0) },
		"replicate":           func() error { return ops.Replicate(ctx, 0, clustering.Address{Host: "db-1", Port: 3306}) },
		"promote":             func() error { return ops.Promote(ctx, 0, semi) },
		"configure-semi-sync": func() error { return ops.ConfigureSemiSync(ctx, 0, semi) },
		"save-record":         func() error { return ops.SaveRecord(ctx, clustering.Record{}) },
		"seed":                func() error { return ops.Seed(ctx, 0, 1) },
	} {
		g.Expect(op()).To(MatchError(expired), name)
	}
	g.Expect(db.sent).To(BeEmpty())
	g.Expect(called).To(BeEmpty())
}
