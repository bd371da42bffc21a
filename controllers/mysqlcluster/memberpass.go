package mysqlcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/apply"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// memberPass is one member's part of a pass over a MySQLCluster: it finds the member, renders what the member
// needs, applies it and reads back how far the member got, recording each finding in the member's row. What it
// found before reading back (reached or not, applied or why not) it records as passFacts, which
// memberPassStatus turns into the row's conditions; it sets none itself. Every member's pass runs on a goroutine
// of its own (reconcileMembers): it reads the scope and writes only its row.
type memberPass struct {
	r *MySQLClusterReconciler
	s *scope
	m fleet.State
	// prev is the member's row as last written; row is the one this pass makes, and conds sets the conditions the
	// read-back decides.
	prev  v1alpha1.MemberStatus
	row   v1alpha1.MemberStatus
	conds memberConditions
}

func newMemberPass(r *MySQLClusterReconciler, s *scope, m fleet.State) *memberPass {
	c := s.cluster
	p := &memberPass{r: r, s: s, m: m, prev: previousMember(s.before, m.Name)}
	p.row = v1alpha1.MemberStatus{Name: m.Name, Cloud: m.Cloud, Region: m.Region, Replicas: c.Spec.Replicas}
	// What the member said last stays until it is read again: an unreachable member keeps its last report,
	// under a Reachable condition that says how old the news is.
	p.row.Conditions, p.row.Adopted, p.row.Replication = p.prev.Conditions, p.prev.Adopted, p.prev.Replication
	p.row.Backups, p.row.Restore, p.row.LastBackup = p.prev.Backups, p.prev.Restore, p.prev.LastBackup
	p.row.Archive = p.prev.Archive
	p.conds = memberConditions{st: &p.row, gen: c.Generation}
	return p
}

// run brings the member in line and reports its row; the error is a spec that cannot be rendered for it.
func (p *memberPass) run(ctx context.Context) (v1alpha1.MemberStatus, error) {
	c := p.s.cluster
	cl, f := p.connect(ctx)
	if f != nil {
		return p.fail(f), nil
	}
	mc := cl.GetClient()
	p.row.StorageClass = render.StorageClass(c, p.m.Member)
	if sched, err := render.BackupSchedule(c, p.m.Name); err == nil {
		p.row.BackupSchedule = sched
	}
	set, err := readMemberSet(ctx, mc, c)
	if err != nil {
		return p.failed(ctx, err), nil
	}
	hold := scaleDown(c, set)
	endpoints, err := primaryEndpoints(ctx, mc, c, set)
	if err != nil {
		return p.failed(ctx, err), nil
	}
	objs, err := p.render(hold, endpoints)
	if err != nil {
		return p.fail(degraded(specReason(err), err)), err
	}
	a, err := p.applier(cl)
	if err != nil {
		return p.failed(ctx, err), nil
	}
	if !c.Spec.Paused {
		done, err := p.r.reconcileVolumeTemplate(ctx, a, c)
		if err != nil {
			return p.failed(ctx, err), nil
		}
		if !done {
			return p.recreating(ctx, mc, hold), nil
		}
	}
	return p.finish(ctx, mc, hold, p.apply(ctx, a, objs)), nil
}

// connect finds the member's cluster, or what kept the pass out of it.
func (p *memberPass) connect(ctx context.Context) (cluster.Cluster, *passFacts) {
	m := p.m
	switch {
	case errors.Is(m.Err, fleet.ErrRefused):
		// Nothing was ever sent to it: its registration is what needs a person, not its network.
		return nil, &passFacts{applied: applyFailed, unreached: v1alpha1.ReasonRegistrationRefused, err: m.Err}
	case m.Err != nil:
		return nil, unreachable(m.Err)
	case !m.Engaged:
		return nil, unreachable(errors.New("member is registering"))
	}
	cl, err := p.r.Fleet.Get(ctx, multicluster.ClusterName(m.Name))
	if err != nil {
		return nil, unreachable(err)
	}
	if ns := p.s.cluster.Namespace; !m.AllowsNamespace(ns) {
		err := fmt.Errorf("member %s allows only namespaces %s, not %s", m.Name, strings.Join(m.Namespaces, ", "), ns)
		return nil, degraded(v1alpha1.ReasonNamespaceNotAllowed, err)
	}
	return cl, nil
}

