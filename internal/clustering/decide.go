package clustering

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// neverFallBack is the shortest semi-sync timeout the engine accepts on a primary: anything shorter lets a
// commit that waits that long return without an acknowledgement. The flavors configure 2^32-1 ms (MySQL's
// maximum, 49.7 days) or 2^64-1 ms (MariaDB).
const neverFallBack = 49 * 24 * time.Hour

// Decide is the engine: from what is desired, what was recorded and what was observed in this pass, it
// decides what to do and returns the plan. It is a pure function of its arguments. See the package
// documentation for the rules.
func Decide(d Desired, rec Record, obs []Observation) Plan {
	e := &engine{
		d: d, rec: rec, obs: obs, p: rec.PrimaryIndex(),
		next: Record{Primary: rec.Primary, PrimaryServerID: rec.PrimaryServerID, SemiSyncWait: rec.SemiSyncWait,
			Errant: slices.Clone(rec.Errant), Change: rec.Change, LeaseTransitions: rec.LeaseTransitions,
			Unacknowledged: rec.Unacknowledged, Deposed: slices.Clone(rec.Deposed), Rebuilt: slices.Clone(rec.Rebuilt)},
		fenced: map[int]bool{}, errantSets: map[int]mysql.GTIDSet{}, held: map[int]string{},
		decision: Decision{From: -1, To: -1},
	}
	e.decide()
	switch e.decision.Kind {
	case Bootstrap, Adopt, Failover, Switchover:
		d := e.decision
		e.completed = &d
	}
	rep := e.report()
	// A primary whose semi-sync this plan switches off (durability Preferred) is not reported blocked: its
	// commits return once the plan has run.
	if rep.Async = e.async; rep.Async == "" {
		rep.WritesBlocked = e.writesBlocked()
	}
	if k := e.d.shrinkTo(); k > 0 && (e.decision.Kind == Steady || e.decision.Kind == Repair) && e.shrinkReady() {
		rep.ShrinkReady = k
	}
	return Plan{Decision: e.decision, Steps: e.steps, Record: e.next, Report: rep, Completed: e.completed}
}

type engine struct {
	d   Desired
	rec Record
	obs []Observation
	// n is the number of instances, w the semi-sync wait count, p the recorded primary (-1 for none).
	n, w, p int

	// next is the record after the plan.
	next Record
	// fenced holds the writable instances other than the primary that this plan fences. What else to do with
	// them is decided in the next pass, from their state once fenced.
	fenced map[int]bool
	// errantSets are the errant transactions of the instances compared with the primary in this pass.
	errantSets map[int]mysql.GTIDSet
	// held says, for each instance this plan neither repoints nor seeds though it does not replicate, why.
	held map[int]string
	// completed is the change of primary the plan completes (Plan.Completed).
	completed *Decision
	// async is Report.Async, set by primaryWait.
	async    string
	steps    []Step
	decision Decision
}

func (e *engine) decide() {
	e.n = e.d.Instances()
	switch {
	case e.n == 0:
		e.refuse("the desired set has no instances")
		return
	case len(e.obs) != e.n:
		e.refuse(fmt.Sprintf("%d observations for %d instances", len(e.obs), e.n))
		return
	}
	if _, err := mysql.FlavorFor(e.d.Engine); err != nil {
		e.refuse(err.Error())
		return
	}
	w, err := e.d.semiSyncWait()
	if err != nil {
		e.refuse(err.Error())
		return
	}
	e.w = w

	if e.p < 0 {
		e.bootstrap()
		return
	}
	// Before anything else: never two writable instances.
	e.fenceStrangers()
	if reason := e.primaryFailure(); reason != "" {
		e.failover(reason)
		return
	}
	e.computeErrant()
	if req := e.shrinkPrimary(e.d.Primary); req != nil && *req != e.p {
		reason := e.switchoverRefusal(*req)
		if reason == "" {
			e.switchover(*req)
			return
		}
		e.decision = Decision{Kind: Refused, From: e.p, To: *req,
			Reason: fmt.Sprintf("switchover to instance %d refused: %s", *req, reason)}
	}
	e.repair()
}

func (e *engine) add(s Step) { e.steps = append(e.steps, s) }

func (e *engine) refuse(reason string) {
	e.decision = Decision{Kind: Refused, From: -1, To: -1, Reason: reason}
}

func (e *engine) semiSync() mysql.SemiSync { return mysql.SemiSync{WaitForReplicas: e.w} }

func (e *engine) status(i int) *mysql.Status { return e.obs[i].Status }

func (e *engine) errant(i int) bool { return slices.Contains(e.next.Errant, i) }

