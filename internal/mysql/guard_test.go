package mysql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A guarded Promote whose guard starts refusing while it waits for the received transactions to apply (its
// caller was paused there and its lease ran out meanwhile) sends nothing after the wait, least of all
// SET read_only = OFF.
func TestGuardedPromoteStopsWhenTheGuardRefusesDuringTheWait(t *testing.T) {
	g := NewWithT(t)
	refused := errors.New("refused")
	m := &mysqlReplica{executed: uuidA + ":1-10", received: uuidA + ":1-12", sqlRunning: "Yes",
		waitResults: []string{"0"}}
	expired := false
	rec := &recorder{answer: func(query string, args []any) ([]Row, error) {
		if strings.HasPrefix(query, "SELECT WAIT_FOR_EXECUTED_GTID_SET") {
			expired = true
		}
		return m.answer(query, args)
	}}
	guard := func() (time.Time, error) {
		if expired {
			return time.Time{}, refused
		}
		return time.Time{}, nil
	}
	err := NewServer(MySQLFlavor{}, rec).Guarded(guard).Promote(context.Background(), SemiSync{WaitForReplicas: 1})
	g.Expect(errors.Is(err, refused)).To(BeTrue(), "got %v", err)
	g.Expect(rec.execs()).To(Equal([]string{"STOP REPLICA IO_THREAD"}))
	g.Expect(m.waitArgs).To(HaveLen(1), "the wait itself is a query and was not refused")
}

// deadlines is a recorder that also records the deadline of every Exec's context.
type deadlines struct {
	*recorder
	seen []time.Time
}

func (d *deadlines) Exec(ctx context.Context, query string, args ...any) error {
	dl, _ := ctx.Deadline()
	d.seen = append(d.seen, dl)
	return d.recorder.Exec(ctx, query, args...)
}

func (d *deadlines) Session(ctx context.Context, fn func(DB) error) error {
	return d.recorder.Session(ctx, func(DB) error { return fn(d) })
}

// Every statement a guarded server sends, in a session too, is asked of the guard first and runs with the
// guard's deadline; queries are not asked.
func TestGuardedServerBoundsEveryStatementByTheGuard(t *testing.T) {
	g := NewWithT(t)
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	asked := 0
	db := &deadlines{recorder: &recorder{}}
	srv := NewServer(MariaDBFlavor{}, db).Guarded(func() (time.Time, error) {
		asked++
		return until, nil
	})
	ctx := context.Background()
	g.Expect(srv.EnsureUserUnlogged(ctx, User{Kind: AdminUser, Name: "admin", Password: "pw"})).To(Succeed())
	g.Expect(srv.SetReadOnly(ctx, false)).To(Succeed())
	_, err := srv.ExecutedGTIDSet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(db.execs()).To(ContainElements("SET SESSION sql_log_bin = 0", "SET GLOBAL read_only = OFF"))
	g.Expect(asked).To(Equal(len(db.execs())))
	g.Expect(db.seen).To(HaveEach(BeTemporally("==", until)))
}
