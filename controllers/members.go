package controllers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/apply"
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

// credentialsSecretName is the hub Secret with the generated passwords. It lives in the manager's namespace, so
// that the manager needs Secrets access nowhere else on the hub, and has no owner: with deletionPolicy Retain
// the passwords must outlive the MySQLCluster, since the data kept on the volumes needs them.
func credentialsSecretName(c *v1alpha1.MySQLCluster) string {
	return "credentials." + c.Namespace + "." + c.Name
}

// reconcileCredentials reads the hub's credentials Secret, creating it with new random passwords the first time,
// and adding the passwords a Secret made by an earlier release lacks (the member controller's and replication's
// accounts). Passwords once generated never change.
func (r *MySQLClusterReconciler) reconcileCredentials(ctx context.Context, s *scope) error {
	c := s.cluster
	key := client.ObjectKey{Namespace: r.Namespace, Name: credentialsSecretName(c)}
	var secret corev1.Secret
	err := r.Hub.Get(ctx, key, &secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{
				v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ClusterNameLabel: c.Name,
				v1alpha1.ClusterNamespaceLabel: c.Namespace,
			}},
			Type: corev1.SecretTypeOpaque,
		}
		addPasswords(&secret)
		if err := r.Hub.Create(ctx, &secret); apierrors.IsAlreadyExists(err) {
			// Made meanwhile (sharded replicas, or a cache behind): use those.
			if err := r.reader().Get(ctx, key, &secret); err != nil {
				return fmt.Errorf("failed to read credentials Secret %s: %w", key, err)
			}
		} else if err != nil {
			return fmt.Errorf("failed to create credentials Secret %s: %w", key, err)
		}
	case err != nil:
		return fmt.Errorf("failed to read credentials Secret %s: %w", key, err)
	case addPasswords(&secret):
		if err := r.Hub.Update(ctx, &secret); err != nil {
			return fmt.Errorf("failed to add passwords to credentials Secret %s: %w", key, err)
		}
	}
	s.creds = render.Credentials{
		RootPassword:        string(secret.Data[v1alpha1.RootPasswordKey]),
		Password:            string(secret.Data[v1alpha1.PasswordKey]),
		AdminPassword:       string(secret.Data[v1alpha1.AdminPasswordKey]),
		ReplicationPassword: string(secret.Data[v1alpha1.ReplicationPasswordKey]),
	}
	return nil
}

// addPasswords generates (crypto/rand) each password the Secret lacks, and tells whether it added any.
func addPasswords(secret *corev1.Secret) bool {
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	added := false
	for _, k := range []string{v1alpha1.RootPasswordKey, v1alpha1.PasswordKey, v1alpha1.AdminPasswordKey,
		v1alpha1.ReplicationPasswordKey} {
		if len(secret.Data[k]) == 0 {
			secret.Data[k] = []byte(rand.Text())
			added = true
		}
	}
	return added
}

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
			s.members[i], specErrs[i] = r.reconcileMember(mctx, s, m)
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

// memberConditions sets the conditions of one member's status for one generation.
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

// fail records a member that could not be brought in line: its phase, error and why nothing is Ready.
func (mc memberConditions) fail(phase v1alpha1.Phase, reason string, err error) v1alpha1.MemberStatus {
	mc.st.Phase, mc.st.LastError = phase, err.Error()
	mc.set(v1alpha1.MemberConditionApplied, false, reason, err.Error())
	mc.set(v1alpha1.MemberConditionReady, false, reason, "not applied")
	memberReconciles.WithLabelValues(mc.st.Name, string(phase)).Inc()
	return *mc.st
}

