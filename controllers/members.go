package controllers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// resolvePlacement turns the placement into members. Registered members whose kubeconfig was refused or that do
// not answer are placed too: they show up in status as unreachable instead of disappearing.
func (r *MySQLClusterReconciler) resolvePlacement(s *scope) {
	states := r.Fleet.Members()
	facts := make([]placement.Member, 0, len(states))
	byName := map[string]fleet.State{}
	for _, st := range states {
		facts = append(facts, st.Member)
		byName[st.Name] = st
	}
	selected, unknown, err := placement.Resolve(s.cluster.Spec.Placement, facts)
	s.unknown, s.placementErr = unknown, err
	for _, m := range selected {
		s.placed = append(s.placed, byName[m.Name])
	}
}

// credentialsSecretName is the hub Secret with the generated passwords. It lives in the manager's namespace, so
// that the manager needs Secrets access nowhere else on the hub, and has no owner: with deletionPolicy Retain
// the passwords must outlive the MySQLCluster, since the data kept on the volumes needs them.
func credentialsSecretName(c *v1alpha1.MySQLCluster) string {
	return "credentials." + c.Namespace + "." + c.Name
}

// reconcileCredentials reads the hub's credentials Secret, creating it with new random passwords the first time.
func (r *MySQLClusterReconciler) reconcileCredentials(ctx context.Context, s *scope) error {
	c := s.cluster
	key := client.ObjectKey{Namespace: r.Namespace, Name: credentialsSecretName(c)}
	var secret corev1.Secret
	err := r.Hub.Get(ctx, key, &secret)
	if apierrors.IsNotFound(err) {
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{
				v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ClusterNameLabel: c.Name,
				v1alpha1.ClusterNamespaceLabel: c.Namespace,
			}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{v1alpha1.RootPasswordKey: []byte(rand.Text()), v1alpha1.PasswordKey: []byte(rand.Text())},
		}
		if err := r.Hub.Create(ctx, &secret); err != nil {
			return fmt.Errorf("failed to create credentials Secret %s: %w", key, err)
		}
	} else if err != nil {
		return fmt.Errorf("failed to read credentials Secret %s: %w", key, err)
	}
	s.creds = render.Credentials{
		RootPassword: string(secret.Data[v1alpha1.RootPasswordKey]),
		Password:     string(secret.Data[v1alpha1.PasswordKey]),
	}
	return nil
}

// reconcileMembers renders, applies and reads back every placed member at once. Each member gets its own
// deadline; its failure becomes its status, never another member's delay.
func (r *MySQLClusterReconciler) reconcileMembers(ctx context.Context, s *scope) {
	s.members = make([]v1alpha1.MemberStatus, len(s.placed))
	var wg sync.WaitGroup
	for i, m := range s.placed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mctx, cancel := context.WithTimeout(ctx, r.MemberTimeout)
			defer cancel()
			if m.Alive != nil {
				// Found unreachable by another reconcile: stop now rather than wait out the deadline.
				defer context.AfterFunc(m.Alive, cancel)()
			}
			mctx = ctrl.LoggerInto(mctx, ctrl.LoggerFrom(ctx).WithValues("member", m.Name))
			mctx = context.WithValue(mctx, memberKey{}, m.Name)
			s.members[i] = r.reconcileMember(mctx, s, m)
		}()
	}
	wg.Wait()
	for i := range s.members {
		// A member the registry knows is unreachable needs no retry: its health probe requeues every
		// MySQLCluster when it answers again. Retrying here would only turn an outage into a storm of reconciles.
		if p := s.members[i].Phase; p == v1alpha1.PhaseDegraded || (p == v1alpha1.PhaseUnreachable && s.placed[i].Err == nil) {
			s.retry = true
		}
	}
}

