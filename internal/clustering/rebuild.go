package clustering

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Rebuilds. An errant instance holds transactions the primary lacks; replicating again it would break on them
// or serve them, so it is fenced (its receiver stopped, no role). It comes back to the set only by being
// emptied (mysql.Server.Empty) and seeded again, which discards those transactions. The engine does that by
// itself only when it can prove that none of them was acknowledged to a client (rebuildable), and when a human
// asks (Desired.Rebuild), never on the primary. (A replica that is not errant but cannot catch up from the
// primary's binary logs is rebuilt too when it holds nothing the primary lacks: see fromBinlogs.)
//
// The proof rests on semi-sync with AFTER_SYNC that never falls back: a commit returns to its client, and
// becomes visible to other sessions, only once a replica has received it. A failover hears from enough
// instances that each acknowledged transaction is on one that answers (FailoverQuorum) and promotes one that
// holds everything those hold. So a transaction of the deposed primary's own that the new primary lacks was
// acknowledged to nobody, provided that, during its term, commits could not return otherwise (Record.
// Unacknowledged was never set) and that it is still the data directory that served (same server_id). It must
// also be its own (written while it was the primary), and no other instance may hold any transaction of it
// that the primary lacks: another errant instance holding some would mean it reached a replica after all.

// rebuildPlan holds the rebuilds one pass does.
type rebuildPlan struct {
	steps []Step
	// requested are the ids of the requested rebuilds carried out, to record once they are done.
	requested []string
}

func (p rebuildPlan) has(i int) bool {
	return slices.ContainsFunc(p.steps, func(s Step) bool { return s.Instance == i })
}

// add puts the rebuilds at the end of the plan, and after them the record of the requests carried out: a
// rebuild that fails stops the plan (ActionRebuild is critical), so a request is recorded only once done.
func (p rebuildPlan) add(e *engine) {
	for _, s := range p.steps {
		e.add(s)
	}
	if len(p.requested) > 0 {
		e.next.Rebuilt = append(e.next.Rebuilt, p.requested...)
		e.add(Step{Action: ActionSaveRecord, Record: e.next, Why: "requested rebuilds carried out"})
	}
}

// rebuilds decides the rebuilds of this pass, around a primary that answers: those asked for, then, unless
// Desired.FenceErrant, the errant instances that rebuildable clears. It reports why an errant instance stays
// fenced, and refuses a request for the primary.
func (e *engine) rebuilds() rebuildPlan {
	var p rebuildPlan
	requested := map[int]string{}
	for _, r := range e.d.Rebuild {
		if slices.Contains(e.rec.Rebuilt, r.ID) {
			continue
		}
		switch {
		case r.Instance == e.p:
			if e.decision.Kind == "" {
				e.decision = Decision{Kind: Refused, From: -1, To: -1,
					Reason: fmt.Sprintf("rebuild of instance %d refused: it is the primary", r.Instance)}
			}
		case r.Instance >= 0 && r.Instance < e.n:
			requested[r.Instance] = r.ID
		}
	}

	for i, o := range e.obs {
		if i == e.p || !o.Reachable() || e.fenced[i] || o.Seeding != "" || e.leaving(i) {
			continue
		}
		st := o.Status
		discard := mysql.ErrantTransactions(st.Executed, heldBy(e.status(e.p)), e.status(e.p).SourceID)
		if id, ok := requested[i]; ok {
			if st.Executed.IsEmpty() {
				p.requested = append(p.requested, id) // nothing to empty
				continue
			}
			p.steps = append(p.steps, Step{Action: ActionRebuild, Instance: i, Executed: e.pinnedExecuted(i, discard),
				Discarded: discard, Request: id, Why: fmt.Sprintf("rebuild of instance %d requested (%s)", i, id)})
			p.requested = append(p.requested, id)
			continue
		}
		if !e.errant(i) || e.errantSets[i] == nil {
			continue
		}
		why, ok := e.rebuildable(i)
		switch {
		case !ok:
			e.held[i] = "errant, fenced until rebuilt by hand (mysqlfleet rebuild): " + why
		case e.d.FenceErrant:
			e.held[i] = "errant, fenced until rebuilt by hand (mysqlfleet rebuild; errantServers is Fence); " +
				"rebuilding it would be safe: " + why
		default:
			p.steps = append(p.steps, Step{Action: ActionRebuild, Instance: i, Executed: st.Executed,
				Discarded: e.errantSets[i], Why: "rebuilt: " + why})
		}
	}
	return p
}