// render renders the member's objects with what this pass found: where spec.restore's backups are, a backup
// asked for now, a scale-down held back, whether the member controller writes the primary's endpoints. The error is a spec that cannot be honoured there.
func (p *memberPass) render(hold *scaleDownHold, primaryEndpoints bool) (*render.Objects, error) {
	c := p.s.cluster
	opts := []render.Option{render.WithRunnerImage(p.r.runnerImage())}
	if hold != nil {
		opts = append(opts, render.WithHeldReplicas(hold.pods))
	}
	if primaryEndpoints {
		opts = append(opts, render.WithPrimaryEndpoints())
	}
	if c.Spec.Restore != nil {
		from, err := p.s.restoreFor(p.m.Name)
		if err != nil {
			return nil, err
		}
		opts = append(opts, render.WithRestore(from))
	}
	if at, ok := backupRequested(c, p.prev); ok {
		opts = append(opts, render.WithBackupNow(at))
	}
	return render.Render(c, p.m.Member, p.s.creds, opts...)
}

// applier writes into the member's cluster; paused, it only tells what it would write.
func (p *memberPass) applier(cl cluster.Cluster) (apply.Applier, error) {
	w, err := p.r.writerFor(p.m.Name, cl)
	if err != nil {
		return apply.Applier{}, err
	}
	c := p.s.cluster
	return apply.Applier{Client: cl.GetClient(), Reader: cl.GetAPIReader(), Writer: w, DryRun: c.Spec.Paused,
		Member: p.m.Name, UID: c.UID, Adopt: adoptSet(c), Memory: &p.r.memory}, nil
}

// apply writes the member's objects. The claims the StatefulSet's Pods will bind by name must be this
// MySQLCluster's before it is created or scaled over them; while any is someone else's, the StatefulSet is held
// back and the rest applied.
func (p *memberPass) apply(ctx context.Context, a apply.Applier, objs *render.Objects) error {
	adopted, claimErr := reconcileClaims(ctx, a, p.s.cluster)
	p.row.Adopted = mergeRefs(p.row.Adopted, adopted...)
	if claimErr != nil {
		objs.StatefulSet = nil
	}
	results, err := applyInWaves(ctx, a, objs)
	p.record(ctx, results)
	err = errors.Join(claimErr, err)
	if err != nil && p.m.Alive != nil && p.m.Alive.Err() != nil {
		err = context.Cause(p.m.Alive) // stopped because the member was found unreachable meanwhile
	}
	return err
}

// record notes what the applies did: objects adopted, the writes made (metrics, debug log) and, paused, the plan.
func (p *memberPass) record(ctx context.Context, results []apply.Result) {
	paused := p.s.cluster.Spec.Paused
	p.row.Plan = nil
	for _, res := range results {
		if res.Action == "" {
			continue // not reached: an earlier wave failed
		}
		if res.Adopted != nil && !paused {
			p.row.Adopted = mergeRefs(p.row.Adopted, *res.Adopted)
		}
		if res.Action != apply.ActionUnchanged && res.Action != apply.ActionConflict && !paused {
			applies.WithLabelValues(p.m.Name, res.Kind, res.Action).Inc()
			ctrl.LoggerFrom(ctx).V(4).Info("Applied", "kind", res.Kind, "name", res.Name, "action", res.Action)
		}
		if paused {
			p.row.Plan = append(p.row.Plan, v1alpha1.PlannedObject{Kind: res.Kind, Name: res.Name, Action: res.Action})
		}
	}
}