// reconcileMember brings one member in line and reports its state.
func (r *MySQLClusterReconciler) reconcileMember(ctx context.Context, s *scope, m fleet.State) v1alpha1.MemberStatus {
	c := s.cluster
	st := v1alpha1.MemberStatus{Name: m.Name, Cloud: m.Cloud, Region: m.Region, Replicas: c.Spec.Replicas}
	st.Conditions = previousMemberConditions(s.before, m.Name)
	gen := c.Generation
	setCond := func(t string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	fail := func(phase v1alpha1.Phase, reason string, err error) v1alpha1.MemberStatus {
		st.Phase, st.LastError = phase, err.Error()
		setCond(v1alpha1.MemberConditionApplied, false, reason, err.Error())
		setCond(v1alpha1.MemberConditionReady, false, reason, "not applied")
		memberReconciles.WithLabelValues(m.Name, string(phase)).Inc()
		return st
	}

	if m.Err != nil || !m.Engaged {
		err := m.Err
		if err == nil {
			err = errors.New("member is registering")
		}
		setCond(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonUnreachable, err.Error())
		return fail(v1alpha1.PhaseUnreachable, v1alpha1.ReasonUnreachable, err)
	}
	cl, err := r.Fleet.Get(ctx, multicluster.ClusterName(m.Name))
	if err != nil {
		setCond(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonUnreachable, err.Error())
		return fail(v1alpha1.PhaseUnreachable, v1alpha1.ReasonUnreachable, err)
	}
	mc := cl.GetClient()
	if !m.AllowsNamespace(c.Namespace) {
		err := fmt.Errorf("member %s allows only namespaces %s, not %s", m.Name, strings.Join(m.Namespaces, ", "), c.Namespace)
		setCond(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
		return fail(v1alpha1.PhaseDegraded, v1alpha1.ReasonNamespaceNotAllowed, err)
	}

	st.StorageClass = render.StorageClass(c, m.Member)
	if sched, err := render.BackupSchedule(c, m.Name); err == nil {
		st.BackupSchedule = sched
	}
	objs, err := render.Render(c, m.Member, s.creds)
	if err != nil {
		s.specErr = err
		setCond(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
		return fail(v1alpha1.PhaseDegraded, v1alpha1.ReasonInvalidSpec, err)
	}

	a := applier{c: mc, reader: cl.GetAPIReader(), dryRun: c.Spec.Paused, member: m.Name, echoes: &r.echoes, verified: &r.verified,
		shared: &r.shared}
	if !c.Spec.Paused {
		done, err := r.growStorage(ctx, mc, c)
		if err != nil {
			return r.memberError(st, setCond, fail, m.Name, err)
		}
		if !done {
			// The StatefulSet is being recreated with the larger volume template; its deletion brings us back.
			st.Phase = v1alpha1.PhaseProgressing
			setCond(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
			setCond(v1alpha1.MemberConditionApplied, false, v1alpha1.ReasonConverging, "expanding volumes")
			return r.readBack(ctx, mc, c, st, setCond)
		}
	}
	st.Plan = nil
	results, err := applyInWaves(ctx, a, objs)
	for _, res := range results {
		if res.action != "" && res.action != ActionUnchanged && !c.Spec.Paused {
			applies.WithLabelValues(m.Name, res.kind, res.action).Inc()
			ctrl.LoggerFrom(ctx).V(4).Info("Applied", "kind", res.kind, "name", res.name, "action", res.action)
		}
		if c.Spec.Paused {
			st.Plan = append(st.Plan, v1alpha1.PlannedObject{Kind: res.kind, Name: res.name, Action: res.action})
		}
	}
	if err != nil && m.Alive != nil && m.Alive.Err() != nil {
		err = context.Cause(m.Alive) // stopped because the member was found unreachable meanwhile
	}
	if err != nil {
		if isUnreachable(err) {
			// Have the registry probe it now: if it is gone, every reconcile waiting there stops at once and
			// later ones skip it until its health probe sees it answer again.
			r.Fleet.Suspect(m.Name)
		}
		return r.memberError(st, setCond, fail, m.Name, err)
	}
	setCond(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
	if c.Spec.Paused {
		st.Phase = v1alpha1.PhasePaused
		setCond(v1alpha1.MemberConditionApplied, false, v1alpha1.ReasonPaused, "paused: nothing applied")
		memberReconciles.WithLabelValues(m.Name, string(st.Phase)).Inc()
		return r.readBack(ctx, mc, c, st, setCond)
	}
	setCond(v1alpha1.MemberConditionApplied, true, v1alpha1.ReasonApplied, "")
	st = r.readBack(ctx, mc, c, st, setCond)
	memberReconciles.WithLabelValues(m.Name, string(st.Phase)).Inc()
	return st
}

// memberError classifies a failure in a member: no answer is unreachability, anything else a failed apply.
func (r *MySQLClusterReconciler) memberError(st v1alpha1.MemberStatus, setCond func(string, bool, string, string),
	fail func(v1alpha1.Phase, string, error) v1alpha1.MemberStatus, member string, err error) v1alpha1.MemberStatus {
	if isUnreachable(err) {
		setCond(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonUnreachable, err.Error())
		memberReachable.WithLabelValues(member).Set(0)
		return fail(v1alpha1.PhaseUnreachable, v1alpha1.ReasonUnreachable, err)
	}
	setCond(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
	return fail(v1alpha1.PhaseDegraded, v1alpha1.ReasonApplyFailed, err)
}

// isUnreachable tells a member that did not answer from one that answered with an error.
func isUnreachable(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err)
	}
	return true // connection refused, deadline exceeded, DNS, TLS: no API answer at all
}

// readBack reports how far the member got: ready replicas, bound volumes, backups.
func (r *MySQLClusterReconciler) readBack(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster,
	st v1alpha1.MemberStatus, setCond func(string, bool, string, string)) v1alpha1.MemberStatus {
	memberReachable.WithLabelValues(st.Name).Set(1)
	var sts appsv1.StatefulSet
	err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		st.LastError = err.Error()
	default:
		st.ReadyReplicas = sts.Status.ReadyReplicas
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := mc.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(render.Selector(c))); err == nil {
		for _, p := range pvcs.Items {
			if p.Status.Phase == corev1.ClaimBound {
				st.BoundVolumes++
			}
		}
	}
	if c.Spec.Backup != nil {
		var cj batchv1.CronJob
		if err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.BackupCronJobName()}, &cj); err == nil {
			st.LastBackup = cj.Status.LastSuccessfulTime
			st.LastScheduledBackup = cj.Status.LastScheduleTime
		}
	}
	if st.Phase == v1alpha1.PhasePaused {
		return st
	}
	ready := err == nil && sts.Status.ObservedGeneration >= sts.Generation && sts.Status.ReadyReplicas == c.Spec.Replicas &&
		sts.Status.UpdatedReplicas == c.Spec.Replicas
	if ready {
		if st.Phase == "" {
			st.Phase = v1alpha1.PhaseReady
		}
		setCond(v1alpha1.MemberConditionReady, true, v1alpha1.ReasonStatefulSetReady,
			fmt.Sprintf("%d/%d replicas ready", sts.Status.ReadyReplicas, c.Spec.Replicas))
	} else {
		if st.Phase == "" {
			st.Phase = v1alpha1.PhaseProgressing
		}
		setCond(v1alpha1.MemberConditionReady, false, v1alpha1.ReasonStatefulSetNotReady,
			fmt.Sprintf("%d/%d replicas ready", sts.Status.ReadyReplicas, c.Spec.Replicas))
	}
	return st
}

// growStorage expands the data volumes of a member when spec.storage.size grew. The StatefulSet's volume
// template is immutable, so, as mature MySQL operators do, each PVC is expanded in place and the StatefulSet is
// deleted with orphan propagation (Pods and PVCs stay, MySQL keeps running) to be recreated with the new template
// by the next apply. It returns done=false while that is under way. A template larger than the spec (storage
// cannot shrink) is refused as an error.
func (r *MySQLClusterReconciler) growStorage(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster) (bool, error) {
	var sts appsv1.StatefulSet
	if err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts); err != nil {
		return true, client.IgnoreNotFound(err)
	}
	if !sts.DeletionTimestamp.IsZero() {
		return false, nil
	}
	want := c.Spec.Storage.Size
	var have *corev1.PersistentVolumeClaim
	for i := range sts.Spec.VolumeClaimTemplates {
		if sts.Spec.VolumeClaimTemplates[i].Name == v1alpha1.DataVolumeName {
			have = &sts.Spec.VolumeClaimTemplates[i]
		}
	}
	if have == nil {
		return true, nil
	}
	cur := have.Spec.Resources.Requests[corev1.ResourceStorage]
	switch cur.Cmp(want) {
	case 0:
		return true, nil
	case 1:
		return true, fmt.Errorf("%w: member volumes are %s, spec asks for %s", errStorageShrink, cur.String(), want.String())
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := mc.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(render.Selector(c))); err != nil {
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
	if err := mc.Delete(ctx, &sts, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("failed to recreate StatefulSet %s/%s for larger volumes: %w", sts.Namespace, sts.Name, err)
	}
	return false, nil
}

var errStorageShrink = errors.New("storage cannot shrink")

func previousMemberConditions(before *v1alpha1.MySQLClusterStatus, name string) []metav1.Condition {
	for _, m := range before.Members {
		if m.Name == name {
			return append([]metav1.Condition(nil), m.Conditions...)
		}
	}
	return nil
}

type applyResult struct{ kind, name, action string }

// applyInWaves applies a member's objects in three waves, each concurrently: the Namespace; then what the
// workloads use (credentials, configuration, Services, disruption budget, backup volume); then the StatefulSet
// and the backup CronJob. Within a wave nothing depends on anything else, and concurrency is what makes a member's
// objects land in one round trip instead of nine. Each wave gets a third of what is left of the member's time, so
// that a member whose connections hang is found out, and reported unreachable, early in the pass.
func applyInWaves(ctx context.Context, a applier, objs *render.Objects) ([]applyResult, error) {
	all := objs.All()
	results := make([]applyResult, len(all))
	wave := func(idx []int, share time.Duration) error {
		wctx := ctx
		if share > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, share)
			defer cancel()
		}
		errs := make([]error, len(idx))
		var wg sync.WaitGroup
		for j, i := range idx {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kind, name, action, err := a.apply(wctx, all[i])
				results[i] = applyResult{kind: kind, name: name, action: action}
				if err != nil {
					applies.WithLabelValues(memberOf(ctx), kind, "error").Inc()
					errs[j] = fmt.Errorf("failed to apply %s %s: %w", kind, name, err)
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
		case *appsv1ac.StatefulSetApplyConfiguration, *batchv1ac.CronJobApplyConfiguration:
			third = append(third, i)
		default:
			second = append(second, i)
		}
	}
	waves := [][]int{first, second, third}
	for n, w := range waves {
		var share time.Duration
		if deadline, ok := ctx.Deadline(); ok {
			share = time.Until(deadline) / time.Duration(len(waves)-n)
		}
		if err := wave(w, share); err != nil {
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
