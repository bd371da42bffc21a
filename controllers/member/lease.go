package member

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// ErrLeaseMayHaveExpired refuses a change to a server, a record or a role label: the leader election Lease
// may have passed to another replica of the controller (see the package documentation).
var ErrLeaseMayHaveExpired = errors.New("refused: the leader election lease may have passed to another replica")

var actionsRefusedTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "mysqlfleet_member_actions_refused_total",
	Help: "Changes to servers, records or role labels the member controller refused because its leader " +
		"election lease may have passed to another replica.",
})

func init() { ctrlmetrics.Registry.MustRegister(actionsRefusedTotal) }

// leaseLock is client-go's LeaseLock, as controller-runtime would build it, that also remembers when this
// process last renewed the Lease: Check says whether it may still act.
type leaseLock struct {
	resourcelock.Interface
	// window is how long after the start of its last successful renewal this process may act: the renew
	// deadline, shorter than what a standby waits before it takes over (the lease duration in whole seconds).
	window time.Duration
	clock  clock.PassiveClock

	mu sync.Mutex
	// renewed is when the last successful write of the Lease naming this process began; zero before the
	// first one and from the moment the Lease is released.
	renewed time.Time
	// transitions is the Lease's leaderTransitions as that write left it.
	transitions int
	// events records the leader election's Events once the manager exists.
	events events.EventRecorder
}

// newLeaseLock builds the Lease lock for leader election with the manager's timings, identity and client
// timeout as controller-runtime's leaderelection.NewResourceLock would.
func newLeaseLock(cfg *rest.Config, namespace, name string, leaseDuration, renewDeadline time.Duration) (
	*leaseLock, error) {
	if renewDeadline >= leaseDuration.Truncate(time.Second) {
		return nil, fmt.Errorf("the leader election renew deadline %s must be shorter than the lease duration %s "+
			"in whole seconds, which is what a standby waits before it takes over", renewDeadline, leaseDuration)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// One hung request must not cost the leadership.
	cfg.Timeout = max(renewDeadline/2, time.Second)
	c, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	l := &leaseLock{window: renewDeadline, clock: clock.RealClock{}}
	l.Interface, err = resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, nil, c,
		resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID()), EventRecorder: l})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Create and Update are the leader election's writes of the Lease.
func (l *leaseLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.Interface.Create)
}

func (l *leaseLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.Interface.Update)
}

// write makes a write that names this process the holder count from the moment it was sent, once it has
// succeeded: the standbys start waiting no earlier than that. A write that names no holder releases the
// Lease; from the moment it is sent a standby may take over, so the guard closes before it.
func (l *leaseLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord,
	write func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	ours := ler.HolderIdentity == l.Identity()
	if !ours {
		l.mu.Lock()
		l.renewed = time.Time{}
		l.mu.Unlock()
	}
	start := l.clock.Now()
	if err := write(ctx, ler); err != nil {
		return err
	}
	if ours {
		l.mu.Lock()
		if start.After(l.renewed) {
			l.renewed, l.transitions = start, ler.LeaderTransitions
		}
		l.mu.Unlock()
	}
	return nil
}

// Check tells whether this process may still change servers: nil while less than the window has passed since
// the start of its last successful renewal of the Lease, ErrLeaseMayHaveExpired otherwise. Without leader
// election (a nil leaseLock) it always passes.
func (l *leaseLock) Check() error {
	_, err := l.until()
	return err
}

// until is Check, and the moment the window closes.
func (l *leaseLock) until() (time.Time, error) {
	if l == nil {
		return time.Time{}, nil
	}
	l.mu.Lock()
	renewed := l.renewed
	l.mu.Unlock()
	until := renewed.Add(l.window)
	if renewed.IsZero() || !l.clock.Now().Before(until) {
		actionsRefusedTotal.Inc()
		return time.Time{}, ErrLeaseMayHaveExpired
	}
	return until, nil
}

// guard is the guard of the servers' statements (clustering.ServerOps.Guard), nil without leader election.
func (l *leaseLock) guard() mysql.Guard {
	if l == nil {
		return nil
	}
	return l.until
}

// storeGuard refuses, like guard, what the binary-log archive stores once the Lease may have passed to a
// standby; nil without leader election.
func (l *leaseLock) storeGuard() func() error {
	if l == nil {
		return nil
	}
	return func() error {
		_, err := l.until()
		return err
	}
}

// term is the Lease's leaderTransitions as this process last wrote it, nil without leader election.
func (l *leaseLock) term() *int {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.transitions
	return &t
}

// useEvents makes the leader election's Events go through r, the manager's recorder.
func (l *leaseLock) useEvents(r events.EventRecorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = r
}

// Eventf is the LeaseLock's event recorder: it passes the Events on once the manager has a recorder.
func (l *leaseLock) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	l.mu.Lock()
	r := l.events
	l.mu.Unlock()
	if r != nil {
		r.Eventf(obj, nil, eventType, reason, "LeaderElection", message, args...)
	}
}

var _ resourcelock.EventRecorder = (*leaseLock)(nil)
