package failover

import (
	"slices"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/bench/stats"
)

// The types of the JSON a run records live outside the test files so that bench's docs command (go run ./bench
// -docs) can read them: docs/benchmarks.md is generated from them.

// Results is what a benchmark run records, as JSON in bench/results/failover-<timestamp>.json.
type Results struct {
	Timestamp string `json:"timestamp"`
	// Host is the machine and its load: the servers, the member's control plane and the controller share its
	// cores with whatever else runs.
	Host       machine.Host `json:"host"`
	Controller Controller   `json:"memberController"`
	Writer     Writer       `json:"writer"`
	Failover   *Figure      `json:"failover,omitempty"`
	Frozen     *Figure      `json:"frozenPrimaryFailover,omitempty"`
	Switchover *Figure      `json:"switchover,omitempty"`
}

// KindResults is what the failover bench on kind records (make bench-failover-kind), as JSON in
// bench/results/failover-kind-<timestamp>.json: the rendered objects as real Pods in a kind member, the member
// controller as `mysqlfleet join` installs it, and writers in a Pod reaching <name>-primary through kube-proxy.
type KindResults struct {
	Timestamp string       `json:"timestamp"`
	Host      machine.Host `json:"host"`
	// Tier is "kind"; Member the kind member cluster the set ran in, Nodes its node count.
	Tier   string `json:"tier"`
	Member string `json:"member"`
	Nodes  int    `json:"nodes"`
	// ControllerArgs are the member controller's arguments as its Deployment in the member has them.
	ControllerArgs []string   `json:"memberControllerArgs"`
	Writer         KindWriter `json:"writer"`
	// LeaseSeconds is the member controller's leader election Lease duration as the Lease had it at the start;
	// 0 in runs that did not record it (the Lease was then 15 s).
	LeaseSeconds int `json:"leaseSeconds,omitzero"`
	// FaultSeconds is how long a frozen or cut-off primary stays so before it is let go.
	FaultSeconds float64   `json:"faultSeconds"`
	Figures      []*Figure `json:"figures"`
}

// KindWriter is how the client Pod wrote: Connections shell loops, each one INSERT per new connection through
// <name>-primary as the application's account, timestamps from the Pod (the node shares the host's clock).
type KindWriter struct {
	Connections  int    `json:"connections"`
	Account      string `json:"account"`
	WriteTimeout string `json:"writeTimeout"`
}

// Controller is how the member controller ran: cmd/member's defaults unless Defaults is false.
type Controller struct {
	// Defaults tells whether every value is cmd/member's default.
	Defaults            bool   `json:"cmdMemberDefaults"`
	PollInterval        string `json:"pollInterval"`
	BusyInterval        string `json:"busyInterval"`
	StatusTimeout       string `json:"statusTimeout"`
	PassTimeout         string `json:"passTimeout"`
	MaxLag              string `json:"maxLag"`
	ReplicaConnectRetry string `json:"replicaConnectRetry"`
	LeaderElection      bool   `json:"leaderElection"`
}

// Writer is how the client wrote.
type Writer struct {
	EndpointPoll string `json:"endpointSlicePoll"`
	WriteTimeout string `json:"writeTimeout"`
	Warmup       string `json:"warmup"`
	Spread       string `json:"spread"`
}

