// Package shard divides the fleet's members among the hub manager's replicas (--sharding), on Leases in the
// manager's namespace:
//
//   - every replica holds a peer Lease of its own, <prefix>-peer-<identity>, renewed as a leader renews its Lease
//     (client-go's leader election, with the replica as the only candidate); a replica that cannot renew it within
//     the renew deadline stops, as a leader that loses its Lease does;
//   - every replica computes the same owner for every member from the peers whose Lease is live (Assign:
//     rendezvous hashing with bounded loads);
//   - the owner takes the member's claim Lease, <prefix>-member-<member>, before it works there, and gives it back
//     (an empty holder) once it stopped. A claim is not renewed: it stands while its holder's peer Lease lives. So
//     two replicas never work in one member, even while their views of the peers differ for a moment, and a
//     replica's renewals cost one write per retry period however many members it owns.
//
// A replica that dies stops renewing: the others see its peer Lease expire after the lease duration (measured on
// their own clocks from the last change they saw, as client-go's leader election does) and take its claims over.
// A replica that stops cleanly gives its claims back, then its peer Lease, so that the others take over at once.
//
// multicluster-runtime v0.24.1 has a sharded coordinator (pkg/manager/coordinator/sharded) built on the same ideas.
// It is not used, for what its source shows and a try confirmed: it decides ownership only after the provider has
// built, started and synced a member's cluster, so every replica would still connect to and cache every member (the
// point of sharding here is that a replica holds only its members' caches); its Lease peer registry's TTL (30 s)
// and renewal (10 s) are fixed, whatever lease duration is asked for; it renews one fence Lease per member every
// renew period, so a quiet fleet writes to the hub in proportion to its members; and Engage starts the members
// that one recomputation picks with contexts derived from the engaging member's context, so that removing one
// member stops the controllers of another (two members engaged back to back, the first removed: the second's
// engagement was cancelled in some runs against a real API server). Its rendezvous sharder has no load bound
// either (see Assign).
package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const (
	// LeaseLabel marks the Leases of sharding, with the value PeerLease or MemberLease.
	LeaseLabel  = "mysqlfleet.io/shard-lease"
	PeerLease   = "peer"
	MemberLease = "member"
	// MemberAnnotation names the member of a claim Lease (its name may be cut to fit).
	MemberAnnotation = "mysqlfleet.io/member"
)

// PeerLeaseName is the Lease a replica renews while it lives.
func PeerLeaseName(prefix, identity string) string { return prefix + "-peer-" + identity }

// MemberLeaseName is a member's claim Lease: its holder is the replica that works in the member.
func MemberLeaseName(prefix, member string) string { return prefix + "-member-" + member }

// Options configure a Shard.
type Options struct {
	// Namespace holds the Leases: the manager's namespace.
	Namespace string
	// Prefix starts every Lease name (the leader election ID, mysqlfleet-manager by default).
	Prefix string
	// Identity names this replica; unique among the live replicas, a DNS label.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod mean what they mean for leader election: a peer Lease not
	// renewed for LeaseDuration is dead; a replica that could not renew for RenewDeadline stops; renewals and
	// retries come every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnChange is called (never concurrently) when what this replica owns or holds may have changed: the live
	// peers, the members, or a claim.
	OnChange func()
}

// Shard is one replica's part in the division of members.
type Shard struct {
	opts Options
	log  logr.Logger

	client ctrl.Client
	reader ctrl.Reader
	cache  crcache.Cache
	leases kubernetes.Interface

	mu sync.Mutex
	// leading is true while this replica holds its peer Lease; synced once the Lease informer has synced.
	leading, synced bool
	peers           map[string]*peer
	claims          map[string]*coordinationv1.Lease
	members         []string
	live            []string
	owners          map[string]string
	// held are the claims this replica took and has not given back.
	held map[string]bool

	wake        chan struct{}
	drained     chan struct{}
	drainedOnce sync.Once
}

// peer is what one replica knows of another's peer Lease.
type peer struct {
	identity string
	// mark changes whenever the holder renews; seen is when this replica last saw it change.
	mark     string
	holder   string
	duration time.Duration
	seen     time.Time
	uid      types.UID
	rv       string
}

// New returns a Shard; SetupWithManager wires it.
func New(opts Options) (*Shard, error) {
	if opts.Namespace == "" || opts.Prefix == "" || opts.Identity == "" {
		return nil, errors.New("shard: namespace, prefix and identity are required")
	}
	if opts.LeaseDuration <= opts.RenewDeadline || opts.RenewDeadline <= opts.RetryPeriod || opts.RetryPeriod <= 0 {
		return nil, fmt.Errorf("shard: need lease duration (%s) > renew deadline (%s) > retry period (%s) > 0",
			opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod)
	}
	return &Shard{opts: opts, peers: map[string]*peer{}, claims: map[string]*coordinationv1.Lease{},
		owners: map[string]string{}, held: map[string]bool{}, wake: make(chan struct{}, 1),
		drained: make(chan struct{})}, nil
}

