package clustering_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// recorder is an Ops that records every call and fails those fail says to.
type recorder struct {
	mu    sync.Mutex
	calls []string
	fail  func(call string) error
}

func (r *recorder) do(format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	if r.fail != nil {
		return r.fail(call)
	}
	return nil
}

func (r *recorder) Status(_ context.Context, i int) (*mysql.Status, error) {
	return nil, r.do("status %d", i)
}
func (r *recorder) Fence(_ context.Context, i int) error { return r.do("fence %d", i) }
func (r *recorder) StopReplicaIO(_ context.Context, i int) error {
	return r.do("stop-replica-io %d", i)
}
func (r *recorder) Replicate(_ context.Context, i int, a clustering.Address) error {
	return r.do("replicate %d from %s", i, a)
}
func (r *recorder) Promote(_ context.Context, i int, s mysql.SemiSync) error {
	return r.do("promote %d wait %d", i, s.WaitForReplicas)
}
func (r *recorder) ConfigureSemiSync(_ context.Context, i int, s mysql.SemiSync) error {
	return r.do("configure-semi-sync %d wait %d", i, s.WaitForReplicas)
}
func (r *recorder) WaitForExecuted(_ context.Context, i, of int, timeout time.Duration) error {
	return r.do("wait %d for %d within %s", i, of, timeout)
}
func (r *recorder) SaveRecord(_ context.Context, rec clustering.Record) error {
	return r.do("save-record %s", rec)
}
func (r *recorder) PurgedGTIDSet(_ context.Context, i int) (mysql.GTIDSet, error) {
	return nil, r.do("purged %d", i)
}
func (r *recorder) Seed(_ context.Context, i, source int) error {
	return r.do("seed %d from %d", i, source)
}
func (r *recorder) Rebuild(_ context.Context, i int, executed mysql.GTIDSet) error {
	return r.do("rebuild %d (%s)", i, executed)
}

