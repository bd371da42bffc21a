package clustering

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Address is where the other instances reach an instance for replication: a Pod's stable DNS name in a
// member, 127.0.0.1 and a port in tests.
type Address struct {
	Host string
	Port int
}

func (a Address) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Desired is what the MySQLCluster asks of one member's set of instances.
type Desired struct {
	// Name is the MySQLCluster's name; it only appears in messages.
	Name string
	// Engine is spec.engine.
	Engine mysql.Engine
	// Addresses holds, for each instance index 0..N-1 (the StatefulSet's ordinals), where replicas reach it.
	// Its length is spec.replicas, N.
	Addresses []Address
	// SemiSyncWait is how many replicas acknowledge each commit before it returns. 0 means
	// DefaultSemiSyncWait, which is what the product uses; other values are for tests and must lie in
	// 1..N-1 (exactly 1 on MariaDB). See the package documentation for the rule and its consequences.
	SemiSyncWait int
	// MaxLag bounds the replication lag of a replica that counts as in sync, and of a switchover target.
	MaxLag time.Duration
	// WithController marks, by instance index, the instances whose Pod runs on the node of the controller that
	// decides (nil or short: none). Among replicas equally fit to replace a lost primary, a failover prefers one
	// that does not share the controller's node, so that one node's loss never takes both the primary and the
	// controller that would replace it: the standby controller first waits for the leader's Lease to expire.
	WithController []bool
	// Primary is the primary the user asked for (a planned switchover), or nil for "whichever is primary".
	// A request for the current primary is a no-op; the request may stay set after the switch.
	Primary *int
	// ShrinkTo, when it is 1..N-1, is the number of instances the set is to shrink to (a scale-down asked for
	// and not yet carried out): the engine moves the primary below it, stops the instances at and above it
	// from receiving, and reports when an instance below it holds everything (Report.ShrinkReady). Until the
	// instances are removed, every rule still counts all N. 0 means no scale-down.
	ShrinkTo int
	// SwitchoverTimeout bounds how long a switchover waits for its target to apply the fenced primary's
	// last transactions; 0 means one minute. The old primary stays fenced and recorded if it runs out, and the
	// next pass tries again or, if the target is no longer fit, makes the old primary writable again.
	SwitchoverTimeout time.Duration
	// Preferred is durability Preferred (spec.durability): while the primary's commits cannot return for want of
	// connected semi-sync replicas and fewer than the wait count of replicas are in sync, the primary's
	// semi-sync is switched off and its commits return unacknowledged (Report.Async); once enough replicas
	// are in sync again it is switched back on. False (Required) keeps commits waiting. See the package
	// documentation, "Durability".
	Preferred bool
	// FenceErrant is spec.errantServers Fence: no errant instance is rebuilt unless a human asks (Rebuild).
	// False rebuilds an errant instance by itself when that provably discards no acknowledged commit
	// (see rebuildable).
	FenceErrant bool
	// Rebuild are the rebuilds a human asked for (RebuildAnnotation): each is carried out once, whatever the
	// instance holds, unless it is the primary. Record.Rebuilt keeps the ids done.
	Rebuild []RebuildRequest
}

// RebuildRequest asks for instance Instance to be emptied and seeded again; ID tells requests apart.
type RebuildRequest struct {
	Instance int
	ID       string
}

// Instances is N, the number of instances.
func (d Desired) Instances() int { return len(d.Addresses) }

// DefaultSemiSyncWait is the semi-sync wait count for n instances (one primary, n-1 replicas): the number of
// replicas that must hold a transaction before its commit returns.
//   - n = 1: 0, there is nobody to wait for (and no failover).
//   - MySQL: n/2 rounded down, which is ⌈(n-1)/2⌉, half the replicas rounded up: 2 → 1, 3 → 1, 4 → 2, 5 → 2,
//     6 → 3. A failover must hear from n-w replicas (FailoverQuorum), so this count balances writes that
//     go on with replicas down (w must be up) against failovers that go on with replicas down (n-w must
//     answer): for 4 and 6 instances both need half the replicas rounded up, 2 of 3 and 3 of 5.
//   - MariaDB: 1 whatever n, because MariaDB's semi-sync waits for exactly one acknowledgement. Writes then
//     go on while any one replica is up, but a failover must hear from every replica: the one that
//     acknowledged the last commit may be any of them.
func DefaultSemiSyncWait(e mysql.Engine, n int) int {
	switch {
	case n <= 1:
		return 0
	case e == mysql.MariaDB:
		return 1
	}
	return n / 2
}

