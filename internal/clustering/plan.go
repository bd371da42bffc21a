package clustering

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Ops is everything the engine reads from and does to the instances of one member, by instance index.
// ServerOps implements it over internal/mysql Servers; tests record calls or wrap it to inject faults.
type Ops interface {
	// Status reads an instance's state.
	Status(ctx context.Context, i int) (*mysql.Status, error)
	// Fence stops an instance from committing anything more for clients: it ends client connections and
	// makes it read-only, in whichever order gets there when commits wait for semi-sync acknowledgements that
	// will never come (see ServerOps.Fence).
	Fence(ctx context.Context, i int) error
	// StopReplicaIO stops an instance from receiving (and acknowledging) transactions; its applier goes on.
	StopReplicaIO(ctx context.Context, i int) error
	// Replicate makes an instance a read-only, acknowledging replica of source with GTID auto-positioning,
	// and starts replication; it repoints and restarts a replica that was pointing elsewhere or stopped.
	Replicate(ctx context.Context, i int, source Address) error
	// Promote makes an instance the writable primary with semi-sync as given, after it has applied every
	// transaction it received.
	Promote(ctx context.Context, i int, semi mysql.SemiSync) error
	// ConfigureSemiSync sets the source side of semi-sync on a primary.
	ConfigureSemiSync(ctx context.Context, i int, semi mysql.SemiSync) error
	// WaitForExecuted waits, at most timeout, until instance i has applied every transaction instance of
	// has executed, read when the wait starts.
	WaitForExecuted(ctx context.Context, i, of int, timeout time.Duration) error
	// SaveRecord stores the record durably; the next pass gets it back.
	SaveRecord(ctx context.Context, r Record) error
	// PurgedGTIDSet reads the transactions instance i executed that its binary logs no longer hold: a replica
	// lacking any of them cannot get it from i by GTID auto-positioning.
	PurgedGTIDSet(ctx context.Context, i int) (mysql.GTIDSet, error)
	// Seed has instance i, which has executed nothing, loaded with a dump of instance source and its GTID
	// position recorded (see mysql.Server.PrepareSeed), so that it can then replicate. It may take long: it
	// starts the work (the member controller runs it in a Job) and returns, and is called again, pass after
	// pass, until i has executed something; it must then do nothing more than report how the work goes.
	Seed(ctx context.Context, i, source int) error
	// Rebuild empties instance i, fenced and read-only, so that it is seeded again (mysql.Server.Empty): it
	// refuses if i has executed anything but executed, the set the plan was decided from (nil: see Step).
	Rebuild(ctx context.Context, i int, executed mysql.GTIDSet) error
}

// Action names what a Step does.
type Action string

const (
	ActionFence             Action = "fence"
	ActionStopReplicaIO     Action = "stop-replica-io"
	ActionReplicate         Action = "replicate"
	ActionPromote           Action = "promote"
	ActionConfigureSemiSync Action = "configure-semi-sync"
	ActionWaitForExecuted   Action = "wait-for-executed"
	ActionSaveRecord        Action = "save-record"
	ActionSeed              Action = "seed"
	ActionRebuild           Action = "rebuild"
)

// Step is one operation of a plan. Which fields matter depends on Action.
type Step struct {
	Action Action
	// Instance is the instance the step acts on (not used by ActionSaveRecord).
	Instance int
	// Source is the primary a replica is pointed at (ActionReplicate), the instance whose executed set is
	// waited for (ActionWaitForExecuted) or the one dumped (ActionSeed); Address is where it is reached.
	Source  int
	Address Address
	// SemiSync is for ActionPromote and ActionConfigureSemiSync.
	SemiSync mysql.SemiSync
	// Timeout bounds ActionWaitForExecuted, and ActionReplicate when it is not zero.
	Timeout time.Duration
	// Record is for ActionSaveRecord.
	Record Record
	// Executed is what the instance of an ActionRebuild had executed when the plan was decided (nil when all
	// of it was on the primary and the instance received only from the primary: it is emptied whatever it
	// applied meanwhile), Discarded what of it the primary lacks, and Request the id of the rebuild request it
	// carries out ("" for none).
	Executed, Discarded mysql.GTIDSet
	Request             string
	// Why is the reason for the step, for logs. It is not part of String.
	Why string
}