// Figure is one kind of run: its runs and their minimum, median and maximum.
type Figure struct {
	What          string  `json:"what"`
	TargetSeconds float64 `json:"targetMedianSeconds"`
	Completed     int     `json:"completedRuns"`
	MinSeconds    float64 `json:"minSeconds"`
	MedianSeconds float64 `json:"medianSeconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
	// Met tells whether the median is within the target (false when no run completed).
	Met bool `json:"targetMet"`
	// LostWrites is the sum over the runs of acknowledged writes missing on the new primary; it must be 0.
	LostWrites int `json:"acknowledgedWritesLost"`
	// PhaseMedians are the medians over completed runs of each phase's time after the fault or request.
	PhaseMedians []Phase `json:"phaseMedians"`
	Runs         []Run   `json:"runs"`
}

// Run is one fault or request on a fresh set.
type Run struct {
	Kind  string  `json:"kind"`
	Index int     `json:"run"`
	Load1 float64 `json:"load1AtStart"`
	// SpreadSeconds is the random part of the warmup, which places the fault in the controller's poll cycle.
	SpreadSeconds float64 `json:"spreadSeconds"`
	From          string  `json:"from"`
	To            string  `json:"to,omitempty"`
	// Seconds is from the kill (or the annotation write) to the first write the new primary acknowledged.
	Seconds float64 `json:"seconds"`
	// GapSeconds is the client's time without an acknowledged write: the last one before the new primary's
	// first, to that first.
	GapSeconds   float64 `json:"gapSeconds"`
	Phases       []Phase `json:"phases,omitempty"`
	Acknowledged int     `json:"acknowledgedWrites"`
	FailedWrites int     `json:"failedWrites"`
	Lost         int     `json:"acknowledgedWritesLost"`
	LostIDs      []int64 `json:"lostIDs,omitempty"`
	// SemiSyncBefore is the old primary's semi-sync status just before the fault or request, SemiSyncAfter the
	// new primary's after the run's last write: every acknowledged write waited for a replica (no_tx 0).
	SemiSyncBefore SemiSync `json:"semiSyncBefore"`
	SemiSyncAfter  SemiSync `json:"semiSyncAfter"`
	Transition     string   `json:"reportedTransition,omitempty"`
	// EndpointSliceRetries counts the member's EndpointSlice controller retrying <name>-primary during the run
	// because its cache lagged its own write: each costs the endpoints a second or more.
	EndpointSliceRetries int `json:"endpointSliceRetries"`
	// Timeline is every change seen in the member during the run, in seconds after the fault or request.
	Timeline []string `json:"timeline,omitempty"`
	// FullRedundancySeconds (kind runs) is from the fault to the hub showing the set whole again: a primary,
	// every replica in sync, none errant or unreachable, with no human in between.
	FullRedundancySeconds float64 `json:"fullRedundancySeconds,omitzero"`
	// OldPrimaryAcks (kind runs) counts writes the old primary acknowledged after the new one acknowledged its
	// first: two writable servers. It must be 0.
	OldPrimaryAcks int `json:"oldPrimaryAcksAfterPromotion"`
	// PrimaryNode and LeaderNode (kind runs) are the nodes of the old primary's Pod and of the leading member
	// controller when the fault began: a node fault on a node that holds both waits for the Lease to expire.
	PrimaryNode string `json:"primaryNode,omitempty"`
	LeaderNode  string `json:"leaderNode,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Phase is a moment after the fault or request; -1 when it was not seen.
type Phase struct {
	Name    string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// SemiSync is a primary's semi-sync counters.
type SemiSync struct {
	Version string `json:"-"`
	Status  string `json:"status"`
	Clients int    `json:"clients"`
	YesTx   int64  `json:"yesTx"`
	NoTx    int64  `json:"noTx"`
}

// Summarize computes the figure from the runs that completed; a failed run counts in none of the times. It may
// be called again as runs are added.
func (f *Figure) Summarize() {
	f.LostWrites = 0
	var secs []float64
	for _, r := range f.Runs {
		f.LostWrites += r.Lost
		if r.Error == "" {
			secs = append(secs, r.Seconds)
		}
	}
	f.Completed = len(secs)
	f.PhaseMedians = nil
	if len(secs) == 0 {
		return
	}
	f.MinSeconds, f.MedianSeconds, f.MaxSeconds = slices.Min(secs), stats.Median(secs), slices.Max(secs)
	f.Met = f.MedianSeconds <= f.TargetSeconds
	f.PhaseMedians = f.phaseMedians(func(r Run) []Phase { return r.Phases })
}

// phaseMedians are the medians over the completed runs of each phase that phases gives a run, in the order the
// phases first appear; -1 for a phase no run saw (a negative time).
func (f *Figure) phaseMedians(phases func(Run) []Phase) []Phase {
	byPhase := map[string][]float64{}
	var order []string
	for _, r := range f.Runs {
		if r.Error != "" {
			continue
		}
		for _, p := range phases(r) {
			if !slices.Contains(order, p.Name) {
				order = append(order, p.Name)
			}
			if p.Seconds >= 0 {
				byPhase[p.Name] = append(byPhase[p.Name], p.Seconds)
			}
		}
	}
	var out []Phase
	for _, name := range order {
		p := Phase{Name: name, Seconds: -1}
		if v := byPhase[name]; len(v) > 0 {
			p.Seconds = stats.Median(v)
		}
		out = append(out, p)
	}
	return out
}
