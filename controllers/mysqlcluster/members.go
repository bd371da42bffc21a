package mysqlcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/apply"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// reconcileMembers renders, applies and reads back every placed member at once. Each member gets its own
// deadline; its failure becomes its status, never another member's delay. A pass scoped to some members (s.only)
// keeps the rows of the others that report this generation applied: nothing asked to look there again.
func (r *MySQLClusterReconciler) reconcileMembers(ctx context.Context, s *scope) {
	s.members = make([]v1alpha1.MemberStatus, len(s.placed))
	specErrs := make([]error, len(s.placed))
	var wg sync.WaitGroup
	for i, m := range s.placed {
		if prev := findRow(s.before, m.Name); s.only != nil && !s.only[m.Name] && rowApplied(prev, s.cluster.Generation) {
			s.members[i] = *prev.DeepCopy()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mctx, cancel := r.memberContext(ctx, m)
			defer cancel()
			s.members[i], specErrs[i] = newMemberPass(r, s, m).run(mctx)
		}()
	}
	wg.Wait()
	for i := range s.members {
		if specErrs[i] != nil && s.specErr == nil {
			s.specErr = specErrs[i]
		}
		if needsRetry(s.members[i], s.placed[i]) {
			s.retry = true
		}
	}
}

// rowApplied tells whether a member's row reports generation gen applied there.
func rowApplied(row *v1alpha1.MemberStatus, gen int64) bool {
	if row == nil {
		return false
	}
	c := meta.FindStatusCondition(row.Conditions, v1alpha1.MemberConditionApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// memberContext ends the work in one member as soon as the registry finds the member unreachable, instead of
// letting each request wait out its own deadline. It sets no deadline of its own: a request's deadline starts
// when it is sent (the fleet bounds the requests outstanding against a member, and a pass may wait its turn
// behind others without being counted late), so a pass is only as long as its own requests.
func (r *MySQLClusterReconciler) memberContext(ctx context.Context, m fleet.State) (context.Context, context.CancelFunc) {
	mctx, cancel := context.WithCancel(ctx)
	if m.Alive != nil {
		stop := context.AfterFunc(m.Alive, cancel)
		cancelBoth := cancel
		cancel = func() { stop(); cancelBoth() }
	}
	mctx = ctrl.LoggerInto(mctx, ctrl.LoggerFrom(ctx).WithValues("member", m.Name))
	return context.WithValue(mctx, memberKey{}, m.Name), cancel
}

// needsRetry tells whether a member's result is worth another pass soon. A member the registry knows is
// unreachable, or refused, needs none: its health probe (or a new registration) requeues every MySQLCluster
// there. Nor does a spec that cannot be honoured there: only a change of the spec or of the member (both
// requeue) can mend it. Failed applies and conflicts are retried: a conflicting object that mysqlfleet did not
// create sends it no event when it goes.
func needsRetry(st v1alpha1.MemberStatus, m fleet.State) bool {
	switch st.Phase {
	case v1alpha1.PhaseUnreachable:
		return m.Err == nil
	case v1alpha1.PhaseDegraded:
		applied := meta.FindStatusCondition(st.Conditions, v1alpha1.MemberConditionApplied)
		if applied == nil {
			return true
		}
		return !refusedForGood(applied.Reason)
	}
	return false
}

// memberConditions sets the conditions of one member's status for one generation that the read-back decides
// (judge); those a pass decides before reading back are memberPassStatus's.
type memberConditions struct {
	st  *v1alpha1.MemberStatus
	gen int64
}

func (mc memberConditions) set(t string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&mc.st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: mc.gen})
}

// writerFor is the apply.Writer of a member's cluster, made once per cluster: a member registered again gets a
// new cluster, and with it a new writer.
func (r *MySQLClusterReconciler) writerFor(member string, cl cluster.Cluster) (*apply.Writer, error) {
	r.writersMu.Lock()
	defer r.writersMu.Unlock()
	if mw, ok := r.writers[member]; ok && mw.cluster == cl {
		return mw.writer, nil
	}
	w, err := apply.NewWriter(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	if r.writers == nil {
		r.writers = map[string]memberWriter{}
	}
	r.writers[member] = memberWriter{cluster: cl, writer: w}
	return w, nil
}

// forgetWriter drops the writer of a member this replica no longer works in.
func (r *MySQLClusterReconciler) forgetWriter(member string) {
	r.writersMu.Lock()
	defer r.writersMu.Unlock()
	delete(r.writers, member)
}

// memberWriter is a member cluster's apply.Writer.
type memberWriter struct {
	cluster cluster.Cluster
	writer  *apply.Writer
}

// isUnreachable tells a member that did not answer from one that answered with an error.
func isUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err)
	}
	return true // connection refused, deadline exceeded, DNS, TLS: no API answer at all
}

