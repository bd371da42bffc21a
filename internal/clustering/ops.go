package clustering

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// ServerOps implements Ops over internal/mysql Servers, one per instance index, as the member controller's
// admin user sees them.
type ServerOps struct {
	// Servers are the instances' connections, by index.
	Servers []*mysql.Server
	// ReplicationUser and ReplicationPassword are the account replicas connect to their source with.
	ReplicationUser     string
	ReplicationPassword string
	// ConnectRetry is how long a replica's receiver waits between attempts to reconnect; zero keeps the
	// engine's default (60 s). Short values let a replica notice a restarted source sooner.
	ConnectRetry time.Duration
	// KeepUsers are users whose connections Fence leaves alone, besides the admin user's own.
	KeepUsers []string
	// Save stores the record (ActionSaveRecord); the member controller persists it.
	Save func(ctx context.Context, r Record) error
	// SeedWith seeds an instance (ActionSeed); the member controller runs a Job.
	SeedWith func(ctx context.Context, i, source int) error
	// RebuildWith empties an instance (ActionRebuild); the member controller does it as root.
	RebuildWith func(ctx context.Context, i int, executed mysql.GTIDSet) error
	// FenceKillInterval is how often Fence ends client connections while it waits for read-only to take;
	// zero means 100 ms.
	FenceKillInterval time.Duration
	// Guard, when set, is asked before every operation that changes an instance or the record (all but
	// Status, WaitForExecuted and PurgedGTIDSet), and again before every statement such an operation sends,
	// whose deadline it bounds (mysql.Guard). The member controller's refuses once its leader election lease
	// may have passed to another replica: a controller paused in the middle of a plan must not go on with it.
	Guard mysql.Guard
}

var _ Ops = (*ServerOps)(nil)

func (o *ServerOps) server(i int) (*mysql.Server, error) {
	if i < 0 || i >= len(o.Servers) || o.Servers[i] == nil {
		return nil, fmt.Errorf("no server for instance %d", i)
	}
	return o.Servers[i], nil
}

// changing returns instance i's server for an operation that changes it: refused when the guard refuses, and
// guarded statement by statement.
func (o *ServerOps) changing(i int) (*mysql.Server, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	s, err := o.server(i)
	if err != nil {
		return nil, err
	}
	return s.Guarded(o.Guard), nil
}

func (o *ServerOps) check() error {
	if o.Guard == nil {
		return nil
	}
	_, err := o.Guard()
	return err
}

func (o *ServerOps) Status(ctx context.Context, i int) (*mysql.Status, error) {
	s, err := o.server(i)
	if err != nil {
		return nil, err
	}
	return s.Status(ctx)
}

// Fence ends client connections first, then sets read-only while it goes on ending them, and ends them once
// more when read-only has taken. The order matters on a primary whose commits wait for semi-sync
// acknowledgements that will not come (its replicas are gone or have stopped receiving): setting read-only
// waits for those commits, and only ending their connections releases them. The released commits stay in the
// binary log, in doubt; they make the fenced server errant if no replica received them. The last round ends the
// clients that connected meanwhile, so that they reconnect to the new primary.
func (o *ServerOps) Fence(ctx context.Context, i int) error {
	s, err := o.changing(i)
	if err != nil {
		return err
	}
	if _, err := s.KillConnections(ctx, o.KeepUsers...); err != nil {
		return fmt.Errorf("failed to end the connections of instance %d: %w", i, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.SetReadOnly(ctx, true) }()
	interval := o.FenceKillInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("failed to make instance %d read-only: %w", i, err)
			}
			if _, err := s.KillConnections(ctx, o.KeepUsers...); err != nil {
				return fmt.Errorf("failed to end the connections of instance %d: %w", i, err)
			}
			return nil
		case <-tick.C:
			if _, err := s.KillConnections(ctx, o.KeepUsers...); err != nil {
				return fmt.Errorf("failed to end the connections of instance %d: %w", i, err)
			}
		case <-ctx.Done():
			return fmt.Errorf("failed to make instance %d read-only: %w", i, ctx.Err())
		}
	}
}

func (o *ServerOps) StopReplicaIO(ctx context.Context, i int) error {
	s, err := o.changing(i)
	if err != nil {
		return err
	}
	return s.StopReplicaIO(ctx)
}

