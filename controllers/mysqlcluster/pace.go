package mysqlcluster

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// pace makes the passes that a member change asks for yield to placement passes. When a member goes away, every
// MySQLCluster placed there is passed again to report it, each with a status write and an Event on the hub:
// hundreds of hub writes for a large fleet. The priority queue only orders the passes it hands out; once the
// placement passes are all handed out, the member-change passes would run beside them and take the CPU of the
// hub's API server (a write of a whole MySQLCluster each) from the placement still
// under way. So a member-change pass waits, parked outside the queue, while any other pass is in flight, and
// runs when none is, or once it has waited maxWait, so that a fleet that never rests still reports its members
// within that bound. A pass that something else also asked for (a new spec, a deletion, an object changed in a
// member) never waits: it does the member change's work too.
type pace struct {
	mu sync.Mutex
	// placing counts the passes in flight that are not member-change passes.
	placing int
	// changed holds the MySQLClusters queued for a member change and for nothing else since: mayWait until they
	// have waited once, mustRun once released.
	changed map[types.NamespacedName]changeState
	// parked holds the member-change passes waiting outside the queue, with when each began to wait.
	parked map[types.NamespacedName]time.Time
	// wanted holds the MySQLClusters queued for another reason (a new spec, a deletion, a change in a member)
	// whose pass has not begun: a member change adds nothing to that pass but its member, and must not hold it
	// back.
	wanted map[types.NamespacedName]bool
	// scope holds the members that asked for a MySQLCluster's next pass, whole those whose next pass must look
	// at every member.
	scope map[types.NamespacedName]map[string]bool
	whole map[types.NamespacedName]bool
	// retrying holds the members a pass that asked to be retried looked at (nil: every member), until a pass
	// that looked at them too ends without asking again. Every pass until then looks at them as well; the
	// retry's own requeue, a pass nothing else recorded, looks at those still pending only.
	retrying map[types.NamespacedName]map[string]bool
	// queue adds a released pass back to the queue, at low priority.
	queue func(types.NamespacedName)
	// maxWait bounds the wait; timer fires when the oldest parked pass reaches it.
	maxWait time.Duration
	timer   *time.Timer
	// now and afterFunc are the clock, replaced in tests.
	now       func() time.Time
	afterFunc func(time.Duration, func()) *time.Timer
}

type changeState int

const (
	mayWait changeState = iota + 1
	mustRun
)

// memberChangeMaxWait is how long a member-change pass waits for the placement passes at most.
const memberChangeMaxWait = 2 * time.Minute

func newPace() *pace {
	return &pace{
		changed: map[types.NamespacedName]changeState{}, parked: map[types.NamespacedName]time.Time{},
		wanted: map[types.NamespacedName]bool{}, scope: map[types.NamespacedName]map[string]bool{},
		whole: map[types.NamespacedName]bool{}, retrying: map[types.NamespacedName]map[string]bool{},
		maxWait: memberChangeMaxWait, now: time.Now, afterFunc: time.AfterFunc,
	}
}

// A nil pace makes no pass wait.

// memberChanged is called for each MySQLCluster a member change requeues, with the members that changed and the
// function that adds it to the queue. It reports whether to add it now: not when a pass for another reason is
// queued already (that pass does the member change's work), nor while placement passes are in flight (it is
// parked until they end), nor when it is parked already.
func (p *pace) memberChanged(key types.NamespacedName, members map[string]bool, queue func(types.NamespacedName)) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = queue
	p.look(key, members)
	if p.wanted[key] {
		return false
	}
	if _, ok := p.parked[key]; ok {
		return false
	}
	if p.placing > 0 {
		p.park(key)
		return false
	}
	if p.changed[key] == 0 {
		p.changed[key] = mayWait
	}
	return true
}

// intent records that the MySQLCluster itself queued a pass of key (a new spec, a deletion): that pass must not
// wait, and looks at every member.
func (p *pace) intent(key types.NamespacedName) { p.ask(key, nil) }

// drift records that an event of an object in member queued a pass of key: that pass must not wait, and looks
// at member (and any other member that asked for it).
func (p *pace) drift(key types.NamespacedName, member string) {
	p.ask(key, map[string]bool{member: true})
}

// ask records a pass of key that must not wait, and that looks at members, or at every member if members is nil.
func (p *pace) ask(key types.NamespacedName, members map[string]bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unpark(key)
	p.wanted[key] = true
	if members == nil {
		p.whole[key] = true
	} else {
		p.look(key, members)
	}
}

// retry records that the pass of key that just ended, which looked at the members of only (nil: every member),
// asked to be retried: the passes until one of them has looked there again without asking look at them too.
func (p *pace) retry(key types.NamespacedName, only map[string]bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, ok := p.retrying[key]
	if only == nil || (ok && prev == nil) {
		p.retrying[key] = nil
		return
	}
	if prev == nil {
		prev = map[string]bool{}
	}
	for m := range only {
		prev[m] = true
	}
	p.retrying[key] = prev
}