// SetupWithManager takes the hub's clients and cache from the manager and runs the Shard on every replica.
func (s *Shard) SetupWithManager(mgr manager.Manager, log logr.Logger) error {
	leases, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	s.client, s.reader, s.cache, s.leases = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetCache(), leases
	s.log = log.WithValues("identity", s.opts.Identity)
	return mgr.Add(s)
}

// Identity names this replica.
func (s *Shard) Identity() string { return s.opts.Identity }

// NeedLeaderElection: every replica takes part.
func (s *Shard) NeedLeaderElection() bool { return false }

// Start holds this replica's peer Lease and follows every sharding Lease until ctx ends. On the way out it waits
// (at most the renew deadline) for Drained, so that the claims are given back before the peer Lease is.
func (s *Shard) Start(ctx context.Context) error {
	inf, err := s.cache.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.observe(o, false) },
		UpdateFunc: func(_, o any) { s.observe(o, false) },
		DeleteFunc: func(o any) { s.observe(o, true) },
	})
	if err != nil {
		return err
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // stopped before the first sync
	}
	s.mu.Lock()
	s.synced = true
	s.recompute()
	s.mu.Unlock()

	go s.notifier(ctx)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: s.opts.Namespace, Name: PeerLeaseName(s.opts.Prefix, s.opts.Identity)},
			Client:     s.leases.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: s.opts.Identity},
			Labels:     map[string]string{LeaseLabel: PeerLease},
		},
		LeaseDuration:   s.opts.LeaseDuration,
		RenewDeadline:   s.opts.RenewDeadline,
		RetryPeriod:     s.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "shard",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { s.setLeading(true) },
			OnStoppedLeading: func() { s.setLeading(false) },
		},
	})
	if err != nil {
		return err
	}
	// The peer Lease outlives ctx until the claims are given back; it has a context of its own.
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		le.Run(electCtx)
	}()
	tick := time.NewTicker(s.opts.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			select {
			case <-s.drained:
			case <-time.After(s.opts.RenewDeadline):
				s.log.Info("Claims not given back in time; releasing the peer Lease anyway")
			}
			stopElect()
			<-ended
			s.deleteOwnLease()
			return nil
		case <-ended:
			return fmt.Errorf("shard: could not renew the peer Lease %s/%s within %s",
				s.opts.Namespace, PeerLeaseName(s.opts.Prefix, s.opts.Identity), s.opts.RenewDeadline)
		case <-tick.C:
			s.mu.Lock()
			s.recompute() // peers expire with time, not with events
			dead := s.deadPeers()
			s.mu.Unlock()
			s.collect(ctx, dead)
		}
	}
}

// Drained tells Start that every claim was given back (or that none will be): the peer Lease may go.
func (s *Shard) Drained() { s.drainedOnce.Do(func() { close(s.drained) }) }

func (s *Shard) setLeading(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading = on
	s.log.Info("Peer Lease", "held", on)
	s.recompute()
}

// notifier calls OnChange after every change, one call at a time; changes that come during a call make one more.
func (s *Shard) notifier(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			if s.opts.OnChange != nil {
				s.opts.OnChange()
			}
		}
	}
}

func (s *Shard) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// observe records a sharding Lease as the informer delivers it.
func (s *Shard) observe(o any, deleted bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, deleted = t.Obj, true
	}
	l, ok := o.(*coordinationv1.Lease)
	if !ok || l.Namespace != s.opts.Namespace {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.Labels[LeaseLabel] {
	case PeerLease:
		id, ok := strings.CutPrefix(l.Name, s.opts.Prefix+"-peer-")
		if !ok {
			return
		}
		if deleted {
			delete(s.peers, id)
			s.recompute()
			return
		}
		holder, mark := ptr.Deref(l.Spec.HolderIdentity, ""), markOf(l)
		p := s.peers[id]
		if p == nil {
			p = &peer{identity: id}
			s.peers[id] = p
		}
		if p.mark != mark {
			p.mark, p.seen = mark, time.Now()
		}
		p.holder, p.uid, p.rv = holder, l.UID, l.ResourceVersion
		p.duration = time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
		s.recompute()
	case MemberLease:
		member := l.Annotations[MemberAnnotation]
		if member == "" {
			return
		}
		before := s.claims[member]
		if deleted {
			delete(s.claims, member)
		} else {
			s.claims[member] = l.DeepCopy()
		}
		holder := ""
		if !deleted {
			holder = ptr.Deref(l.Spec.HolderIdentity, "")
		}
		if s.held[member] && holder != s.opts.Identity {
			// Someone else holds it now (it took us for dead), or it is gone: stop at once.
			s.log.Info("Claim lost", "member", member, "holder", holder)
			delete(s.held, member)
			membersOwned.Set(float64(len(s.held)))
		}
		if before == nil || deleted || ptr.Deref(before.Spec.HolderIdentity, "") != holder {
			s.notify()
		}
	}
}