// reconcileMember brings one member in line and reports its state; the error is a spec that cannot be rendered
// for this member.
func (r *MySQLClusterReconciler) reconcileMember(ctx context.Context, s *scope, m fleet.State) (v1alpha1.MemberStatus, error) {
	c := s.cluster
	st := v1alpha1.MemberStatus{Name: m.Name, Cloud: m.Cloud, Region: m.Region, Replicas: c.Spec.Replicas}
	prev := previousMember(s.before, m.Name)
	// What the member said last stays until it is read again: an unreachable member keeps its last report,
	// under a Reachable condition that says how old the news is.
	st.Conditions, st.Adopted, st.Replication = prev.Conditions, prev.Adopted, prev.Replication
	st.Backups, st.Restore, st.LastBackup = prev.Backups, prev.Restore, prev.LastBackup
	conds := memberConditions{st: &st, gen: c.Generation}

	switch {
	case errors.Is(m.Err, fleet.ErrRefused):
		// Nothing was ever sent to it: its registration is what needs a person, not its network.
		conds.set(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonRegistrationRefused, m.Err.Error())
		return conds.fail(v1alpha1.PhaseDegraded, v1alpha1.ReasonRegistrationRefused, m.Err), nil
	case m.Err != nil || !m.Engaged:
		err := m.Err
		if err == nil {
			err = errors.New("member is registering")
		}
		conds.set(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonUnreachable, err.Error())
		return conds.fail(v1alpha1.PhaseUnreachable, v1alpha1.ReasonUnreachable, err), nil
	}
	cl, err := r.Fleet.Get(ctx, multicluster.ClusterName(m.Name))
	if err != nil {
		conds.set(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonUnreachable, err.Error())
		return conds.fail(v1alpha1.PhaseUnreachable, v1alpha1.ReasonUnreachable, err), nil
	}
	mc := cl.GetClient()
	if !m.AllowsNamespace(c.Namespace) {
		err := fmt.Errorf("member %s allows only namespaces %s, not %s", m.Name, strings.Join(m.Namespaces, ", "), c.Namespace)
		conds.set(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
		return conds.fail(v1alpha1.PhaseDegraded, v1alpha1.ReasonNamespaceNotAllowed, err), nil
	}

	st.StorageClass = render.StorageClass(c, m.Member)
	if sched, err := render.BackupSchedule(c, m.Name); err == nil {
		st.BackupSchedule = sched
	}
	hold, err := readScaleDown(ctx, mc, c)
	if err != nil {
		return r.memberError(ctx, conds, m, err), nil
	}
	objs, err := r.renderMember(s, m, prev, hold)
	if err != nil {
		conds.set(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
		reason := v1alpha1.ReasonInvalidSpec
		var schedErr *render.ScheduleError
		if errors.As(err, &schedErr) {
			reason = v1alpha1.ReasonInvalidSchedule
		}
		return conds.fail(v1alpha1.PhaseDegraded, reason, err), err
	}

	w, err := r.writerFor(m.Name, cl)
	if err != nil {
		return r.memberError(ctx, conds, m, err), nil
	}
	a := apply.Applier{Client: mc, Reader: cl.GetAPIReader(), Writer: w, DryRun: c.Spec.Paused, Member: m.Name, UID: c.UID,
		Adopt: adoptSet(c), Memory: &r.memory}
	if !c.Spec.Paused {
		done, err := r.reconcileVolumeTemplate(ctx, a, c)
		if err != nil {
			return r.memberError(ctx, conds, m, err), nil
		}
		if !done {
			// The StatefulSet is being recreated with the new volume template; its deletion brings us back.
			st.Phase = v1alpha1.PhaseProgressing
			conds.set(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
			conds.set(v1alpha1.MemberConditionApplied, false, v1alpha1.ReasonConverging, "recreating the StatefulSet for its new volume template")
			return r.readBack(ctx, mc, c, st, conds, hold), nil
		}
	}
	// The claims the StatefulSet's Pods will bind by name must be this MySQLCluster's before it is created or
	// scaled over them; while any is someone else's, the StatefulSet is held back and the rest applied.
	adopted, claimErr := reconcileClaims(ctx, a, c)
	st.Adopted = mergeRefs(st.Adopted, adopted...)
	if claimErr != nil {
		objs.StatefulSet = nil
	}
	results, err := applyInWaves(ctx, a, objs)
	err = errors.Join(claimErr, err)
	st.Plan = nil
	for _, res := range results {
		if res.Action == "" {
			continue // not reached: an earlier wave failed
		}
		if res.Adopted != nil && !c.Spec.Paused {
			st.Adopted = mergeRefs(st.Adopted, *res.Adopted)
		}
		if res.Action != apply.ActionUnchanged && res.Action != apply.ActionConflict && !c.Spec.Paused {
			applies.WithLabelValues(m.Name, res.Kind, res.Action).Inc()
			ctrl.LoggerFrom(ctx).V(4).Info("Applied", "kind", res.Kind, "name", res.Name, "action", res.Action)
		}
		if c.Spec.Paused {
			st.Plan = append(st.Plan, v1alpha1.PlannedObject{Kind: res.Kind, Name: res.Name, Action: res.Action})
		}
	}
	if err != nil && m.Alive != nil && m.Alive.Err() != nil {
		err = context.Cause(m.Alive) // stopped because the member was found unreachable meanwhile
	}
	if conflicts, others := apply.SplitConflicts(err); len(conflicts) > 0 && !isUnreachable(errors.Join(others...)) {
		st.Conflicts = conflicts
		conds.set(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
		st.Phase, st.LastError = v1alpha1.PhaseDegraded, conflictMessage(conflicts)
		conds.set(v1alpha1.MemberConditionApplied, false, conflictReason(conflicts), st.LastError)
		memberReconciles.WithLabelValues(m.Name, string(st.Phase)).Inc()
		return r.readBack(ctx, mc, c, st, conds, hold), nil
	}
	if err != nil {
		return r.memberError(ctx, conds, m, err), nil
	}
	conds.set(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
	if c.Spec.Paused {
		st.Phase = v1alpha1.PhasePaused
		conds.set(v1alpha1.MemberConditionApplied, false, v1alpha1.ReasonPaused, "paused: nothing applied")
		memberReconciles.WithLabelValues(m.Name, string(st.Phase)).Inc()
		return r.readBack(ctx, mc, c, st, conds, hold), nil
	}
	if hold != nil {
		// Everything is applied, but spec.replicas is not in the member yet.
		conds.set(v1alpha1.MemberConditionApplied, false, v1alpha1.ReasonScaleDownPending, hold.message)
	} else {
		conds.set(v1alpha1.MemberConditionApplied, true, v1alpha1.ReasonApplied, "")
	}
	st = r.readBack(ctx, mc, c, st, conds, hold)
	memberReconciles.WithLabelValues(m.Name, string(st.Phase)).Inc()
	return st, nil
}

// renderMember renders the member's objects with what this pass found: where spec.restore's backups are, a
// backup asked for now, a scale-down held back. The error is a spec that cannot be honoured there.
func (r *MySQLClusterReconciler) renderMember(s *scope, m fleet.State, prev v1alpha1.MemberStatus,
	hold *scaleDownHold) (*render.Objects, error) {
	c := s.cluster
	opts := []render.Option{render.WithRunnerImage(r.runnerImage())}
	if hold != nil {
		opts = append(opts, render.WithHeldReplicas(hold.pods))
	}
	if c.Spec.Restore != nil {
		from, err := s.restoreFor(m.Name)
		if err != nil {
			return nil, err
		}
		opts = append(opts, render.WithRestore(from))
	}
	if at, ok := backupRequested(c, prev); ok {
		opts = append(opts, render.WithBackupNow(at))
	}
	return render.Render(c, m.Member, s.creds, opts...)
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

// memberError classifies a failure in a member: no answer is unreachability, anything else a failed apply.
func (r *MySQLClusterReconciler) memberError(ctx context.Context, conds memberConditions, m fleet.State, err error) v1alpha1.MemberStatus {
	if isUnreachable(err) {
		// Have the registry probe it now: if it is gone, every reconcile waiting there stops at once and later
		// ones skip it until its health probe sees it answer again.
		r.Fleet.Suspect(m.Name)
		conds.set(v1alpha1.MemberConditionReachable, false, v1alpha1.ReasonUnreachable, err.Error())
		return conds.fail(v1alpha1.PhaseUnreachable, v1alpha1.ReasonUnreachable, err)
	}
	conds.set(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
	reason := v1alpha1.ReasonApplyFailed
	if errors.Is(err, errStorageShrink) {
		reason = v1alpha1.ReasonStorageShrink
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Member failed", "error", err.Error())
	return conds.fail(v1alpha1.PhaseDegraded, reason, err)
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

// readBack reports how far the member got: ready replicas, bound volumes, backups. It counts only objects that
// carry this MySQLCluster's UID: a predecessor's StatefulSet or volumes of the same name are not its own. While
// a scale-down is held (hold not nil), the held Pods are the ones that should be ready, and the member is not
// Ready: it is on its way to spec.replicas.
func (r *MySQLClusterReconciler) readBack(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster,
	st v1alpha1.MemberStatus, conds memberConditions, hold *scaleDownHold) v1alpha1.MemberStatus {
	conds.st = &st
	var readErrs []string
	var sts appsv1.StatefulSet
	err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		readErrs = append(readErrs, err.Error())
	case sts.Labels[v1alpha1.ClusterUIDLabel] != string(c.UID):
		err = errNotOwned // a predecessor's: not counted
	default:
		st.ReadyReplicas = sts.Status.ReadyReplicas
	}
	var pvcs corev1.PersistentVolumeClaimList
	if lerr := mc.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(dataVolumeSelector(c))); lerr != nil {
		readErrs = append(readErrs, lerr.Error())
	}
	for _, p := range pvcs.Items {
		if p.Status.Phase == corev1.ClaimBound {
			st.BoundVolumes++
		}
	}
	if c.Spec.Backup != nil {
		var cj batchv1.CronJob
		switch cerr := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.BackupCronJobName()}, &cj); {
		case apierrors.IsNotFound(cerr):
		case cerr != nil:
			readErrs = append(readErrs, cerr.Error())
		case cj.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID):
			// The last successful backup is the member controller's word, from the backup's manifest (below),
			// never the CronJob's: a Job that exits 0 without a manifest made no backup.
			st.LastScheduledBackup = cj.Status.LastScheduleTime
		}
	}
	if len(readErrs) > 0 && st.LastError == "" {
		st.LastError = "reading back: " + strings.Join(readErrs, "; ")
	}
	if st.Phase == v1alpha1.PhasePaused {
		return st
	}
	pods := c.Spec.Replicas
	if hold != nil {
		pods = hold.pods
	}
	podsReady := err == nil && len(readErrs) == 0 && sts.Status.ObservedGeneration >= sts.Generation &&
		sts.Status.ReadyReplicas == pods && sts.Status.UpdatedReplicas == pods
	msg := fmt.Sprintf("%d/%d Pods ready", st.ReadyReplicas, pods)
	if podsReady {
		conds.set(v1alpha1.MemberConditionPodsReady, true, v1alpha1.ReasonPodsReady, msg)
	} else {
		conds.set(v1alpha1.MemberConditionPodsReady, false, v1alpha1.ReasonPodsNotReady, msg)
	}

	// The member controller's report on this StatefulSet (by UID) says whether the servers replicate.
	var rep *v1alpha1.ReplicationReport
	if err == nil {
		var rerr error
		if rep, rerr = readReport(ctx, mc, &sts); rerr != nil && st.LastError == "" {
			st.LastError = "reading back: " + rerr.Error()
		}
	}
	st.Replication = memberReplication(rep, st.Replication, metav1.Now())
	if rep != nil {
		st.Backups, st.Restore = rep.Backups.DeepCopy(), rep.Restore.DeepCopy()
	}
	st.LastBackup = nil
	if st.Backups != nil && st.Backups.LastSuccessful != nil {
		t := st.Backups.LastSuccessful.Time
		st.LastBackup = &t
	}
	repl, reason, rmsg, needsPerson := replicationVerdict(c.Spec.Replicas, c.StatefulSetName(), c.Spec.ErrantServers, rep,
		st.Replication)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.MemberConditionReplicating,
		Status: repl, Reason: reason, Message: rmsg, ObservedGeneration: c.Generation})

	if st.Replication != nil {
		st.Replication.RequestedPrimary = requestedPrimary(c, st.Name)
	}
	if sw, swReason, swMsg, ok := switchoverVerdict(requestedPrimary(c, st.Name), rep); ok {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.MemberConditionPrimaryAsRequested,
			Status: sw, Reason: swReason, Message: swMsg, ObservedGeneration: c.Generation})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.MemberConditionPrimaryAsRequested)
	}

	switch {
	case !podsReady:
		conds.set(v1alpha1.MemberConditionReady, false, v1alpha1.ReasonPodsNotReady, msg)
	case repl != metav1.ConditionTrue:
		conds.set(v1alpha1.MemberConditionReady, false, reason, rmsg)
	case hold != nil:
		conds.set(v1alpha1.MemberConditionReady, false, v1alpha1.ReasonScaleDownPending, hold.message)
	default:
		conds.set(v1alpha1.MemberConditionReady, true, v1alpha1.ReasonServing, rmsg)
	}
	if st.Phase == "" {
		switch {
		case podsReady && repl == metav1.ConditionTrue && hold == nil:
			st.Phase = v1alpha1.PhaseReady
		case st.Restore != nil && st.Restore.Phase == v1alpha1.RestoreFailed:
			st.Phase = v1alpha1.PhaseDegraded
			if st.LastError == "" {
				st.LastError = "the restore failed: " + st.Restore.Reason
			}
		case st.Restore != nil && st.Restore.Phase == v1alpha1.RestorePending:
			st.Phase = v1alpha1.PhaseRestoring
		case needsPerson:
			st.Phase = v1alpha1.PhaseDegraded
			if st.LastError == "" {
				st.LastError = rmsg
			}
		default:
			st.Phase = v1alpha1.PhaseProgressing
		}
	}
	return st
}

var errNotOwned = errors.New("not this MySQLCluster's")

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