// withController tells whether instance i runs on the deciding controller's node (Desired.WithController).
func (e *engine) withController(i int) bool {
	return i < len(e.d.WithController) && e.d.WithController[i]
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func readOnly(st *mysql.Status) bool { return st.ReadOnly || st.SuperReadOnly }

// bootstrap handles a set with no recorded primary: bootstrap it when every instance is fresh, adopt the one
// writable instance when the record was lost, or refuse.
func (e *engine) bootstrap() {
	var unreachable, writable []int
	for i, o := range e.obs {
		switch {
		case !o.Reachable():
			unreachable = append(unreachable, i)
		case !readOnly(o.Status):
			writable = append(writable, i)
		}
	}
	if len(writable) == 1 && e.status(writable[0]).Replica == nil && e.obs[writable[0]].Unhealthy == "" {
		a := writable[0]
		e.decision = Decision{Kind: Adopt, From: -1, To: a,
			Reason: fmt.Sprintf("instance %d is the only writable instance", a)}
		e.next = withPrimary(e.next, a, e.status(a).ServerID, configuredWait(e.status(a)), e.decision)
		e.add(Step{Action: ActionSaveRecord, Record: e.next,
			Why: fmt.Sprintf("no primary is recorded and instance %d is the only writable instance", a)})
		return
	}
	if len(writable) > 0 {
		for _, i := range writable {
			e.add(Step{Action: ActionFence, Instance: i, Why: "no primary is recorded and it is writable"})
		}
		e.refuse(fmt.Sprintf("no primary is recorded and instances %v are writable (fenced); record the "+
			"primary by hand", writable))
		return
	}
	if len(unreachable) > 0 {
		e.refuse(fmt.Sprintf("no primary is recorded yet; bootstrap waits for every instance, and %v do not "+
			"answer", unreachable))
		return
	}
	for i, o := range e.obs {
		if r := o.Status.Replica; r != nil {
			e.refuse(fmt.Sprintf("no primary is recorded but instance %d replicates from %s:%d; record the "+
				"primary by hand", i, r.SourceHost, r.SourcePort))
			return
		}
	}
	if u := e.obs[0].Unhealthy; u != "" {
		e.refuse(fmt.Sprintf("no primary is recorded yet and instance 0 is unhealthy: %s", u))
		return
	}
	first := e.status(0).Executed
	for i := 1; i < e.n; i++ {
		if extra := e.status(i).Executed.Subtract(first); !extra.IsEmpty() {
			e.refuse(fmt.Sprintf("no primary is recorded yet and instance %d holds transactions instance 0 "+
				"lacks (%s); record the primary by hand", i, extra))
			return
		}
	}
	e.decision = Decision{Kind: Bootstrap, From: -1, To: 0}
	e.next = withPrimary(Record{}, 0, e.status(0).ServerID, e.w, e.decision)
	e.add(Step{Action: ActionSaveRecord, Record: e.next, Why: "bootstrap: instance 0 is the first primary"})
	e.add(Step{Action: ActionPromote, Instance: 0, SemiSync: e.semiSync(), Why: "bootstrap"})
	for i := 1; i < e.n; i++ {
		e.add(Step{Action: ActionReplicate, Instance: i, Source: 0, Address: e.d.Addresses[0], Why: "bootstrap"})
	}
}

// fenceStrangers fences every writable instance other than the recorded primary: a returning old primary, a
// partitioned one, or one somebody made writable. Whether it rejoins is decided once it is read-only.
func (e *engine) fenceStrangers() {
	for i, o := range e.obs {
		if i == e.p || !o.Reachable() || readOnly(o.Status) {
			continue
		}
		e.fenced[i] = true
		e.add(Step{Action: ActionFence, Instance: i,
			Why: fmt.Sprintf("instance %d is writable but the primary is instance %d", i, e.p)})
	}
}

// primaryFailure says why the recorded primary must be replaced, or "".
func (e *engine) primaryFailure() string {
	if e.p >= e.n {
		return fmt.Sprintf("the recorded primary %d is not among the %d instances", e.p, e.n)
	}
	o := e.obs[e.p]
	switch {
	case !o.Reachable():
		return fmt.Sprintf("primary %d is unreachable: %v", e.p, o.Err)
	case o.Unhealthy != "":
		return fmt.Sprintf("primary %d is unhealthy: %s", e.p, o.Unhealthy)
	case e.rec.PrimaryServerID != 0 && o.Status.ServerID != e.rec.PrimaryServerID:
		return fmt.Sprintf("primary %d has lost its data: it answers with server_id %d, not the recorded %d, so "+
			"its data directory is a new one", e.p, o.Status.ServerID, e.rec.PrimaryServerID)
	}
	// A primary that comes back with an empty data directory would otherwise make every replica look errant
	// and be made writable: the data is on the replicas (MOCO's lostData).
	if o.Status.Executed.IsEmpty() {
		for i, r := range e.obs {
			if i != e.p && r.Reachable() && !e.rec.isErrant(i) && !r.Status.Executed.IsEmpty() {
				return fmt.Sprintf("primary %d has lost its data: it has executed nothing and instance %d has "+
					"executed %s", e.p, i, r.Status.Executed)
			}
		}
	}
	return ""
}

// failover replaces a lost primary in two passes. The first stops every replica's receiver, so that nothing
// more reaches the old primary's replicas and the old primary, if it still runs somewhere, cannot have a commit
// acknowledged (its semi-sync wait never falls back). The second, with the receivers stopped and their
// received sets final, checks that enough instances answered, chooses the replica that holds everything the
// others hold, records it, promotes it (which waits until it has applied all it received) and points the
// others at it.
func (e *engine) failover(reason string) {
	if e.n == 1 {
		e.refuse(reason + "; there is no other instance to fail over to")
		return
	}
	if e.p < e.n && e.obs[e.p].Reachable() {
		e.add(Step{Action: ActionFence, Instance: e.p, Why: "fence the lost primary: " + reason})
	}
	stopping := false
	for i, o := range e.obs {
		if i == e.p || !o.Reachable() || o.Status.Replica == nil || o.Status.Replica.IOState == "No" {
			continue
		}
		e.add(Step{Action: ActionStopReplicaIO, Instance: i, Why: "failover: stop receiving from the lost primary"})
		stopping = true
	}
	if stopping {
		e.decision = Decision{Kind: FailoverStarted, From: e.p, To: -1, Reason: reason}
		return
	}

	var answered, silent []int
	for i, o := range e.obs {
		switch {
		case i == e.p:
		case o.Reachable():
			answered = append(answered, i)
		default:
			silent = append(silent, i)
		}
	}
	refuse := func(why string) {
		e.decision = Decision{Kind: Refused, From: e.p, To: -1, Reason: "failover refused: " + reason + "; " + why}
	}
	// FailoverQuorum, counted over the instances other than the primary (all of them when the recorded
	// primary is beyond the set).
	others := len(answered) + len(silent)
	if w := e.acknowledgements(); len(answered) < others-w+1 {
		refuse(fmt.Sprintf("commits waited for %d acknowledgement(s), so %d of the %d other instances must "+
			"answer to be sure no acknowledged transaction is lost, and %v do not", w, others-w+1, others, silent))
		return
	}

	// held is what each answering instance holds or is about to apply. Transactions an instance wrote itself
	// while it was errant or writable out of turn are nobody's to carry on.
	held := map[int]mysql.GTIDSet{}
	var candidates []int
	for _, i := range answered {
		st := e.status(i)
		set := heldBy(st)
		if e.errant(i) || e.fenced[i] {
			set = set.Without(st.SourceID)
		} else if st.Replica != nil && e.obs[i].Unhealthy == "" {
			candidates = append(candidates, i)
		}
		held[i] = set
	}
	if len(candidates) == 0 {
		refuse(fmt.Sprintf("none of the instances that answer (%v) is a healthy replica without errant "+
			"transactions", answered))
		return
	}
	// Only a candidate that holds every transaction any other answering instance holds may be promoted:
	// anything it lacks could be a write the application was told was committed.
	var covering []int
	var lacks []string
	for _, c := range candidates {
		ok := true
		for _, o := range answered {
			if o == c {
				continue
			}
			if missing := held[o].Subtract(held[c]); !missing.IsEmpty() {
				ok = false
				lacks = append(lacks, fmt.Sprintf("%d lacks %s of %d", c, missing, o))
				break
			}
		}
		if ok {
			covering = append(covering, c)
		}
	}
	if len(covering) == 0 {
		refuse("no replica holds every transaction the others hold (" + strings.Join(lacks, "; ") + ")")
		return
	}
	// The requested primary first, then one away from the controller's node, then the lowest index; and one
	// that can apply what it received.
	slices.SortStableFunc(covering, func(a, b int) int { return cmpBool(e.withController(a), e.withController(b)) })
	if req := e.d.Primary; req != nil && slices.Contains(covering, *req) {
		covering = append([]int{*req}, slices.DeleteFunc(covering, func(c int) bool { return c == *req })...)
	}
	chosen := -1
	var stuck string
	for _, c := range covering {
		r := e.status(c).Replica
		if r.SQLRunning || r.Received == nil || r.Received.Subtract(e.status(c).Executed).IsEmpty() {
			chosen = c
			break
		}
		if stuck == "" {
			stuck = fmt.Sprintf("replica %d holds the most transactions but its applier is stopped with "+
				"transactions left to apply (error %d: %s)", c, r.LastSQLErrno, r.LastSQLError)
		}
	}
	if chosen < 0 {
		refuse(stuck)
		return
	}

	e.next = withPrimary(e.next, chosen, e.status(chosen).ServerID, e.w, Decision{Kind: Failover, From: e.p,
		Reason: reason})
	if e.p < e.n {
		e.next.Deposed = append(slices.DeleteFunc(e.next.Deposed, func(d Deposed) bool { return d.Instance == e.p }),
			Deposed{Instance: e.p, ServerID: e.rec.PrimaryServerID,
				Unacknowledged: e.rec.Unacknowledged || e.rec.SemiSyncWait == 0 || e.rec.PrimaryServerID == 0})
	}
	e.add(Step{Action: ActionSaveRecord, Record: e.next, Why: fmt.Sprintf("failover to instance %d", chosen)})
	e.add(Step{Action: ActionPromote, Instance: chosen, SemiSync: e.semiSync(),
		Why: "failover: promote once every received transaction is applied"})
	for _, i := range answered {
		if i == chosen || e.errant(i) || e.fenced[i] {
			continue
		}
		e.add(Step{Action: ActionReplicate, Instance: i, Source: chosen, Address: e.d.Addresses[chosen],
			Why: "failover: follow the new primary"})
	}
	e.decision = Decision{Kind: Failover, From: e.p, To: chosen, Reason: reason}
}

// computeErrant compares every answering instance with the primary. Instances that do not answer, or were
// fenced in this pass, keep what the record says.
func (e *engine) computeErrant() {
	pst := e.status(e.p)
	// A primary still being promoted (its controller died while it applied what it received) is about to hold
	// what it received; a replica that holds it too is not errant.
	primary := heldBy(pst)
	var errant []int
	for i, o := range e.obs {
		if i == e.p {
			continue
		}
		if !o.Reachable() || e.fenced[i] {
			if e.rec.isErrant(i) {
				errant = append(errant, i)
			}
			continue
		}
		// Leaving out the primary's own transactions keeps a replica read after the primary from looking
		// errant (cybozu-go/moco#419).
		if set := mysql.ErrantTransactions(o.Status.Executed, primary, pst.SourceID); !set.IsEmpty() {
			e.errantSets[i] = set
			errant = append(errant, i)
		}
	}
	e.next.Errant = errant
}

// switchoverRefusal says why instance r must not become the primary now, or "".
func (e *engine) switchoverRefusal(r int) string {
	if r < 0 || r >= e.n {
		return fmt.Sprintf("there is no instance %d (0..%d)", r, e.n-1)
	}
	o := e.obs[r]
	switch {
	case !o.Reachable():
		return fmt.Sprintf("it is unreachable: %v", o.Err)
	case e.errant(r):
		return fmt.Sprintf("it has errant transactions %s", e.errantSets[r])
	case o.Unhealthy != "":
		return "it is unhealthy: " + o.Unhealthy
	case e.fenced[r]:
		return "it was writable and is being fenced"
	}
	if why := e.replicaProblem(r, e.p); why != "" {
		return why
	}
	lag := o.Status.Replica.Lag
	switch {
	case lag == nil:
		return "its replication lag is unknown"
	case *lag > e.d.MaxLag:
		return fmt.Sprintf("it lags %s behind the primary, more than the bound of %s", *lag, e.d.MaxLag)
	}
	return ""
}

// switchover moves the primary from p to r: let r catch up with p while p still takes writes, fence p (end
// its clients, make it read-only), wait until r has applied everything p executed, record r, point the other
// replicas at r, promote it, and point p at it.
//
// The first wait, bounded by MaxLag, comes before the fence because the observed lag can hide a backlog
// (Seconds_Behind_Master reads 0 for a replica delayed on purpose or just handed a burst): a target that
// cannot catch up within the bound fails the plan while the primary is still writable, and the next pass
// decides again, usually refusing on the lag it then shows. Only the writes made during that first wait are
// left for the second, which the primary's clients wait out.
//
// The replicas follow r before it is promoted, not after: then the first commits on r find their semi-sync
// acknowledgers connected instead of waiting for them to reconnect (on kind that wait was most of the
// switchover's second after the fence). It is safe because r has applied everything p executed, so every
// replica's position is in r's binary log; a replica attached while r's source side of semi-sync is off counts
// as a semi-sync replica once the promotion turns it on (MariaDB 10.11, TestSwitchoverReplicasAcknowledgeAtOnce;
// not tried on a MySQL server). Each of those steps is bounded by attachTimeout, so a replica that hangs delays
// the promotion by that much at most, and the next pass repoints it. p follows only after the promotion: pointed
// at r while r still replicates from p, the two would be each other's source.
func (e *engine) switchover(r int) {
	e.stopErrantReceivers()
	e.add(Step{Action: ActionWaitForExecuted, Instance: r, Source: e.p, Timeout: max(e.d.MaxLag, time.Second),
		Why: "switchover: the target must catch up within the lag bound before the primary is fenced"})
	e.add(Step{Action: ActionFence, Instance: e.p, Why: fmt.Sprintf("switchover to instance %d", r)})
	e.add(Step{Action: ActionWaitForExecuted, Instance: r, Source: e.p, Timeout: e.d.switchoverTimeout(),
		Why: "switchover: the target must hold every transaction of the fenced primary"})
	e.next = withPrimary(e.next, r, e.status(r).ServerID, e.w, Decision{Kind: Switchover, From: e.p})
	e.add(Step{Action: ActionSaveRecord, Record: e.next, Why: fmt.Sprintf("switchover to instance %d", r)})
	for i, o := range e.obs {
		if i == r || i == e.p || !o.Reachable() || e.errant(i) || e.fenced[i] || e.leaving(i) {
			continue
		}
		e.add(Step{Action: ActionReplicate, Instance: i, Source: r, Address: e.d.Addresses[r], Timeout: attachTimeout,
			Why: "switchover: follow the new primary, connected before it takes writes"})
	}
	e.add(Step{Action: ActionPromote, Instance: r, SemiSync: e.semiSync(), Why: "switchover"})
	if !e.leaving(e.p) {
		e.add(Step{Action: ActionReplicate, Instance: e.p, Source: r, Address: e.d.Addresses[r],
			Why: "switchover: the former primary follows the new one"})
	}
	e.decision = Decision{Kind: Switchover, From: e.p, To: r}
}

// attachTimeout bounds the repointing of a replica before a switchover's promotion (see switchover).
const attachTimeout = 5 * time.Second

// stopErrantReceivers stops errant instances from receiving: they must not acknowledge commits (an
// acknowledgement only they hold could not be carried over by a failover) nor break on the primary's next
// transaction.
func (e *engine) stopErrantReceivers() {
	for i, o := range e.obs {
		if i == e.p || !e.errant(i) || !o.Reachable() || e.fenced[i] {
			continue
		}
		if r := o.Status.Replica; r != nil && r.IOState != "No" {
			e.add(Step{Action: ActionStopReplicaIO, Instance: i,
				Why: fmt.Sprintf("instance %d has errant transactions", i)})
		}
	}
}

// repair puts right what is wrong around a primary that answers, and does nothing when nothing is wrong.
func (e *engine) repair() {
	pst := e.status(e.p)
	if !readOnly(pst) && pst.Replica == nil {
		// A record written before the primary's server_id was kept learns it from a writable primary: a new
		// server on the primary's ordinal boots read-only, so a writable one is the primary that has served.
		if e.next.PrimaryServerID == 0 {
			e.next.PrimaryServerID = pst.ServerID
		}
		// The wait count is lowered here, before the primary is configured below to wait for fewer, and
		// raised once the primary is seen waiting for more (Record.SemiSyncWait). A primary whose semi-sync is
		// off or fell back changes nothing: that is reported and repaired, not a new count.
		if c := configuredWait(pst); c > 0 {
			e.next.SemiSyncWait = min(e.w, c)
		}
	}
	e.trackTerms(pst)
	if !e.next.equal(e.rec) {
		e.add(Step{Action: ActionSaveRecord, Record: e.next, Why: "the primary's server_id, semi-sync wait " +
			"count, errant instances or former primaries changed"})
	}
	e.stopErrantReceivers()
	e.stopLeavingReceivers()

	switch {
	case pst.Replica != nil:
		e.add(Step{Action: ActionPromote, Instance: e.p, SemiSync: e.semiSync(),
			Why: fmt.Sprintf("the primary replicates from %s:%d", pst.Replica.SourceHost, pst.Replica.SourcePort)})
		e.finishChange()
	case readOnly(pst):
		e.add(Step{Action: ActionPromote, Instance: e.p, SemiSync: e.semiSync(), Why: "the primary is read-only"})
		e.finishChange()
	case semiSyncProblem(pst.SemiSync, e.primaryWait(pst)) != "":
		w := e.primaryWait(pst)
		why := "the primary's semi-sync " + semiSyncProblem(pst.SemiSync, w)
		if w == 0 && e.w > 0 {
			why = e.async
		}
		e.add(Step{Action: ActionConfigureSemiSync, Instance: e.p, SemiSync: mysql.SemiSync{WaitForReplicas: w},
			Why: why})
	}
	rebuilds := e.rebuilds()
	for i, o := range e.obs {
		if i == e.p || !o.Reachable() || e.fenced[i] || e.errant(i) || e.leaving(i) || rebuilds.has(i) {
			continue
		}
		if o.Seeding != "" {
			e.held[i] = o.Seeding
			continue
		}
		if why := e.replicaProblem(i, e.p); why != "" && !e.starting(i, e.p) && e.fromBinlogs(i, &rebuilds) {
			e.add(Step{Action: ActionReplicate, Instance: i, Source: e.p, Address: e.d.Addresses[e.p], Why: why})
		}
	}
	rebuilds.add(e)
	if e.decision.Kind != "" {
		return // a refused switchover, scale-down or rebuild; the repairs go on
	}
	e.decision = Decision{Kind: Steady, From: -1, To: -1}
	if len(e.steps) > 0 {
		e.decision.Kind = Repair
	}
}

// finishChange makes the recorded change of primary the one this plan completes: it promotes a recorded
// primary that is not writable yet, as when the controller that recorded it died before it promoted it.
func (e *engine) finishChange() {
	if c := e.rec.Change; c != nil {
		e.completed = &Decision{Kind: c.Kind, From: c.From, To: e.p, Reason: c.Reason}
	}
}

// fromBinlogs tells whether instance i, which is to be pointed at the primary, can get what it lacks from the
// primary's binary logs by GTID auto-positioning (repointing discards its relay log: only what it executed
// counts). If not, an instance that has executed nothing is seeded with a dump; one that holds transactions
// is never seeded over: if all of them are on the primary it is rebuilt (emptied, then seeded by the next pass),
// else it is left as it is and reported, for a human to rebuild. Rebuilds go with the pass's others, after
// every other repair: a failed one stops the plan. When the primary's
// purged set could not be read, an empty instance waits: pointed at a primary whose binary logs start after
// the beginning of its history, MariaDB would replicate from there and silently leave out what came before.
func (e *engine) fromBinlogs(i int, rebuilds *rebuildPlan) bool {
	st, po := e.status(i), e.obs[e.p]
	empty := st.Executed == nil || st.Executed.IsEmpty()
	switch {
	case po.Purged == nil && po.PurgedErr != nil && empty && !e.status(e.p).Executed.IsEmpty():
		e.held[i] = fmt.Sprintf("instance %d has executed nothing and whether the primary's binary logs hold the "+
			"whole history could not be read: %v", i, po.PurgedErr)
		return false
	case empty && hasSource(e.status(e.p).Executed, st.SourceID):
		// Replaying the binary logs would skip, or not, its own former transactions as its own (a rebuilt
		// server keeps its server_id; see mysql.Server.Empty): a dump carries them.
		src := e.seedSource()
		e.held[i] = fmt.Sprintf("seeding from instance %d: it has executed nothing and the primary's history "+
			"holds transactions it wrote itself, which replaying the binary logs could skip", src)
		e.add(Step{Action: ActionSeed, Instance: i, Source: src, Why: e.held[i]})
		return false
	case po.Purged == nil || po.Purged.IsEmpty() || (!empty && st.Executed.Contains(po.Purged)):
		return true
	case empty:
		src := e.seedSource()
		e.held[i] = fmt.Sprintf("seeding from instance %d: it has executed nothing and the primary's binary "+
			"logs no longer hold %s", src, po.Purged)
		e.add(Step{Action: ActionSeed, Instance: i, Source: src, Why: e.held[i]})
		return false
	}
	extra := st.Executed.Subtract(e.status(e.p).Executed)
	if !extra.IsEmpty() {
		e.held[i] = fmt.Sprintf("cannot catch up: the primary's binary logs no longer hold %s and instance %d, "+
			"which has executed %s, lacks some of it; it holds transactions the primary lacks, so it is not "+
			"rebuilt: rebuild it by hand (mysqlfleet rebuild) to have it seeded", po.Purged, i, st.Executed)
		return false
	}
	// Everything it holds is on the primary (read after it): emptying it discards nothing, and the next pass
	// seeds it, as any empty server.
	e.held[i] = fmt.Sprintf("rebuilt: the primary's binary logs no longer hold %s and instance %d, which has "+
		"executed %s, lacks some of it; all it holds is on the primary", po.Purged, i, st.Executed)
	rebuilds.steps = append(rebuilds.steps, Step{Action: ActionRebuild, Instance: i,
		Executed: e.pinnedExecuted(i, extra), Discarded: extra, Why: e.held[i]})
	return false
}

// seedSource is the instance a seed dumps: the lowest replica in sync, which spares the primary the dump's
// read load (as backups do), or the primary.
func (e *engine) seedSource() int {
	for i, o := range e.obs {
		if i == e.p || !o.Reachable() || e.fenced[i] || e.errant(i) || o.Unhealthy != "" || o.Seeding != "" ||
			e.replicaProblem(i, e.p) != "" {
			continue
		}
		if lag := o.Status.Replica.Lag; lag != nil && *lag <= e.d.MaxLag {
			return i
		}
	}
	return e.p
}

// writesBlocked says why the recorded primary, writable and kept by this plan, cannot return a commit now, or "".
func (e *engine) writesBlocked() string {
	if e.p < 0 || e.p >= len(e.obs) || e.next.PrimaryIndex() != e.p || !e.obs[e.p].Reachable() {
		return ""
	}
	st := e.status(e.p)
	w := configuredWait(st)
	if readOnly(st) || st.Replica != nil || w == 0 || st.SemiSync.Replicas >= w {
		return ""
	}
	msg := fmt.Sprintf("its commits wait for %d semi-sync acknowledgement(s) and %d replica(s) are connected to "+
		"give them", w, st.SemiSync.Replicas)
	if n := st.SemiSync.WaitingSessions; n > 0 {
		msg += fmt.Sprintf("; %d commit(s) waiting", n)
	}
	return msg
}

// primaryWait is the semi-sync wait count the primary, writable and answering, should have: e.w, or 0 under
// durability Preferred while no commit could return otherwise (see the package documentation, "Durability").
// Semi-sync goes off only when commits wait for acknowledgements that too few connected replicas can give
// and fewer than e.w replicas are in sync, and on again only once e.w replicas are in sync: while it is off
// the primary counts no semi-sync clients, so the replicas, not the primary, tell when it can be on again.
// A primary whose semi-sync state is unknown is left to the ordinary repair.
func (e *engine) primaryWait(pst *mysql.Status) int {
	if !e.d.Preferred || e.w == 0 || pst.SemiSync == nil || e.replicasInSync() >= e.w {
		return e.w
	}
	if c := configuredWait(pst); c > 0 && pst.SemiSync.Replicas >= c {
		return e.w // commits still return with their acknowledgements
	}
	e.async = fmt.Sprintf("semi-sync is off: %d replica(s) in sync, and commits would wait for %d "+
		"acknowledgement(s) (durability Preferred)", e.replicasInSync(), e.w)
	return 0
}

// replicasInSync counts the replicas of the primary that could acknowledge its commits now: replicating
// without a problem, within MaxLag, and neither fenced, errant nor leaving.
func (e *engine) replicasInSync() int {
	return e.countReplicas(func(i int) bool {
		lag := e.status(i).Replica.Lag
		return lag != nil && *lag <= e.d.MaxLag
	})
}

// countReplicas counts the instances, also passing and, that replicate from the primary without a problem and
// that stay: neither fenced, errant nor leaving.
func (e *engine) countReplicas(and func(i int) bool) int {
	n := 0
	for i, o := range e.obs {
		if i == e.p || !o.Reachable() || e.fenced[i] || e.errant(i) || e.leaving(i) || e.replicaProblem(i, e.p) != "" {
			continue
		}
		if and(i) {
			n++
		}
	}
	return n
}

// acknowledgements is how many acknowledgements the lost primary's commits waited for at least: the record's
// count, which is never above the one configured (Record.SemiSyncWait), and never above the desired one; one
// for a record that predates it.
func (e *engine) acknowledgements() int {
	if r := e.rec.SemiSyncWait; r > 0 {
		return min(e.w, r)
	}
	return min(e.w, 1)
}

// configuredWait is the number of acknowledgements a server's commits wait for, as read back: 0 when semi-sync
// is off or fell back.
func configuredWait(st *mysql.Status) int {
	if s := st.SemiSync; s != nil && s.SourceEnabled && s.SourceActive {
		return s.WaitForReplicaCount
	}
	return 0
}

// semiSyncProblem says how a primary's semi-sync differs from waiting for w acknowledgements without ever
// falling back, as read back from the server, or "". Settings are not enough: a source whose commit waited out
// the timeout (MySQL's longest is 49.7 days) stays asynchronous, enabled but not active, until a replica catches
// up; reconfiguring re-arms it (see mysql.Server.ConfigureSemiSync). With wait_no_replica off it would fall
// back as soon as its replicas are gone.
func semiSyncProblem(s *mysql.SemiSyncStatus, w int) string {
	switch {
	case s == nil && w == 0:
		return ""
	case s == nil:
		return "state is unknown"
	case w == 0 && s.SourceEnabled:
		return "is on with no replica to wait for"
	case w == 0:
		return ""
	case !s.SourceEnabled:
		return "is off"
	case s.WaitForReplicaCount != w:
		return fmt.Sprintf("waits for %d acknowledgements, not %d", s.WaitForReplicaCount, w)
	case !strings.EqualFold(s.WaitPoint, "AFTER_SYNC"):
		return fmt.Sprintf("waits %s, not AFTER_SYNC", s.WaitPoint)
	case s.Timeout < neverFallBack:
		return fmt.Sprintf("falls back to asynchronous after %s", s.Timeout)
	case !s.WaitNoReplica:
		return "falls back to asynchronous when no replica is connected (wait_no_replica is off)"
	case !s.SourceActive:
		return fmt.Sprintf("has fallen back to asynchronous (%d commits without an acknowledgement since the "+
			"server started)", s.AsyncCommits)
	}
	return ""
}

// replicaProblem says why instance i is not a working replica of instance src, or "".
func (e *engine) replicaProblem(i, src int) string {
	st := e.status(i)
	r := st.Replica
	a := e.d.Addresses[src]
	switch {
	case r == nil:
		return fmt.Sprintf("instance %d does not replicate", i)
	case !replicatesFrom(r, a):
		return fmt.Sprintf("instance %d replicates from %s:%d, not from the primary %d (%s)", i, r.SourceHost,
			r.SourcePort, src, a)
	case !r.Running():
		return fmt.Sprintf("replication on instance %d is not running (receiver %s, applier running %t)%s", i,
			r.IOState, r.SQLRunning, replicationError(r))
	case e.w > 0 && (st.SemiSync == nil || !st.SemiSync.ReplicaEnabled):
		return fmt.Sprintf("instance %d does not acknowledge as a semi-sync replica", i)
	}
	return ""
}

// starting tells whether instance i's receiver is still connecting to src for the first time since it was
// started: right source, applier running, no receiver error yet. Restarting it would only start it again.
// (After an error, Connecting means the source went away: that is repaired.)
func (e *engine) starting(i, src int) bool {
	r := e.status(i).Replica
	a := e.d.Addresses[src]
	return r != nil && replicatesFrom(r, a) && r.SQLRunning &&
		r.IOState != "Yes" && r.IOState != "No" && r.LastIOErrno == 0
}

// replicatesFrom tells whether replica r is pointed at address a.
func replicatesFrom(r *mysql.ReplicaStatus, a Address) bool {
	return strings.EqualFold(r.SourceHost, a.Host) && r.SourcePort == a.Port
}

func replicationError(r *mysql.ReplicaStatus) string {
	switch {
	case r.LastSQLErrno != 0:
		return fmt.Sprintf(": applier error %d: %s", r.LastSQLErrno, r.LastSQLError)
	case r.LastIOErrno != 0:
		return fmt.Sprintf(": receiver error %d: %s", r.LastIOErrno, r.LastIOError)
	}
	return ""
}

func (e *engine) report() Report {
	rep := Report{Decision: e.decision, Primary: e.next.PrimaryIndex()}
	if e.n == 0 || len(e.obs) != e.n {
		rep.LastError = e.decision.Reason
		return rep
	}
	np := rep.Primary
	for i, o := range e.obs {
		in := InstanceReport{Index: i, Role: RoleNone}
		st := o.Status
		if st != nil {
			in.Executed = st.Executed.String()
		}
		if set, ok := e.errantSets[i]; ok {
			in.Errant = set.String()
		}
		switch {
		case i == np:
			in.Role = RolePrimary
		case e.errant(i):
			in.Role = RoleErrant
		case st == nil:
			in.Role = RoleUnreachable
		case np >= 0 && np < e.n && !e.fenced[i] && e.replicaProblem(i, np) == "":
			in.Role = RoleReplica
			in.Lag = st.Replica.Lag
			in.InSync = in.Lag != nil && *in.Lag <= e.d.MaxLag
		}
		switch {
		case o.Err != nil:
			in.Error = o.Err.Error()
		case e.held[i] != "":
			in.Error = e.held[i]
		case st != nil && st.Replica != nil && replicationError(st.Replica) != "":
			in.Error = strings.TrimPrefix(replicationError(st.Replica), ": ")
		case o.Unhealthy != "":
			in.Error = "unhealthy: " + o.Unhealthy
		}
		if in.Error != "" && rep.LastError == "" {
			rep.LastError = fmt.Sprintf("instance %d: %s", i, in.Error)
		}
		rep.Instances = append(rep.Instances, in)
	}
	if e.decision.Kind == Refused {
		rep.LastError = e.decision.Reason
	}
	return rep
}