// recreating reports a member whose StatefulSet is being recreated with its new volume template; the deletion
// of the StatefulSet brings the MySQLCluster back.
func (p *memberPass) recreating(ctx context.Context, mc client.Client, hold *scaleDownHold) v1alpha1.MemberStatus {
	p.settle(passFacts{applied: applyRecreating})
	return p.readBack(ctx, mc, hold)
}

// finish classifies what applying found (err) and reads back how far the member got.
func (p *memberPass) finish(ctx context.Context, mc client.Client, hold *scaleDownHold, err error) v1alpha1.MemberStatus {
	if conflicts, others := apply.SplitConflicts(err); len(conflicts) > 0 && !isUnreachable(errors.Join(others...)) {
		p.row.Conflicts = conflicts
		p.settle(passFacts{applied: applyConflicts, conflicts: conflicts})
		p.count()
		return p.readBack(ctx, mc, hold)
	}
	if err != nil {
		return p.failed(ctx, err)
	}
	switch {
	case p.s.cluster.Spec.Paused:
		p.settle(passFacts{applied: applyPaused})
		p.count()
		return p.readBack(ctx, mc, hold)
	case hold != nil:
		p.settle(passFacts{applied: applyHeld, holdMessage: hold.message})
	default:
		p.settle(passFacts{applied: appliedAll})
	}
	st := p.readBack(ctx, mc, hold)
	p.count()
	return st
}

// settle records what the pass found before reading back: the row takes the conditions, phase and last error
// that memberPassStatus decides from f, as of now.
func (p *memberPass) settle(f passFacts) {
	f.at = metav1.Now()
	v := memberPassStatus(f, p.s.cluster.Generation)
	p.row.Phase, p.row.LastError = v.phase, v.lastError
	for _, c := range v.conditions {
		meta.SetStatusCondition(&p.row.Conditions, c)
	}
}

// readBack reads back how far the member got into the row (see MySQLClusterReconciler.readBack).
func (p *memberPass) readBack(ctx context.Context, mc client.Client, hold *scaleDownHold) v1alpha1.MemberStatus {
	p.row = p.r.readBack(ctx, mc, p.s.cluster, p.row, p.conds, hold)
	return p.row
}

// count adds the pass to the member's reconciles, by the phase its row has now.
func (p *memberPass) count() {
	memberReconciles.WithLabelValues(p.m.Name, string(p.row.Phase)).Inc()
}

// unreachable is a member that did not answer.
func unreachable(err error) *passFacts {
	return &passFacts{applied: applyFailed, unreached: v1alpha1.ReasonUnreachable, err: err}
}

// degraded is a member that answered, and in which the pass could not do its work for reason.
func degraded(reason string, err error) *passFacts {
	return &passFacts{applied: applyFailed, failReason: reason, err: err}
}

// fail records a pass that ended before anything could be read back, and counts it.
func (p *memberPass) fail(f *passFacts) v1alpha1.MemberStatus {
	p.settle(*f)
	p.count()
	return p.row
}

// failed classifies an error of a request to the member: no answer is unreachability, anything else a failed
// apply.
func (p *memberPass) failed(ctx context.Context, err error) v1alpha1.MemberStatus {
	if isUnreachable(err) {
		// Have the registry probe it now: if it is gone, every reconcile waiting there stops at once and later
		// ones skip it until its health probe sees it answer again.
		p.r.Fleet.Suspect(p.m.Name)
		return p.fail(unreachable(err))
	}
	reason := v1alpha1.ReasonApplyFailed
	if errors.Is(err, errStorageShrink) {
		reason = v1alpha1.ReasonStorageShrink
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Member failed", "error", err.Error())
	return p.fail(degraded(reason, err))
}

// specReason is the reason a spec that cannot be rendered is reported with.
func specReason(err error) string {
	var schedErr *render.ScheduleError
	if errors.As(err, &schedErr) {
		return v1alpha1.ReasonInvalidSchedule
	}
	return v1alpha1.ReasonInvalidSpec
}