func TestExecuteRunsTheSwitchoverInOrder(t *testing.T) {
	g := NewWithT(t)
	d := desired(3, requestPrimary(1))
	plan := clustering.Decide(d, record(0),
		observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")))
	ops := &recorder{}
	g.Expect(clustering.Execute(context.Background(), ops, plan.Steps)).To(Succeed())
	g.Expect(ops.calls).To(Equal([]string{
		"wait 1 for 0 within 10s", "fence 0", "wait 1 for 0 within 1m0s", "save-record primary=1 errant=[]",
		// The other replica follows the target before it takes writes, the old primary after.
		"replicate 2 from db-1:3306", "promote 1 wait 1", "replicate 0 from db-1:3306",
	}))
}

// A replica repointed before a switchover's promotion is given attachTimeout (5 s): one that hangs delays the
// promotion by that much at most.
func TestExecuteBoundsTheRepointingBeforeAPromotion(t *testing.T) {
	g := NewWithT(t)
	plan := clustering.Decide(desired(3, requestPrimary(1)), record(0),
		observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")))
	ops := &deadlines{recorder: &recorder{}, left: map[int]time.Duration{}}
	g.Expect(clustering.Execute(context.Background(), ops, plan.Steps)).To(Succeed())
	g.Expect(ops.left).To(HaveKey(2))
	g.Expect(ops.left[2]).To(BeNumerically("~", 5*time.Second, time.Second))
	g.Expect(ops.left).To(HaveKeyWithValue(0, time.Duration(0)), "the old primary's repointing has no bound of its own")
}

// deadlines is Ops that records, for each Replicate, the time left before its context's deadline (0: none).
type deadlines struct {
	*recorder
	mu   sync.Mutex
	left map[int]time.Duration
}

func (d *deadlines) Replicate(ctx context.Context, i int, a clustering.Address) error {
	var left time.Duration
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.left[i] = left
	d.mu.Unlock()
	return d.recorder.Replicate(ctx, i, a)
}

// barrier is Ops whose StopReplicaIO returns only once n calls have begun, or fails after a while: steps that
// run one after the other never get there.
type barrier struct {
	*recorder
	arrived sync.WaitGroup
}

func (b *barrier) StopReplicaIO(ctx context.Context, i int) error {
	_ = b.recorder.StopReplicaIO(ctx, i)
	b.arrived.Done()
	done := make(chan struct{})
	go func() { b.arrived.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("stop-replica-io %d ran alone", i)
	}
}

// A failover's first pass stops every replica's receiver at once: on MariaDB each STOP SLAVE IO_THREAD may wait
// for a frozen primary (rpl_semi_sync_slave_kill_conn_timeout), and one after the other they add up.
func TestExecuteStopsReceiversAtOnce(t *testing.T) {
	g := NewWithT(t)
	plan := clustering.Decide(desired(4, engine(mysql.MySQL)), record(0), observe(unreachable(),
		my.replica(1, 0, mysqlUUID(0)+":1-10"), my.replica(2, 0, mysqlUUID(0)+":1-10"),
		my.replica(3, 0, mysqlUUID(0)+":1-9")))
	g.Expect(plan.Decision.Kind).To(Equal(clustering.FailoverStarted))
	ops := &barrier{recorder: &recorder{}}
	ops.arrived.Add(3)
	g.Expect(clustering.Execute(context.Background(), ops, plan.Steps)).To(Succeed())
	g.Expect(ops.calls).To(ConsistOf("stop-replica-io 1", "stop-replica-io 2", "stop-replica-io 3"))
}

func TestExecuteStopsAtAFailedCriticalStep(t *testing.T) {
	plan := clustering.Decide(desired(3, requestPrimary(1)), record(0),
		observe(md.primary(0, "0-1-10"), md.replica(1, 0, "0-1-10"), md.replica(2, 0, "0-1-10")))
	// stops: the failed step is critical, and the plan ran exactly ran; otherwise ran, at least, still ran.
	for _, tt := range []struct {
		failing string
		stops   bool
		ran     []string
	}{
		// A target that cannot catch up while the primary is writable: the primary is left alone.
		{"wait 1 for 0 within 10s", true, []string{"wait 1 for 0 within 10s"}},
		// A primary that cannot be fenced must not be replaced: it could still take writes.
		{"fence 0", true, []string{"wait 1 for 0 within 10s", "fence 0"}},
		// A target that did not catch up is not promoted; the old primary stays recorded (and fenced).
		{"wait 1 for 0 within 1m0s", true, []string{"wait 1 for 0 within 10s", "fence 0", "wait 1 for 0 within 1m0s"}},
		// A new primary is never made writable unless the record says it is the primary.
		{"save-record primary=1 errant=[]", true, []string{"wait 1 for 0 within 10s", "fence 0",
			"wait 1 for 0 within 1m0s", "save-record primary=1 errant=[]"}},
		{"promote 1 wait 1", true, []string{"wait 1 for 0 within 10s", "fence 0", "wait 1 for 0 within 1m0s",
			"save-record primary=1 errant=[]", "replicate 2 from db-1:3306", "promote 1 wait 1"}},
		// Repointing one replica does not depend on another, nor does the promotion on a replica's repointing.
		{"replicate 0 from db-1:3306", false, []string{"replicate 2 from db-1:3306"}},
		{"replicate 2 from db-1:3306", false, []string{"promote 1 wait 1", "replicate 0 from db-1:3306"}},
	} {
		t.Run(tt.failing, func(t *testing.T) {
			g := NewWithT(t)
			boom := errors.New("boom")
			ops := &recorder{fail: func(call string) error {
				if call == tt.failing {
					return boom
				}
				return nil
			}}
			g.Expect(clustering.Execute(context.Background(), ops, plan.Steps)).To(MatchError(boom))
			if tt.stops {
				g.Expect(ops.calls).To(Equal(tt.ran))
			} else {
				g.Expect(ops.calls).To(ContainElements(tt.ran))
			}
		})
	}
}

func TestObserveReadsThePrimaryLast(t *testing.T) {
	g := NewWithT(t)
	ops := &recorder{fail: func(call string) error { return errors.New("down") }}
	obs := clustering.Observe(context.Background(), ops, 3, 1, time.Second)
	g.Expect(obs).To(HaveLen(3))
	for _, o := range obs {
		g.Expect(o.Reachable()).To(BeFalse())
		g.Expect(o.Err).To(MatchError("down"))
	}
	// A primary that does not answer is not read again in the pass: a frozen one would cost another timeout.
	g.Expect(ops.calls).To(ConsistOf("status 0", "status 1", "status 2"))

	// A primary that answers is read again, last, after every replica. With replicas that all receive from it,
	// nothing more is read.
	receiving := &mysql.Status{Replica: &mysql.ReplicaStatus{IOState: "Yes"}}
	st := &statusOps{recorder: &recorder{}, status: receiving}
	clustering.Observe(context.Background(), st, 3, 1, time.Second)
	g.Expect(st.calls).To(HaveLen(4))
	g.Expect(st.calls[3]).To(Equal("status 1"))

	// One that does not receive may need more than the primary's binary logs: the primary's purged set is read.
	st = &statusOps{recorder: &recorder{}, status: &mysql.Status{}}
	clustering.Observe(context.Background(), st, 3, 1, time.Second)
	g.Expect(st.calls).To(HaveLen(5))
	g.Expect(st.calls[3:]).To(Equal([]string{"status 1", "purged 1"}))
}

// statusOps answers every status read.
type statusOps struct {
	*recorder
	status *mysql.Status
}

func (s *statusOps) Status(ctx context.Context, i int) (*mysql.Status, error) {
	_, _ = s.recorder.Status(ctx, i)
	return s.status, nil
}