// markOf is what changes in a peer Lease each time its holder renews it.
func markOf(l *coordinationv1.Lease) string {
	renew := ""
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s|%s|%d", ptr.Deref(l.Spec.HolderIdentity, ""), renew, ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
}

// alive tells whether a peer's Lease is live as this replica sees it. Callers hold s.mu.
func (s *Shard) alive(id string, now time.Time) bool {
	if id == s.opts.Identity {
		return s.leading
	}
	p := s.peers[id]
	return p != nil && p.holder == id && now.Sub(p.seen) < p.duration
}

// recompute derives the live peers and the owners; a change wakes OnChange. Callers hold s.mu.
func (s *Shard) recompute() {
	now := time.Now()
	var live []string
	if s.leading {
		live = append(live, s.opts.Identity)
	}
	for id := range s.peers {
		if id != s.opts.Identity && s.alive(id, now) {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	owners := map[string]string{}
	if s.synced && s.leading {
		owners = Assign(s.members, live)
	}
	if slices.Equal(live, s.live) && maps.Equal(owners, s.owners) {
		return
	}
	if !slices.Equal(live, s.live) {
		s.log.Info("Live replicas", "replicas", live)
	}
	s.live, s.owners = live, owners
	replicasLive.Set(float64(len(live)))
	s.notify()
}

// SetMembers tells the Shard every registered member: the assignment depends on all of them.
func (s *Shard) SetMembers(names []string) {
	names = slices.Clone(names)
	slices.Sort(names)
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(names, s.members) {
		return
	}
	s.members = names
	s.recompute()
}

// Owns tells whether this replica should work in the member, by the assignment. It may work there only once it
// holds the member's claim (Acquire).
func (s *Shard) Owns(member string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owners[member] == s.opts.Identity && s.opts.Identity != ""
}

// Holds tells whether this replica holds the member's claim.
func (s *Shard) Holds(member string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[member]
}

// Owned lists the members whose claims this replica holds.
func (s *Shard) Owned() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.held))
}

// Live lists the replicas whose peer Leases are live, this one included once it holds its own.
func (s *Shard) Live() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.live)
}

// Acquire takes the member's claim for this replica if it owns the member and the claim is free: never taken,
// given back, held by a replica whose peer Lease is dead, or already this replica's. It returns false while
// another live replica holds it; that replica gives it back once it sees that it no longer owns the member, and
// the change wakes OnChange.
func (s *Shard) Acquire(ctx context.Context, member string) (bool, error) {
	s.mu.Lock()
	if s.owners[member] != s.opts.Identity {
		s.mu.Unlock()
		return false, nil
	}
	if s.held[member] {
		s.mu.Unlock()
		return true, nil
	}
	claim := s.claims[member].DeepCopy()
	holder := ""
	if claim != nil {
		holder = ptr.Deref(claim.Spec.HolderIdentity, "")
	}
	holderAlive := holder != "" && holder != s.opts.Identity && s.alive(holder, time.Now())
	var mark string
	if p := s.peers[holder]; p != nil {
		mark = p.mark
	}
	s.mu.Unlock()
	if holderAlive {
		return false, nil
	}
	if holder != "" && holder != s.opts.Identity {
		// The holder looks dead from here. Ask the API server, not the informer: a watch that fell behind
		// must not make a live replica look dead.
		if alive, err := s.renewedSince(ctx, holder, mark); err != nil || alive {
			return false, err
		}
	}

	now := metav1.NowMicro()
	if claim == nil {
		claim = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.opts.Namespace, Name: MemberLeaseName(s.opts.Prefix, member),
			Labels:      map[string]string{LeaseLabel: MemberLease},
			Annotations: map[string]string{MemberAnnotation: member},
		}}
		claim.Spec = s.claimSpec(now, 0)
		if err := s.client.Create(ctx, claim); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, nil // the informer brings it, and OnChange another try
			}
			return false, fmt.Errorf("creating claim Lease of member %s: %w", member, err)
		}
	} else {
		transitions := ptr.Deref(claim.Spec.LeaseTransitions, 0)
		if holder != s.opts.Identity {
			transitions++
		}
		claim.Spec = s.claimSpec(now, transitions)
		if err := s.client.Update(ctx, claim); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("taking claim Lease of member %s: %w", member, err)
		}
	}
	s.mu.Lock()
	s.held[member] = true
	membersOwned.Set(float64(len(s.held)))
	s.claims[member] = claim.DeepCopy()
	s.mu.Unlock()
	s.log.Info("Claimed member", "member", member, "from", holder)
	return true, nil
}

