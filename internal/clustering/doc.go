// Package clustering is the member controller's decision engine: which instance of a MySQLCluster's set in
// one member is the primary, and what to do to every instance so that the set keeps one writable primary and
// replicas that hold every acknowledged transaction. It follows MOCO's clustering package: decisions are pure,
// over the observed state of the instances and a small record, and act through an interface of server
// operations (Ops), so that each rule is table-tested and the same code runs against real servers.
//
// # One pass
//
// Observe reads every instance's mysql.Status (the primary's last, see Observe). Decide takes the Desired set,
// the Record kept from earlier passes (the primary's index, how it became primary, and the errant instances) and
// the observations,
// and returns a Plan: a Decision, ordered Steps, the Record after the steps and a Report. Execute runs the
// steps over Ops. Reconcile does the three. The member controller persists the record (through the plan's
// save-record step, placed before any new primary turns writable), labels Pods after the report, and calls
// again soon when Plan.Requeue says so. It decides, before calling, when an instance counts as unreachable
// (after retries) or Unhealthy; the engine trusts what it is given. ServerOps asks an optional Guard (the member
// controller's leader election lease) before every change and every statement it sends, so that a controller
// paused in the middle of a plan stops there. No Kubernetes here.
//
// # Decisions and their rules
//
// In order of precedence:
//
//   - No primary recorded. Bootstrap when every instance answers, none is writable or replicates, and instance
//     0 holds every transaction any other holds (fresh servers hold none): record 0, promote it with
//     semi-sync, point the others at it with GTID auto-positioning. If exactly one instance is writable the
//     record was lost: Adopt it. Otherwise refuse (and fence the writable ones).
//   - Never two writable instances: any writable instance other than the recorded primary is fenced (its
//     clients' connections ended, then read-only) before anything else; what becomes of it is decided in the
//     next pass, from its state once fenced.
//   - The primary is lost when it does not answer, is marked Unhealthy, answers with another server_id than
//     the record keeps (a new data directory on its ordinal: render gives each its own, see
//     Record.PrimaryServerID), or answers with an empty executed set while another instance holds
//     transactions (a lost volume, for records from before the server_id was kept). Failover, in two passes:
//     FailoverStarted fences the old primary if it answers and stops every replica's receiver, so that nothing
//     more is acknowledged to the old primary (its commits then wait forever: semi-sync never falls back).
//     Failover then requires FailoverQuorum instances to answer, takes each one's executed ∪ received set
//     (without its own transactions if it is errant), and promotes the replica that holds every transaction
//     every other answering instance holds: never one that lacks a transaction another has. Among several,
//     the requested primary, then one whose Pod is not on the controller's own node (Desired.WithController),
//     then the lowest index. It must be able to apply what it received. The record
//     moves to it, it is promoted (Promote waits until it has applied everything it received: an
//     acknowledgement means received, not applied), and the others follow it. Refused, with the reason, when
//     too few answer, when the replicas diverge, or when the best one cannot apply.
//   - Otherwise the primary answers. If it is not writable yet (its controller died while promoting it), it
//     is promoted, and the change the record keeps is reported as completed. Errant transactions are computed
//     for every other instance that answers: what it executed that the primary has not (executed, or received
//     while it is still being promoted), leaving out the primary's own transactions (a replica read
//     after the primary may be ahead of the primary's set, cybozu-go/moco#419). Errant instances are recorded,
//     their receivers stopped, never repointed nor promoted, and reported until a human rebuilds them; a
//     returning old primary whose transactions are all on the new primary is not errant and simply rejoins.
//   - A switchover is requested (Desired.Primary differs from the record): refused, with the reason, unless the
//     target answers, is healthy, has no errant transaction, replicates from the primary with both threads
//     running, and lags no more than MaxLag. Then: wait (at most MaxLag, the primary still writable) until the
//     target has applied what the primary has executed, because the reported lag can hide a backlog; fence the
//     old primary; wait until the target has applied every transaction the fenced primary executed; record the
//     target; point the other replicas at it (each within 5 s), so that its first commits find their
//     acknowledgers connected; promote it; point the old primary at it. A refused switchover still lets the
//     repairs below run.
//   - An instance that does not replicate and has executed nothing, whose lack the primary's binary logs can no
//     longer fill (Observation.Purged), is seeded from the lowest replica in sync or the primary; one that holds
//     transactions is reported and never seeded over (see fromBinlogs).
//   - Repair: a read-only primary, or one that replicates, is promoted; one whose semi-sync differs, as read
//     back (settings, wait_no_replica, and whether it still waits: one that fell back is re-armed), is
//     reconfigured; an instance that does not replicate from the primary, or whose threads are stopped, or
//     that does not acknowledge, is repointed (which restarts it).
//   - A scale-down is asked for (Desired.ShrinkTo): a primary that is leaving is switched over below the new
//     size, the leaving instances' receivers are stopped and they are not repaired, and the report says when a
//     staying replica holds everything the primary executed (Report.ShrinkReady); neither step is taken while
//     too few staying replicas work to acknowledge the primary's commits. See shrink.go.
//   - Steady: nothing differs, the plan is empty. The member controller adds no write to an idle member.
//
// # Semi-sync wait count
//
// The primary waits (AFTER_SYNC, with a timeout that never falls back to asynchronous) for w replicas to hold
// each transaction before its commit returns, so an acknowledged transaction exists on at least one replica
// whenever w ≥ 1. DefaultSemiSyncWait picks w; FailoverQuorum (n-w) is how many of the other instances must
// answer before a failover can be sure to carry every acknowledged transaction over:
//
//	instances n   MySQL w   failover needs   MariaDB w   failover needs
//	1             0         no failover      0           no failover
//	2             1         1 of 1           1           1 of 1
//	3             1         2 of 2           1           2 of 2
//	4             2         2 of 3           1           3 of 3
//	5             2         3 of 4           1           4 of 4
//	6             3         3 of 5           1           5 of 5
//
// Writes stop (they wait, they are never acknowledged asynchronously) while fewer than w replicas are up.
// MariaDB waits for exactly one acknowledgement and cannot be told otherwise, so on MariaDB writes survive
// all replicas but one being down, and automatic failover needs every replica to answer.
//
// The w a failover counts with is the one the lost primary's commits had, never the desired one: the record
// keeps a bound on it (Record.SemiSyncWait), lowered before the primary is configured to wait for fewer and
// raised once it is seen waiting for more, so that a scale-up on MySQL (whose desired w grows before the
// primary is reconfigured) does not shrink the quorum, and every instance of a set being scaled down counts
// until its Pods are gone. While the primary waits for more acknowledgements than it has replicas connected,
// the report says its writes are blocked (Report.WritesBlocked).
//
// # Durability
//
// Required (the default, Desired.Preferred false) is the rule above: commits wait, for as long as it takes, for
// w acknowledgements. Preferred (CloudNativePG's dataDurability: preferred) trades that for availability:
// when the primary's commits cannot return (it has fewer semi-sync replicas connected than w) and fewer than w
// replicas are in sync, its semi-sync is switched off and commits return at once, unacknowledged
// (Report.Async); as soon as w replicas are in sync again it is switched back on. Off and on are decided on
// different facts, so it does not flap: off needs the primary's own count of connected replicas to fall
// short, on needs the replicas to be in sync (while semi-sync is off the primary counts no semi-sync clients).
//
// What Preferred gives up: a commit made during the window may exist on the primary alone. If the primary is
// lost then, a failover (which still asks for the quorum of w: Record.SemiSyncWait is only ever set from a
// primary whose semi-sync is on, and the window does not lower it) promotes the best replica, which lacks
// those commits: they are lost. That is why the member controller records the window (its start and end) for
// the hub. Commits made before the window began, and after it ended, keep Required's guarantee.
//
// # Limits
//
// Observed facts are as fresh as the pass: the engine relies on the two-pass failover and on the primary
// being read last (Observe reads a primary that answers twice; one that does not is read again by the next
// pass, and only a failover's second pass, with the primary still silent, promotes: a first pass started on one
// slow answer is undone by the next). How long a primary must be silent before it
// counts as unreachable is the member controller's choice. A replica that turns errant between the last pass
// and the primary's loss is not known to be errant at the failover (as in MOCO). The record of errant
// instances is kept only for failovers; it is recomputed whenever the primary answers, so a rebuilt instance
// clears itself.
package clustering