// done records that the pass of key that just ended, which looked at the members of only (nil: every member),
// did not ask to be retried: the retries it covered are done.
func (p *pace) done(key types.NamespacedName, only map[string]bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, ok := p.retrying[key]
	switch {
	case !ok:
		return
	case only == nil:
		delete(p.retrying, key)
		return
	case pending == nil:
		return // every member is still to be looked at again
	}
	for m := range only {
		delete(pending, m)
	}
	if len(pending) == 0 {
		delete(p.retrying, key)
	}
}

// look adds members to those key's next pass looks at. Called with p.mu held.
func (p *pace) look(key types.NamespacedName, members map[string]bool) {
	if p.scope[key] == nil {
		p.scope[key] = map[string]bool{}
	}
	for m := range members {
		p.scope[key][m] = true
	}
}

// forget drops what is known of key: its MySQLCluster is gone.
func (p *pace) forget(key types.NamespacedName) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unpark(key)
	delete(p.wanted, key)
	delete(p.scope, key)
	delete(p.whole, key)
	delete(p.retrying, key)
}

// unpark drops key's member-change state: a pass for another reason, or none, replaces it. Called with p.mu
// held.
func (p *pace) unpark(key types.NamespacedName) {
	delete(p.changed, key)
	delete(p.parked, key)
	p.setWaiting()
}

// begin is called when a pass of key starts. settled says that the MySQLCluster's spec has been acted on
// (status.observedGeneration is its generation) and it is not being deleted: only then may a member-change pass
// wait, or look at its changed members only. It reports whether the pass runs now; if it does, only is the set of
// members it needs to look at (nil for every member), and end must be called when it is over.
func (p *pace) begin(key types.NamespacedName, settled bool) (run bool, only map[string]bool, end func()) {
	if p == nil {
		return true, nil, func() {}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st, wanted := p.changed[key], p.wanted[key]
	delete(p.changed, key)
	delete(p.wanted, key)
	if _, ok := p.parked[key]; ok && st == 0 && !wanted && settled {
		// Queued again while parked, by a retry an earlier pass asked for: it still waits for its release.
		return false, nil, nil
	}
	if st == 0 || wanted || !settled {
		delete(p.parked, key)
		p.setWaiting()
		p.placing++
		if only = p.take(key); !settled {
			only = nil
		}
		return true, only, p.endPlacing
	}
	if st == mayWait && p.placing > 0 {
		p.park(key)
		return false, nil, nil
	}
	return true, p.take(key), func() {}
}

// take hands over the members key's pass looks at, nil for every member, and forgets what asked for them,
// except the pending retries (done forgets those). A pass nothing recorded is the requeue of a retry, a timer's
// (a backup growing stale) or a retry another pass did already: it looks at the retries still pending, and
// otherwise at no member (an empty set), which the reconciler turns into the members that have not settled
// (unsettled). Called with p.mu held.
func (p *pace) take(key types.NamespacedName) map[string]bool {
	only, whole := p.scope[key], p.whole[key]
	retrying, retry := p.retrying[key]
	delete(p.scope, key)
	delete(p.whole, key)
	switch {
	case whole, retry && retrying == nil:
		return nil
	case only == nil:
		only = map[string]bool{}
	}
	for m := range retrying {
		only[m] = true
	}
	return only
}

// endPlacing ends a placement pass; the last one releases every parked pass.
func (p *pace) endPlacing() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.placing--
	if p.placing == 0 {
		p.release(func(time.Time) bool { return true })
	}
}

// park puts key aside until the placement passes end or it has waited maxWait. Called with p.mu held.
func (p *pace) park(key types.NamespacedName) {
	if _, ok := p.parked[key]; !ok {
		p.parked[key] = p.now()
		p.setWaiting()
	}
	if p.timer == nil {
		p.timer = p.afterFunc(p.maxWait, p.expire)
	}
}

// expire releases the passes that have waited maxWait and sets the timer for the next one.
func (p *pace) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	now := p.now()
	p.release(func(since time.Time) bool { return now.Sub(since) >= p.maxWait })
	var oldest time.Time
	for _, since := range p.parked {
		if oldest.IsZero() || since.Before(oldest) {
			oldest = since
		}
	}
	if !oldest.IsZero() {
		p.timer = p.afterFunc(p.maxWait-now.Sub(oldest), p.expire)
	}
}

// release queues again the parked passes that due selects; they run without waiting again. Called with p.mu
// held.
func (p *pace) release(due func(since time.Time) bool) {
	for key, since := range p.parked {
		if !due(since) {
			continue
		}
		delete(p.parked, key)
		p.changed[key] = mustRun
		if p.queue != nil {
			p.queue(key)
		}
	}
	p.setWaiting()
}

// setWaiting reports the number of parked passes. Called with p.mu held.
func (p *pace) setWaiting() {
	memberChangePassesWaiting.Set(float64(len(p.parked)))
}