// FailoverQuorum is how many of the n-1 instances other than a lost primary must answer before a failover may
// choose a new primary, when commits waited for w acknowledgements: n-w. Each acknowledged transaction is on
// at least w of those n-1 instances, so any n-w of them include one that has it, and the chosen candidate
// holds everything every answering instance holds. With fewer answers a transaction the application was
// told was committed could be on the silent instances only.
func FailoverQuorum(n, w int) int { return n - w }

// semiSyncWait validates d.SemiSyncWait and returns the count in force.
func (d Desired) semiSyncWait() (int, error) {
	n := d.Instances()
	w := d.SemiSyncWait
	if w == 0 {
		// While shrinking, commits wait for what the smaller set will wait for (nothing, for a single
		// instance): the instances that are leaving stop acknowledging, and the record's count is lowered first
		// (see Record.SemiSyncWait).
		if k := d.shrinkTo(); k > 0 {
			return DefaultSemiSyncWait(d.Engine, k), nil
		}
		return DefaultSemiSyncWait(d.Engine, n), nil
	}
	switch {
	case n <= 1:
		return 0, fmt.Errorf("a single instance has no replica to wait for, semi-sync wait %d", w)
	case w < 1 || w > n-1:
		return 0, fmt.Errorf("semi-sync wait %d is outside 1..%d for %d instances", w, n-1, n)
	case d.Engine == mysql.MariaDB && w != 1:
		return 0, fmt.Errorf("semi-sync wait %d: MariaDB waits for exactly one acknowledgement", w)
	}
	return w, nil
}

// shrinkTo is ShrinkTo when it asks for a scale-down, 0 otherwise.
func (d Desired) shrinkTo() int {
	if d.ShrinkTo >= 1 && d.ShrinkTo < d.Instances() {
		return d.ShrinkTo
	}
	return 0
}

func (d Desired) switchoverTimeout() time.Duration {
	if d.SwitchoverTimeout > 0 {
		return d.SwitchoverTimeout
	}
	return time.Minute
}

// Observation is what the member controller saw of one instance in this pass.
type Observation struct {
	// Status is the server's state; nil when it could not be read.
	Status *mysql.Status
	// Err is why Status is nil.
	Err error
	// Unhealthy, when set, says why an instance that answers must not stay or become primary. The member
	// controller decides it from what it knows beyond SQL: today, that the instance's Pod is being deleted
	// (controllers/member's unhealthy says why that rule and no other). A primary marked unhealthy is failed over
	// like an unreachable one, but fenced first. A switchover away from it would lose no in-flight commit, but
	// needs its server to stay up until the switch is done.
	Unhealthy string
	// Purged is what the instance executed that its binary logs no longer hold. Observe reads it for the
	// recorded primary only, and only when another instance that answers is not receiving from it (an empty
	// replica must be seeded when it lacks any of it); nil otherwise, or when the read failed (PurgedErr).
	Purged    mysql.GTIDSet
	PurgedErr error
	// Seeding, when set, says that a seed of the instance is under way (the member controller's Job runs) and
	// how it goes. The engine leaves the instance alone meanwhile: pointing it at the primary would apply
	// transactions into a half-loaded server.
	Seeding string
}

// Reachable tells whether the instance's status was read.
func (o Observation) Reachable() bool { return o.Status != nil }

