package member

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLock is a resourcelock.Interface whose writes take took on the clock and fail with fail.
type fakeLock struct {
	resourcelock.Interface
	clock  *clocktesting.FakePassiveClock
	took   time.Duration
	fail   error
	during func()
}

func (f *fakeLock) Identity() string { return "me" }

func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	if f.during != nil {
		f.during()
	}
	f.clock.SetTime(f.clock.Now().Add(f.took))
	return f.fail
}

func (f *fakeLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return f.Update(ctx, ler)
}

func newTestLease(window time.Duration) (*leaseLock, *fakeLock) {
	c := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &fakeLock{clock: c}
	return &leaseLock{Interface: f, window: window, clock: c}, f
}

func refusedSoFar(g Gomega) float64 {
	m := &dto.Metric{}
	g.Expect(actionsRefusedTotal.Write(m)).To(Succeed())
	return m.GetCounter().GetValue()
}

func ours(transitions int) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 4,
		LeaderTransitions: transitions}
}

// The window runs from the moment the last successful renewal was sent, not from its answer: a standby may
// have started waiting as soon as it reached the API server.
func TestLeaseGuardCountsFromTheStartOfTheLastRenewal(t *testing.T) {
	g := NewWithT(t)
	l, f := newTestLease(3 * time.Second)
	g.Expect(l.Check()).To(MatchError(ErrLeaseMayHaveExpired), "before the Lease was ever taken")

	f.took = time.Second
	sent := f.clock.Now()
	g.Expect(l.Create(context.Background(), ours(2))).To(Succeed())
	until, err := l.until()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(until).To(Equal(sent.Add(3 * time.Second)))
	g.Expect(*l.term()).To(Equal(2))

	f.clock.SetTime(sent.Add(3*time.Second - time.Millisecond))
	g.Expect(l.Check()).To(Succeed())
	refused := refusedSoFar(g)
	f.clock.SetTime(sent.Add(3 * time.Second))
	g.Expect(l.Check()).To(MatchError(ErrLeaseMayHaveExpired))
	g.Expect(refusedSoFar(g)).To(Equal(refused + 1))

	// A failed renewal extends nothing; a successful one does.
	f.fail = errors.New("conflict")
	g.Expect(l.Update(context.Background(), ours(2))).NotTo(Succeed())
	g.Expect(l.Check()).To(MatchError(ErrLeaseMayHaveExpired))
	f.fail = nil
	g.Expect(l.Update(context.Background(), ours(2))).To(Succeed())
	g.Expect(l.Check()).To(Succeed())
}

// Releasing the Lease (a write that names no holder) closes the guard before it is sent: once it reaches the
// API server a standby takes over at once. It stays closed if the release fails.
func TestLeaseGuardClosesWhenTheLeaseIsReleased(t *testing.T) {
	g := NewWithT(t)
	l, f := newTestLease(3 * time.Second)
	g.Expect(l.Update(context.Background(), ours(0))).To(Succeed())
	g.Expect(l.Check()).To(Succeed())
	var during error
	f.during = func() { during = l.Check() }
	f.fail = errors.New("timeout")
	g.Expect(l.Update(context.Background(), resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1})).
		NotTo(Succeed())
	g.Expect(during).To(MatchError(ErrLeaseMayHaveExpired))
	g.Expect(l.Check()).To(MatchError(ErrLeaseMayHaveExpired))
}

// Without leader election there is no lock, and nothing is refused.
func TestNoLeaseGuardWithoutLeaderElection(t *testing.T) {
	g := NewWithT(t)
	var l *leaseLock
	g.Expect(l.Check()).To(Succeed())
	g.Expect(l.guard()).To(BeNil())
	g.Expect(l.term()).To(BeNil())
}

// A standby waits the lease duration in whole seconds (client-go writes leaseDurationSeconds); the renew
// deadline must leave a margin below that.
func TestLeaseGuardNeedsARenewDeadlineShorterThanTheLease(t *testing.T) {
	g := NewWithT(t)
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	_, err := newLeaseLock(cfg, "ns", "lease", 4500*time.Millisecond, 4*time.Second)
	g.Expect(err).To(MatchError(ContainSubstring("must be shorter than the lease duration")))
	l, err := newLeaseLock(cfg, "ns", "lease", 4*time.Second, 3*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.window).To(Equal(3 * time.Second))
	g.Expect(l.Identity()).NotTo(BeEmpty())
}