// pinnedExecuted is the executed set a rebuild of instance i pins (Step.Executed), discard being what of it
// the primary lacks. It is nil when discard is empty and i replicates from nothing or from the primary: all it
// holds is on the primary, and all it can still execute, read-only as every instance but the primary is, comes
// from it. A live replica goes on applying between the decision and the rebuild, and none of that may stop
// the rebuild.
func (e *engine) pinnedExecuted(i int, discard mysql.GTIDSet) mysql.GTIDSet {
	st := e.status(i)
	if discard.IsEmpty() && (st.Replica == nil || replicatesFrom(st.Replica, e.d.Addresses[e.p])) {
		return nil
	}
	return st.Executed
}

// rebuildable says whether errant instance i can be emptied without losing an acknowledged commit (see the
// comment at the top of this file), and why or why not.
func (e *engine) rebuildable(i int) (string, bool) {
	st, set := e.status(i), e.errantSets[i]
	d := e.rec.deposed(i)
	switch {
	case d == nil:
		return "it was not a primary replaced by a failover, so its transactions may have been acknowledged", false
	case d.ServerID != st.ServerID:
		return fmt.Sprintf("it answers with server_id %d, not the %d it served with as primary", st.ServerID,
			d.ServerID), false
	case d.Unacknowledged:
		return "commits could return without a semi-sync acknowledgement during its term as primary", false
	}
	if other := set.Without(st.SourceID); !other.IsEmpty() {
		return fmt.Sprintf("it holds %s, written by other servers", other), false
	}
	primary := heldBy(e.status(e.p))
	for j, o := range e.obs {
		if j == i || j == e.p {
			continue
		}
		if !o.Reachable() {
			return fmt.Sprintf("instance %d does not answer, and it may hold some of %s", j, set), false
		}
		if hasSource(heldBy(o.Status).Subtract(primary), st.SourceID) {
			return fmt.Sprintf("instance %d received some of its transactions the primary lacks (%s)", j,
				heldBy(o.Status).Subtract(primary)), false
		}
	}
	return fmt.Sprintf("%s are its own unacknowledged transactions from its term as primary (semi-sync in force "+
		"throughout, held by no other instance)", set), true
}

// trackTerms keeps in the record what judging errant instances later needs: whether the primary's commits could
// return unacknowledged during its term, the former primaries still worth remembering, and the ids of the
// requested rebuilds still asked for.
func (e *engine) trackTerms(pst *mysql.Status) {
	if e.w > 0 && !readOnly(pst) && pst.Replica == nil && mayReturnUnacknowledged(pst.SemiSync, e.primaryWait(pst)) {
		e.next.Unacknowledged = true
	}
	e.next.Deposed = slices.DeleteFunc(slices.Clone(e.next.Deposed), func(d Deposed) bool {
		if d.Instance == e.p || d.Instance >= e.n {
			return true
		}
		o := e.obs[d.Instance]
		return o.Reachable() && !e.fenced[d.Instance] && (o.Status.ServerID != d.ServerID || !e.errant(d.Instance))
	})
	// Ids no longer asked for are forgotten, so that the record stays small.
	e.next.Rebuilt = slices.DeleteFunc(slices.Clone(e.next.Rebuilt), func(id string) bool {
		return !slices.ContainsFunc(e.d.Rebuild, func(r RebuildRequest) bool { return r.ID == id })
	})
	if len(e.next.Deposed) == 0 {
		e.next.Deposed = nil
	}
	if len(e.next.Rebuilt) == 0 {
		e.next.Rebuilt = nil
	}
}

// mayReturnUnacknowledged tells whether a primary's semi-sync, as read back, could let a commit return without
// an acknowledgement, or already has: anything but waiting AFTER_SYNC for w > 0 replicas (however many it
// waits for) without ever falling back, with no commit counted that returned without one.
func mayReturnUnacknowledged(s *mysql.SemiSyncStatus, w int) bool {
	return w == 0 || s == nil || !s.SourceEnabled || !s.SourceActive || s.AsyncCommits > 0 ||
		!strings.EqualFold(s.WaitPoint, "AFTER_SYNC") || s.Timeout < neverFallBack || !s.WaitNoReplica
}

// hasSource tells whether set holds a transaction written by source (server_uuid on MySQL, server_id on
// MariaDB). Subtract, not Contains: a MariaDB set contains another by position, per domain, so a set that
// lost a server's run may still contain it once others have written further in the domain.
func hasSource(set mysql.GTIDSet, source string) bool {
	return set != nil && source != "" && !set.Subtract(set.Without(source)).IsEmpty()
}