// dataVolumeSelector selects this MySQLCluster's data claims, by its UID.
func dataVolumeSelector(c *v1alpha1.MySQLCluster) map[string]string {
	sel := render.Selector(c)
	sel[v1alpha1.ClusterUIDLabel] = string(c.UID)
	return sel
}

// reconcileVolumeTemplate recreates the StatefulSet when its volume claim template, which the API server does not
// let change, differs from the rendered one: when spec.storage.size grew, and once after an upgrade from a
// release whose template carried no UID label (and whose StatefulSets let garbage collection delete claims). As
// mature MySQL operators do, the claims are first brought in line in place (expanded; labelled with the UID),
// then the StatefulSet is deleted with orphan propagation (Pods and claims stay, MySQL keeps running; garbage
// collection drops the StatefulSet's owner references from them) to be recreated by the next apply. It returns
// done=false while that is under way. A template larger than the spec (storage cannot shrink) is an error. A
// StatefulSet of this name that is not this MySQLCluster's is left to the applier, which reports the conflict.
func (r *MySQLClusterReconciler) reconcileVolumeTemplate(ctx context.Context, a apply.Applier, c *v1alpha1.MySQLCluster) (bool, error) {
	mc := a.Client
	var sts appsv1.StatefulSet
	if err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts); err != nil {
		return true, client.IgnoreNotFound(err)
	}
	if sts.Labels[v1alpha1.ClusterUIDLabel] != string(c.UID) {
		return true, nil
	}
	if !sts.DeletionTimestamp.IsZero() {
		return false, nil
	}
	var have *corev1.PersistentVolumeClaim
	for i := range sts.Spec.VolumeClaimTemplates {
		if sts.Spec.VolumeClaimTemplates[i].Name == v1alpha1.DataVolumeName {
			have = &sts.Spec.VolumeClaimTemplates[i]
		}
	}
	if have == nil {
		return true, nil
	}
	want := c.Spec.Storage.Size
	cur := have.Spec.Resources.Requests[corev1.ResourceStorage]
	if cur.Cmp(want) > 0 {
		return true, fmt.Errorf("%w: member volumes are %s, spec asks for %s", errStorageShrink, cur.String(), want.String())
	}
	unlabelled := have.Labels[v1alpha1.ClusterUIDLabel] != string(c.UID)
	if cur.Cmp(want) == 0 && !unlabelled {
		return true, nil
	}
	if unlabelled {
		if err := labelOwnClaims(ctx, a, c, &sts); err != nil {
			return false, err
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := a.Reader.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(dataVolumeSelector(c))); err != nil {
		return false, err
	}
	for _, p := range pvcs.Items {
		size := p.Spec.Resources.Requests[corev1.ResourceStorage]
		if size.Cmp(want) >= 0 {
			continue
		}
		patch := corev1ac.PersistentVolumeClaim(p.Name, p.Namespace).WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: want})))
		if err := mc.Apply(ctx, patch, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
			return false, fmt.Errorf("failed to expand PersistentVolumeClaim %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	if err := mc.Delete(ctx, &sts, client.PropagationPolicy(metav1.DeletePropagationOrphan),
		client.Preconditions{UID: &sts.UID}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("failed to recreate StatefulSet %s/%s for its new volume template: %w", sts.Namespace, sts.Name, err)
	}
	return false, nil
}