// Record is what the engine remembers between passes; the member controller stores it (for example as JSON in
// an annotation of the member's MySQLCluster or StatefulSet) and passes it back in. The engine changes it only
// through an ActionSaveRecord step of a plan, placed where the change must be durable: before a new primary is
// made writable, so that a controller that dies mid-plan never leaves two instances that each think they
// are the primary. Its zero value means "no primary yet".
type Record struct {
	// Primary is the index of the primary; nil before bootstrap.
	Primary *int `json:"primary,omitempty"`
	// Errant lists, ascending, the instances found holding errant transactions. It is recomputed whenever the
	// primary answers; it is remembered for a failover, when there is no primary to compare with.
	Errant []int `json:"errant,omitempty"`
	// PrimaryServerID is the primary's server_id when it was recorded: the identity of its data directory.
	// Render gives every new data directory a server_id of its own and keeps it on the volume, so a recorded
	// primary that answers with another server_id is a new server on the primary's ordinal (its volume was
	// replaced or wiped): it is lost, whatever it holds and whoever else answers. This is the durable fact the
	// engine decides a lost volume from; an empty executed set is only a hint (a new server may hold the
	// set-up an image's entrypoint logged). 0 in records written before it existed: the first pass that finds
	// the primary writable, which a new server never is (it boots read-only), fills it in.
	PrimaryServerID uint32 `json:"primaryServerID,omitempty"`
	// SemiSyncWait is a bound on the number of acknowledgements the primary's commits waited for: never more
	// than the count configured on the primary. It is lowered before the primary is configured to wait for
	// fewer, and raised once it has been seen waiting for more, so that a failover's quorum, computed from it
	// when the primary no longer answers, never assumes more acknowledgements than commits had (see
	// FailoverQuorum). 0 in records written before it existed: a failover then assumes one.
	SemiSyncWait int `json:"semiSyncWait,omitempty"`
	// Change is how Primary became the primary, saved with it before it turns writable: whichever pass
	// completes the change (a standby's, when the controller that began it died in its middle) reports it
	// (Plan.Completed). Nil in records written before it existed.
	Change *Change `json:"change,omitempty"`
	// Unacknowledged is set once the primary has been seen where a commit could return without a semi-sync
	// acknowledgement: semi-sync off, fallen back, not waiting AFTER_SYNC, able to fall back, with commits
	// counted that returned without one, or switched off under durability Preferred. Its term then proves
	// nothing of the transactions only it holds. A new primary starts without it.
	Unacknowledged bool `json:"unacknowledged,omitempty"`
	// Deposed are the primaries failovers replaced, an entry an instance: what the engine needs to tell that an
	// errant instance's extra transactions are the unacknowledged tail of its own term (rebuildable). An entry
	// goes once its instance answers with another data directory or without errant transactions.
	Deposed []Deposed `json:"deposed,omitempty"`
	// Rebuilt are the ids of the requested rebuilds carried out (Desired.Rebuild), kept while requested.
	Rebuilt []string `json:"rebuilt,omitempty"`
	// LeaseTransitions is the leaderTransitions of the member controller's leader election Lease when it saved
	// the record: which leader's term wrote it, for a human or the next leader to read. The engine ignores
	// it and keeps nothing of it in Plan.Record; the member controller sets it on every save. Nil without
	// leader election.
	LeaseTransitions *int `json:"leaseTransitions,omitempty"`
}

// Deposed is a primary a failover replaced.
type Deposed struct {
	Instance int `json:"instance"`
	// ServerID is the server_id it served with: its data directory.
	ServerID uint32 `json:"serverID"`
	// Unacknowledged is Record.Unacknowledged at the end of its term, or true where that cannot be told (a
	// record that predates it, no semi-sync wait count recorded).
	Unacknowledged bool `json:"unacknowledged,omitempty"`
}

// Change is a change of primary as the record keeps it.
type Change struct {
	Kind Kind `json:"kind"`
	// From is the former primary, -1 for none (Bootstrap, Adopt).
	From   int    `json:"from"`
	Reason string `json:"reason,omitempty"`
}

// PrimaryIndex is the recorded primary, or -1.
func (r Record) PrimaryIndex() int {
	if r.Primary == nil {
		return -1
	}
	return *r.Primary
}

func (r Record) isErrant(i int) bool { return slices.Contains(r.Errant, i) }

func (r Record) equal(o Record) bool {
	return r.PrimaryIndex() == o.PrimaryIndex() && r.PrimaryServerID == o.PrimaryServerID &&
		r.SemiSyncWait == o.SemiSyncWait && slices.Equal(r.Errant, o.Errant) &&
		r.Unacknowledged == o.Unacknowledged && slices.Equal(r.Deposed, o.Deposed) && slices.Equal(r.Rebuilt, o.Rebuilt)
}

// deposed is the entry of instance i in Deposed, or nil.
func (r Record) deposed(i int) *Deposed {
	for k := range r.Deposed {
		if r.Deposed[k].Instance == i {
			return &r.Deposed[k]
		}
	}
	return nil
}

func (r Record) String() string {
	s := fmt.Sprintf("primary=%d errant=%v", r.PrimaryIndex(), r.Errant)
	if r.Unacknowledged {
		s += " unacknowledged"
	}
	for _, d := range r.Deposed {
		s += fmt.Sprintf(" deposed=%d", d.Instance)
	}
	if len(r.Rebuilt) > 0 {
		s += fmt.Sprintf(" rebuilt=%v", r.Rebuilt)
	}
	return s
}

// withPrimary is r with primary p, whose server_id is id, made so by d; the promotion configures w.
func withPrimary(r Record, p int, id uint32, w int, d Decision) Record {
	return Record{Primary: &p, PrimaryServerID: id, SemiSyncWait: w, Errant: slices.Clone(r.Errant),
		Change: &Change{Kind: d.Kind, From: d.From, Reason: d.Reason}, Deposed: slices.Clone(r.Deposed),
		Rebuilt: slices.Clone(r.Rebuilt)}
}