func (o *ServerOps) Replicate(ctx context.Context, i int, source Address) error {
	s, err := o.changing(i)
	if err != nil {
		return err
	}
	return s.StartReplicaOf(ctx, mysql.Source{Host: source.Host, Port: source.Port, User: o.ReplicationUser,
		Password: o.ReplicationPassword, ConnectRetry: o.ConnectRetry})
}

func (o *ServerOps) Promote(ctx context.Context, i int, semi mysql.SemiSync) error {
	s, err := o.changing(i)
	if err != nil {
		return err
	}
	return s.Promote(ctx, semi)
}

func (o *ServerOps) ConfigureSemiSync(ctx context.Context, i int, semi mysql.SemiSync) error {
	s, err := o.changing(i)
	if err != nil {
		return err
	}
	return s.ConfigureSemiSync(ctx, semi.WaitForReplicas, semi.Timeout)
}

func (o *ServerOps) WaitForExecuted(ctx context.Context, i, of int, timeout time.Duration) error {
	s, err := o.server(i)
	if err != nil {
		return err
	}
	src, err := o.server(of)
	if err != nil {
		return err
	}
	set, err := src.ExecutedGTIDSet(ctx)
	if err != nil {
		return err
	}
	return s.WaitForGTID(ctx, set, timeout)
}

func (o *ServerOps) SaveRecord(ctx context.Context, r Record) error {
	if o.Save == nil {
		return errors.New("no place to save the record")
	}
	if err := o.check(); err != nil {
		return err
	}
	return o.Save(ctx, r)
}

func (o *ServerOps) PurgedGTIDSet(ctx context.Context, i int) (mysql.GTIDSet, error) {
	s, err := o.server(i)
	if err != nil {
		return nil, err
	}
	return s.PurgedGTIDSet(ctx)
}

func (o *ServerOps) Seed(ctx context.Context, i, source int) error {
	if o.SeedWith == nil {
		return errors.New("no way to seed an instance")
	}
	if err := o.check(); err != nil {
		return err
	}
	return o.SeedWith(ctx, i, source)
}

func (o *ServerOps) Rebuild(ctx context.Context, i int, executed mysql.GTIDSet) error {
	if o.RebuildWith == nil {
		return errors.New("no way to rebuild an instance")
	}
	if err := o.check(); err != nil {
		return err
	}
	return o.RebuildWith(ctx, i, executed)
}

// Observe reads the status of instances 0..n-1 at once, each within timeout, and then, if the recorded primary
// answered, reads its status once more: that makes the primary's executed set at least as new as every
// replica's (a replica cannot hold a transaction of the primary that the primary's set, read later, lacks).
// A primary that did not answer is not read again in the same pass: a frozen one would cost another full
// timeout, and a primary counts as lost only after two passes have failed to read it anyway (the failover's
// first pass stops the receivers, which is safe to do in error: the next pass restarts them if the primary
// answers; the second pass reads it again before it promotes anyone). One slow answer on a busy machine thus
// stalls commits for a pass at most; it never promotes.
func Observe(ctx context.Context, ops Ops, n, primary int, timeout time.Duration) []Observation {
	obs := make([]Observation, n)
	read := func(i int) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		st, err := ops.Status(ctx, i)
		if err != nil {
			obs[i] = Observation{Err: err}
			return
		}
		obs[i] = Observation{Status: st}
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { read(i) })
	}
	wg.Wait()
	if primary >= 0 && primary < n && obs[primary].Reachable() {
		read(primary)
		if obs[primary].Reachable() && notReceiving(obs, primary) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			obs[primary].Purged, obs[primary].PurgedErr = ops.PurgedGTIDSet(ctx, primary)
		}
	}
	return obs
}

// notReceiving tells whether an instance other than the primary answers without its receiver running: one that
// may need more than the primary's binary logs to catch up. A set whose replicas all receive costs no more reads.
func notReceiving(obs []Observation, primary int) bool {
	for i, o := range obs {
		if i != primary && o.Reachable() && (o.Status.Replica == nil || !o.Status.Replica.IORunning()) {
			return true
		}
	}
	return false
}

// Reconcile is one pass: observe, decide, execute. The member controller may instead call the three itself,
// to mark instances Unhealthy between Observe and Decide. It returns the plan and the error of its execution.
func Reconcile(ctx context.Context, d Desired, rec Record, ops Ops, timeout time.Duration) (Plan, error) {
	obs := Observe(ctx, ops, d.Instances(), rec.PrimaryIndex(), timeout)
	plan := Decide(d, rec, obs)
	return plan, Execute(ctx, ops, plan.Steps)
}