func (s *Shard) claimSpec(now metav1.MicroTime, transitions int32) coordinationv1.LeaseSpec {
	return coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To(s.opts.Identity),
		// For people reading it: a claim lives as long as its holder's peer Lease, renewed on this period.
		LeaseDurationSeconds: ptr.To(int32(s.opts.LeaseDuration / time.Second)),
		AcquireTime:          &now,
		RenewTime:            &now,
		LeaseTransitions:     ptr.To(transitions),
	}
}

// renewedSince reads the holder's peer Lease from the API server: true when it changed since mark (the holder
// lives), false when it did not or is gone.
func (s *Shard) renewedSince(ctx context.Context, holder, mark string) (bool, error) {
	var l coordinationv1.Lease
	err := s.reader.Get(ctx, ctrl.ObjectKey{Namespace: s.opts.Namespace, Name: PeerLeaseName(s.opts.Prefix, holder)}, &l)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if markOf(&l) == mark || ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		return false, nil
	}
	s.observe(&l, false) // news the informer has not brought yet
	return true, nil
}

// Release gives the member's claim back (an empty holder) once this replica stopped working there.
func (s *Shard) Release(ctx context.Context, member string) error {
	s.mu.Lock()
	held := s.held[member]
	delete(s.held, member)
	membersOwned.Set(float64(len(s.held)))
	s.mu.Unlock()
	if !held {
		return nil
	}
	return s.giveBack(ctx, member, false)
}

// Forget drops the claim of a member whose registration is gone: this replica's, or one whose holder is dead.
func (s *Shard) Forget(ctx context.Context, member string) error {
	s.mu.Lock()
	delete(s.held, member)
	membersOwned.Set(float64(len(s.held)))
	claim := s.claims[member]
	ok := claim != nil
	if ok {
		holder := ptr.Deref(claim.Spec.HolderIdentity, "")
		ok = holder == "" || holder == s.opts.Identity || !s.alive(holder, time.Now())
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s.giveBack(ctx, member, true)
}

// giveBack empties (or deletes) the claim if this replica, or nobody live, holds it.
func (s *Shard) giveBack(ctx context.Context, member string, remove bool) error {
	key := ctrl.ObjectKey{Namespace: s.opts.Namespace, Name: MemberLeaseName(s.opts.Prefix, member)}
	for range 3 {
		var l coordinationv1.Lease
		if err := s.reader.Get(ctx, key, &l); err != nil {
			return ctrl.IgnoreNotFound(err)
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		var err error
		switch {
		case remove:
			s.mu.Lock()
			mine := holder == "" || holder == s.opts.Identity || !s.alive(holder, time.Now())
			s.mu.Unlock()
			if !mine {
				return nil
			}
			err = s.client.Delete(ctx, &l, ctrl.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		case holder != s.opts.Identity:
			return nil // taken already
		default:
			l.Spec.HolderIdentity = ptr.To("")
			err = s.client.Update(ctx, &l)
		}
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("giving back the claim Lease of member %s: %w", member, err)
		}
	}
	return fmt.Errorf("giving back the claim Lease of member %s: it kept changing", member)
}

// deadPeers are the peer Leases dead for three lease durations: their replicas are gone for good (a replica's
// identity is new at every start). Callers hold s.mu.
func (s *Shard) deadPeers() map[string]*peer {
	dead := map[string]*peer{}
	now := time.Now()
	for id, p := range s.peers {
		if id != s.opts.Identity && !s.alive(id, now) && now.Sub(p.seen) > 3*max(p.duration, s.opts.LeaseDuration) {
			dead[id] = &peer{uid: p.uid, rv: p.rv}
		}
	}
	return dead
}

// collect deletes dead peers' Leases, on the condition that they did not change meanwhile.
func (s *Shard) collect(ctx context.Context, dead map[string]*peer) {
	for id, p := range dead {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.opts.Namespace, Name: PeerLeaseName(s.opts.Prefix, id)}}
		err := s.client.Delete(ctx, l, ctrl.Preconditions{UID: &p.uid, ResourceVersion: &p.rv})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.log.V(1).Info("Could not delete a dead replica's peer Lease", "replica", id, "err", err.Error())
		}
	}
}

// deleteOwnLease removes this replica's released peer Lease on the way out: its identity never comes back.
func (s *Shard) deleteOwnLease() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RetryPeriod)
	defer cancel()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.opts.Namespace, Name: PeerLeaseName(s.opts.Prefix, s.opts.Identity)}}
	if err := s.client.Delete(ctx, l); err != nil && !apierrors.IsNotFound(err) {
		s.log.V(1).Info("Could not delete the peer Lease", "err", err.Error())
	}
}
