package clustering

import (
	"fmt"
	"strings"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// A scale-down (Desired.ShrinkTo = k) removes the instances at and above k. Removing them as they are could lose
// acknowledged transactions: MariaDB takes one acknowledgement from any replica, so the only copy of a commit
// besides the primary's may be on a leaving instance, and the primary may be one of them. So the member's
// StatefulSet keeps its Pods (the hub holds them) until the engine reports the set ready, Report.ShrinkReady:
//   - the primary is below k: a primary at or above k is switched over to the lowest instance below k that
//     may take over (the switchover's own rules, switchoverRefusal);
//   - the leaving instances receive nothing: their receivers are stopped, so that they acknowledge nothing
//     more, and they are not repaired;
//   - neither step takes away the acknowledgements commits wait for: each waits until enough staying
//     instances, other than the primary (and the switchover's target), replicate without a problem. A
//     scale-down with a staying replica down waits for it rather than stop the writes;
//   - an instance below k, other than the primary, holds everything the leaving instances received (see
//     leavingHeld): every commit a leaving instance acknowledged is held below k, and every later one is
//     acknowledged by an instance below k.
//
// Until the Pods are gone every rule, the failover quorum above all, still counts all N instances; the wait
// count is already the smaller set's (Desired.semiSyncWait), lowered in the record first.

// leaving tells whether instance i is to be removed by a scale-down.
func (e *engine) leaving(i int) bool {
	k := e.d.shrinkTo()
	return k > 0 && i >= k
}

// shrinkTarget is the instance below k that a primary at or above k moves to: the lowest that may take over,
// or -1 and why none may.
func (e *engine) shrinkTarget() (int, string) {
	k := e.d.shrinkTo()
	var why []string
	for r := range k {
		reason := e.switchoverRefusal(r)
		if reason == "" {
			return r, ""
		}
		why = append(why, fmt.Sprintf("instance %d: %s", r, reason))
	}
	return -1, strings.Join(why, "; ")
}

// shrinkPrimary is the primary a scale-down needs, when it needs another one than requested: the requested one
// is kept if it stays.
func (e *engine) shrinkPrimary(requested *int) *int {
	k := e.d.shrinkTo()
	if k == 0 || e.p < k || (requested != nil && *requested < k) {
		return requested
	}
	t, why := e.shrinkTarget()
	if t >= 0 && e.stayingReplicas(t) < e.w {
		t, why = -1, fmt.Sprintf("instance %d may, but too few other instances below %d replicate to "+
			"acknowledge its commits", t, k)
	}
	if t < 0 {
		e.decision = Decision{Kind: Refused, From: e.p, To: -1, Reason: fmt.Sprintf("the scale-down to %d "+
			"instances waits: the primary %d is leaving and no instance below %d may take over: %s", k, e.p, k, why)}
		return nil
	}
	return &t
}

// stopLeavingReceivers stops the receivers of the instances a scale-down removes: they must acknowledge
// nothing more.
func (e *engine) stopLeavingReceivers() {
	enough := e.stayingReplicas(-1) >= e.w
	for i, o := range e.obs {
		if i == e.p || !e.leaving(i) || !o.Reachable() {
			continue
		}
		e.held[i] = fmt.Sprintf("leaving: the set is scaling down to %d instances", e.d.shrinkTo())
		if !enough {
			e.held[i] += ", once enough of the staying instances replicate to acknowledge the primary's commits"
			continue
		}
		if r := o.Status.Replica; r != nil && r.IOState != "No" && !e.errant(i) {
			e.add(Step{Action: ActionStopReplicaIO, Instance: i, Why: e.held[i]})
		}
	}
}

// stayingReplicas counts the instances below ShrinkTo, other than the primary and except, that replicate from
// the primary without a problem: those that acknowledge its commits once the leaving ones no longer do.
func (e *engine) stayingReplicas(except int) int {
	return e.countReplicas(func(i int) bool { return i != except })
}

// shrinkReady tells whether the set may lose the instances at and above k now (see above), from this pass's
// observations, before its plan runs.
func (e *engine) shrinkReady() bool {
	k := e.d.shrinkTo()
	if k == 0 || e.p < 0 || e.p >= k || !e.obs[e.p].Reachable() {
		return false
	}
	need, ok := e.leavingHeld()
	if !ok {
		return false
	}
	if k == 1 {
		return true // the primary holds whatever its replicas received
	}
	for i := range k {
		o := e.obs[i]
		if i == e.p || !o.Reachable() || e.errant(i) || e.fenced[i] {
			continue
		}
		if need.Subtract(heldBy(o.Status)).IsEmpty() {
			return true
		}
	}
	return false
}

// leavingHeld is what a staying replica must hold before the leaving instances go: what they hold, without
// their own transactions (an acknowledgement is a replica's receipt of another's commit; a leaving former
// primary's own commits were acknowledged by its replicas, whose sets count here or which stay). Their receivers
// are stopped, so it no longer grows, and a staying replica can catch up with it under a steady stream of
// writes. When a leaving instance cannot be read, what it acknowledged is unknown, and everything the primary
// executed is needed instead. ok is false while a leaving instance still receives.
func (e *engine) leavingHeld() (need mysql.GTIDSet, ok bool) {
	for i := e.d.shrinkTo(); i < e.n; i++ {
		o := e.obs[i]
		if !o.Reachable() {
			return e.status(e.p).Executed, true
		}
		if r := o.Status.Replica; r != nil && r.IOState != "No" {
			return nil, false
		}
		own := heldBy(o.Status).Without(o.Status.SourceID)
		if need == nil {
			need = own
		} else {
			need = need.Union(own)
		}
	}
	return need, true
}

// heldBy is what an instance executed or received.
func heldBy(st *mysql.Status) mysql.GTIDSet {
	if r := st.Replica; r != nil && r.Received != nil {
		return st.Executed.Union(r.Received)
	}
	return st.Executed
}