// Kind names a decision.
type Kind string

const (
	// Bootstrap: no primary is recorded and every instance is fresh; instance 0 becomes the primary.
	Bootstrap Kind = "Bootstrap"
	// Adopt: no primary is recorded but exactly one instance is writable (the record was lost); it is recorded.
	Adopt Kind = "Adopt"
	// Steady: everything is as it should be; the plan is empty.
	Steady Kind = "Steady"
	// Repair: the primary is fine; some instances are put right (repointed, restarted, fenced, made writable).
	Repair Kind = "Repair"
	// FailoverStarted: the primary is lost; the replicas stop receiving from it before one is chosen.
	FailoverStarted Kind = "FailoverStarted"
	// Failover: the primary is lost; From is replaced by To.
	Failover Kind = "Failover"
	// Switchover: the requested primary To replaces From, which is fenced first and rejoins as a replica.
	Switchover Kind = "Switchover"
	// Refused: the engine will not do what the situation or the request needs, for Reason. Safe repairs may
	// still be in the plan.
	Refused Kind = "Refused"
)

// Decision is what the engine decided in one pass.
type Decision struct {
	Kind Kind
	// From and To are instance indexes for failovers and switchovers, -1 otherwise.
	From, To int
	// Reason says why, in a sentence for a condition message.
	Reason string
}

func (d Decision) String() string {
	switch d.Kind {
	case Failover, Switchover, FailoverStarted, Adopt:
		s := fmt.Sprintf("%s{from: %d, to: %d", d.Kind, d.From, d.To)
		if d.Reason != "" {
			s += ", reason: " + d.Reason
		}
		return s + "}"
	}
	if d.Reason != "" {
		return fmt.Sprintf("%s{%s}", d.Kind, d.Reason)
	}
	return string(d.Kind)
}

// Role is what an instance is in the set, as the member controller should label its Pod.
type Role string

const (
	// RolePrimary is the primary the plan leaves in place (it may become writable only when the plan runs).
	RolePrimary Role = "primary"
	// RoleReplica is an instance replicating from the primary without errors.
	RoleReplica Role = "replica"
	// RoleErrant is an instance with errant transactions: fenced until a human rebuilds it.
	RoleErrant Role = "errant"
	// RoleUnreachable is an instance whose status could not be read.
	RoleUnreachable Role = "unreachable"
	// RoleNone is any other instance: not replicating yet, replicating from elsewhere, or stopped.
	RoleNone Role = "none"
)

// InstanceReport is one instance in a Report.
type InstanceReport struct {
	Index int
	Role  Role
	// InSync: a replica of the primary, both threads running, lag known and within MaxLag.
	InSync bool
	// Lag is the replica's replication lag; nil when unknown or not a replica.
	Lag *time.Duration
	// Executed is the instance's executed GTID set, "" when unknown.
	Executed string
	// Errant holds the instance's errant transactions when they could be computed (the primary answered).
	Errant string
	// Error is the last problem seen: why the status could not be read, or the replication error.
	Error string
}

// Report is what the member controller publishes per MySQLCluster after a pass.
type Report struct {
	Decision Decision
	// Primary is the primary after the plan, -1 when there is none.
	Primary   int
	Instances []InstanceReport
	// LastError is the refusal reason, or else the first instance error, "" when all is well.
	LastError string
	// WritesBlocked says why the primary's commits cannot return now, "" when they can: it waits for more
	// semi-sync acknowledgements than it has replicas connected to give them (semi-sync never falls back, so
	// the commits wait until a replica is back). The member controller goes on repairing meanwhile. "" when
	// this plan switches semi-sync off instead (Async).
	WritesBlocked string
	// Async says why the primary's commits return without any replica holding them, "" when semi-sync is in
	// force: with Desired.Preferred, its semi-sync is off (or is switched off by this plan) because no replica
	// can acknowledge. A failover meanwhile can lose those commits.
	Async string
	// ShrinkReady is Desired.ShrinkTo once the set is ready to lose the instances at and above it: the
	// primary is below it, those instances receive nothing, and another instance below it holds every
	// transaction the primary had executed. 0 otherwise.
	ShrinkReady int
}

// InSync lists the replicas in sync.
func (r Report) InSync() []int {
	var out []int
	for _, in := range r.Instances {
		if in.InSync {
			out = append(out, in.Index)
		}
	}
	return out
}

// Errant lists the instances with errant transactions.
func (r Report) Errant() []int {
	var out []int
	for _, in := range r.Instances {
		if in.Role == RoleErrant {
			out = append(out, in.Index)
		}
	}
	return out
}