// String is the step without its reason, e.g. "replicate 2 from 0", as table tests compare it.
func (s Step) String() string {
	switch s.Action {
	case ActionReplicate:
		if s.Timeout > 0 {
			return fmt.Sprintf("replicate %d from %d within %s", s.Instance, s.Source, s.Timeout)
		}
		return fmt.Sprintf("replicate %d from %d", s.Instance, s.Source)
	case ActionPromote:
		return fmt.Sprintf("promote %d (semi-sync wait %d)", s.Instance, s.SemiSync.WaitForReplicas)
	case ActionConfigureSemiSync:
		return fmt.Sprintf("configure-semi-sync %d (wait %d)", s.Instance, s.SemiSync.WaitForReplicas)
	case ActionWaitForExecuted:
		return fmt.Sprintf("wait %d for %d within %s", s.Instance, s.Source, s.Timeout)
	case ActionSaveRecord:
		return "save-record " + s.Record.String()
	case ActionSeed:
		return fmt.Sprintf("seed %d from %d", s.Instance, s.Source)
	case ActionRebuild:
		return fmt.Sprintf("rebuild %d discarding %s", s.Instance, s.Discarded)
	}
	return fmt.Sprintf("%s %d", s.Action, s.Instance)
}

// critical tells whether a failure of the step must stop the plan. The steps that later steps rely on for
// safety (a fence before a promotion, the record before a new primary turns writable, the switchover's
// catch-up before the promotion, the promotion before replicas follow it) are critical; the others act on one
// instance each and the next pass retries them.
func (s Step) critical() bool {
	switch s.Action {
	case ActionFence, ActionSaveRecord, ActionWaitForExecuted, ActionPromote, ActionRebuild:
		return true
	}
	return false
}

func (s Step) run(ctx context.Context, ops Ops) error {
	switch s.Action {
	case ActionFence:
		return ops.Fence(ctx, s.Instance)
	case ActionStopReplicaIO:
		return ops.StopReplicaIO(ctx, s.Instance)
	case ActionReplicate:
		if s.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.Timeout)
			defer cancel()
		}
		return ops.Replicate(ctx, s.Instance, s.Address)
	case ActionPromote:
		return ops.Promote(ctx, s.Instance, s.SemiSync)
	case ActionConfigureSemiSync:
		return ops.ConfigureSemiSync(ctx, s.Instance, s.SemiSync)
	case ActionWaitForExecuted:
		return ops.WaitForExecuted(ctx, s.Instance, s.Source, s.Timeout)
	case ActionSaveRecord:
		return ops.SaveRecord(ctx, s.Record)
	case ActionSeed:
		return ops.Seed(ctx, s.Instance, s.Source)
	case ActionRebuild:
		return ops.Rebuild(ctx, s.Instance, s.Executed)
	}
	return fmt.Errorf("unknown action %q", s.Action)
}

// concurrent tells whether consecutive steps of the action, each on its own instance, may run at once: they
// depend on nothing but the steps before the run, and nothing after the run depends on one of them more than
// on the others. A failover's first pass stops every replica's receiver at once (on MariaDB each STOP SLAVE
// IO_THREAD may wait for a frozen primary), and replicas follow a new primary at once.
func (a Action) concurrent() bool { return a == ActionStopReplicaIO || a == ActionReplicate }

// Execute runs the steps in order, except that a run of consecutive steps of a concurrent action, each on a
// different instance, runs at once and ends when all of them have. A failed critical step stops the plan; a
// failed other step is reported and the plan goes on. The errors are joined, in the order of the steps.
func Execute(ctx context.Context, ops Ops, steps []Step) error {
	var errs []error
	for i := 0; i < len(steps); {
		run := steps[i : i+1]
		if steps[i].Action.concurrent() {
			seen := map[int]bool{}
			j := i
			for j < len(steps) && steps[j].Action == steps[i].Action && !seen[steps[j].Instance] {
				seen[steps[j].Instance] = true
				j++
			}
			run = steps[i:j]
		}
		runErrs := make([]error, len(run))
		var wg sync.WaitGroup
		for k, s := range run {
			wg.Go(func() { runErrs[k] = s.run(ctx, ops) })
		}
		wg.Wait()
		for k, err := range runErrs {
			if err == nil {
				continue
			}
			errs = append(errs, fmt.Errorf("failed to %s: %w", run[k], err))
			if run[k].critical() {
				return errors.Join(errs...)
			}
		}
		i += len(run)
	}
	return errors.Join(errs...)
}

// Plan is the outcome of one decision: the steps to run, in order, and the report of the pass.
type Plan struct {
	Decision Decision
	Steps    []Step
	// Record is the record once the steps have run; the plan's ActionSaveRecord step stores it.
	Record Record
	Report Report
	// Completed is the change of primary the plan completes if every step succeeds: its own decision when it is
	// a Bootstrap, Adopt, Failover or Switchover; or, when it promotes the recorded primary whose change an
	// earlier pass recorded without finishing it (its controller died in between), the recorded change.
	Completed *Decision
}

// Requeue tells whether the member controller should observe and decide again soon: the plan changes
// something, and the next pass checks it or takes the next step (a failover takes two).
func (p Plan) Requeue() bool { return len(p.Steps) > 0 }