// labelOwnClaims gives the UID label to the claims of a StatefulSet made before claims were born with it. A claim
// is this MySQLCluster's when it carries the StatefulSet's template labels and either the StatefulSet controls it
// (an owner reference to the StatefulSet's UID, which the former whenDeleted Delete set) or a Pod the
// StatefulSet controls mounts it. A claim that is neither is left alone: a later scale-up reports it as a
// conflict. This runs once per StatefulSet, so the reads go to the API server.
func labelOwnClaims(ctx context.Context, a apply.Applier, c *v1alpha1.MySQLCluster, sts *appsv1.StatefulSet) error {
	var pods corev1.PodList
	if err := a.Reader.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(render.Selector(c))); err != nil {
		return fmt.Errorf("failed to list the Pods of StatefulSet %s: %w", sts.Name, err)
	}
	mounted := map[string]bool{}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != sts.UID {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				mounted[v.PersistentVolumeClaim.ClaimName] = true
			}
		}
	}
	template := render.Selector(c)
	template[v1alpha1.ClusterNameLabel], template[v1alpha1.ClusterNamespaceLabel] = c.Name, c.Namespace
	var pvcs corev1.PersistentVolumeClaimList
	if err := a.Reader.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(template)); err != nil {
		return fmt.Errorf("failed to list the claims of StatefulSet %s: %w", sts.Name, err)
	}
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		if _, has := p.Labels[v1alpha1.ClusterUIDLabel]; has {
			continue
		}
		owned := mounted[p.Name]
		for _, ref := range p.OwnerReferences {
			owned = owned || ref.UID == sts.UID
		}
		if !owned {
			continue
		}
		before := p.DeepCopy()
		p.Labels[v1alpha1.ClusterUIDLabel] = string(c.UID)
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if err := a.Client.Patch(ctx, p, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
			return fmt.Errorf("failed to label PersistentVolumeClaim %s with its MySQLCluster's UID: %w", p.Name, err)
		}
	}
	return nil
}

var errStorageShrink = errors.New("storage cannot shrink")

// previousMember is the member's status as last written, or an empty one.
func previousMember(before *v1alpha1.MySQLClusterStatus, name string) v1alpha1.MemberStatus {
	for _, m := range before.Members {
		if m.Name == name {
			return *m.DeepCopy()
		}
	}
	return v1alpha1.MemberStatus{}
}

// applyInWaves applies a member's objects in three waves, each concurrently: the Namespace; then what the
// workloads use (credentials, configuration, Services, disruption budget, backup volume); then the StatefulSet
// and the backup CronJob. Within a wave nothing depends on anything else, and concurrency is what makes a member's
// objects land in one round trip instead of nine; the fleet's in-flight bound keeps many passes' waves from
// piling into the member's queue.
func applyInWaves(ctx context.Context, a apply.Applier, objs *render.Objects) ([]apply.Result, error) {
	all := objs.All()
	results := make([]apply.Result, len(all))
	wave := func(idx []int) error {
		errs := make([]error, len(idx))
		var wg sync.WaitGroup
		for j, i := range idx {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := a.Apply(ctx, all[i])
				results[i] = res
				if err != nil && res.Action != apply.ActionConflict {
					applies.WithLabelValues(memberOf(ctx), res.Kind, "error").Inc()
					applyErrors.WithLabelValues(memberOf(ctx), errorReason(err)).Inc()
				}
				if err != nil {
					errs[j] = fmt.Errorf("failed to apply %s %s: %w", res.Kind, res.Name, err)
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	var first, second, third []int
	for i, obj := range all {
		switch obj.(type) {
		case *corev1ac.NamespaceApplyConfiguration:
			first = append(first, i)
		case *appsv1ac.StatefulSetApplyConfiguration, *batchv1ac.CronJobApplyConfiguration, *batchv1ac.JobApplyConfiguration:
			third = append(third, i)
		default:
			second = append(second, i)
		}
	}
	for _, w := range [][]int{first, second, third} {
		if err := wave(w); err != nil {
			return results, err
		}
	}
	return results, nil
}

type memberKey struct{}

// memberOf is the member a reconcile context works in, for metrics.
func memberOf(ctx context.Context) string {
	name, _ := ctx.Value(memberKey{}).(string)
	return name
}

// findRow is a member's row in a status, nil if it has none.
func findRow(st *v1alpha1.MySQLClusterStatus, member string) *v1alpha1.MemberStatus {
	for i := range st.Members {
		if st.Members[i].Name == member {
			return &st.Members[i]
		}
	}
	return nil
}
