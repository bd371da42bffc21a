package mysqlcluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// phase is one step of a pass over a MySQLCluster, as in cluster-api's machine controller: it does its work and
// records what it found in the scope. An error ends the pass before the status is written; the next pass starts
// over.
type phase func(ctx context.Context, s *scope) error

// phases are the steps of a pass, in order. Placement comes first, since every later phase works in the members
// it chose, and the finalizers must be on before anything is written into them; the credentials before the
// members, whose Secrets carry them; departure after the members, so that a member that left is torn down only
// once those that stay are in line. The status is not a phase: it is computed from what they found (status.go).
func (r *MySQLClusterReconciler) phases() []phase {
	return []phase{
		r.reconcilePlacement,
		always(r.resolveRestore),
		r.reconcileCredentials,
		always(r.reconcileMembers),
		always(r.reconcileDeparted),
	}
}

// always is a phase that cannot fail.
func always(f func(context.Context, *scope)) phase {
	return func(ctx context.Context, s *scope) error {
		f(ctx, s)
		return nil
	}
}

// pass is one pass over a MySQLCluster, in the members of only if it is not nil (pace.go: only member changes
// asked for it) and in every placed member otherwise: the phases, then one status write.
func (r *MySQLClusterReconciler) pass(ctx context.Context, c *v1alpha1.MySQLCluster, only map[string]bool) (ctrl.Result, error) {
	if !c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, c)
	}
	s := &scope{cluster: c, before: c.Status.DeepCopy(), only: only}
	for _, p := range r.phases() {
		if err := p(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.reconcileStatus(ctx, s)
}

// reconcilePlacement resolves the placement into members and puts the finalizers on before anything is written
// there.
func (r *MySQLClusterReconciler) reconcilePlacement(ctx context.Context, s *scope) error {
	r.resolvePlacement(s)
	return r.addFinalizers(ctx, s)
}

// resolvePlacement turns the placement into members. Registered members whose kubeconfig was refused or that do
// not answer are placed too: they show up in status as unreachable instead of disappearing.
func (r *MySQLClusterReconciler) resolvePlacement(s *scope) {
	states := r.Fleet.Members()
	facts := make([]placement.Member, 0, len(states))
	byName := map[string]fleet.State{}
	s.registered = map[string]bool{}
	for _, st := range states {
		facts = append(facts, st.Member)
		byName[st.Name] = st
		s.registered[st.Name] = true
	}
	selected, unknown, err := placement.Resolve(s.cluster.Spec.Placement, facts)
	s.unknown, s.placementErr = unknown, err
	s.chosen = map[string]bool{}
	for _, m := range selected {
		s.placed = append(s.placed, byName[m.Name])
		s.chosen[m.Name] = true
	}
}

// addFinalizers puts on the MySQLCluster's own finalizer and, before anything is written there, a finalizer for
// each member it is placed on (finalizers.go). A member's finalizer says
// that the MySQLCluster may have objects there, and stays while it may (a member it left keeps its volumes):
// deletion reads it to know which members not registered at the time still hold something of it, and records
// their teardown as pending (pending.go).
func (r *MySQLClusterReconciler) addFinalizers(ctx context.Context, s *scope) error {
	c := s.cluster
	changed := controllerutil.AddFinalizer(c, v1alpha1.Finalizer)
	for _, m := range s.placed {
		if m.AllowsNamespace(c.Namespace) && controllerutil.AddFinalizer(c, memberFinalizer(m.Name)) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := r.Hub.Update(ctx, c); err != nil {
		return fmt.Errorf("failed to put finalizers on %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// retryAfter is how soon a MySQLCluster is reconciled again while a member is unreachable or failing; member
// events bring it back sooner when something changes there.
const retryAfter = 10 * time.Second

// reconcileStatus computes the status from what the phases found, writes it once if it changed, and tells when
// to look again.
func (r *MySQLClusterReconciler) reconcileStatus(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	s.computeStatus(time.Now())
	reportPhase(c, c.Status.Phase)
	reportPrimaries(c)
	if err := r.writeStatus(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	if s.retry {
		ctrl.LoggerFrom(ctx).V(4).Info("Members not converged; retrying", "after", retryAfter)
		return ctrl.Result{RequeueAfter: retryAfter}, nil
	}
	if !s.lookAgain.IsZero() {
		return ctrl.Result{RequeueAfter: time.Until(s.lookAgain) + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// writeStatus writes the computed status if it differs from what the hub has, then emits Events for the
// conditions that changed: after the write, so that a write lost to a conflict (and redone by the next pass)
// does not announce the same transition twice.
func (r *MySQLClusterReconciler) writeStatus(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.before, &s.cluster.Status) {
		return nil
	}
	if err := r.Hub.Status().Update(ctx, s.cluster); err != nil {
		return fmt.Errorf("failed to update status of %s/%s: %w", s.cluster.Namespace, s.cluster.Name, err)
	}
	r.emitTransitions(s)
	r.emitReplicationEvents(s)
	return nil
}
