package member

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driver "github.com/go-sql-driver/mysql"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// Reconciler keeps one StatefulSet's servers a replicated set: each pass observes every server, lets the
// clustering engine decide, executes the plan, labels the Pods by role and publishes the report. A pass that
// changes nothing writes nothing.
type Reconciler struct {
	// Client reads StatefulSets, Pods and report ConfigMaps from the manager's cache and writes directly.
	Client client.Client
	// APIReader reads what must not be stale or is not cached: the credentials Secret (get only, no watch) and
	// the report ConfigMap whenever the cache may lag behind this controller's own last write.
	APIReader client.Reader
	// Resolve maps a Pod to its server's reserved administrative address, for replication and for the
	// controller's connections.
	Resolve Resolver
	// RunnerImage is the image the seed Jobs copy the backup runner from (the manager's; see seed.go).
	RunnerImage string
	// NodeName is the node this controller runs on (Options.NodeName).
	NodeName string
	Timing
	pools pools
	// lease refuses every change to a server, record or role label once the leader election Lease may have
	// passed to a standby; nil (always allowed) without leader election.
	lease *leaseLock
	// events records the Events of the sets (a server rebuilt); nil records none.
	events events.EventRecorder
	// archives are the binary-log archives this process runs while it leads (archive.go); nil runs none.
	archives *archivers

	mu sync.Mutex
	// written is the resourceVersion of each report ConfigMap as this controller last wrote or read it live
	// ("" when it read that there is none). A pass trusts the cached ConfigMap only when it matches: the record
	// in it must never be read stale, or a pass right after a switchover would fence the new primary.
	written map[types.NamespacedName]string
	// passes counts the passes over each set that reached the servers, for tests.
	passes map[types.NamespacedName]int
	// slices is what each primary Service's EndpointSlice names, as this controller last wrote or read it (nil:
	// there is none); selectorEraGone the Services (by UID) whose endpoint controllers' leftovers it removed.
	slices          map[types.NamespacedName]*sliceEndpoint
	selectorEraGone map[types.NamespacedName]types.UID
}

// Timing bounds and paces the passes.
type Timing struct {
	// PollInterval is how soon a set whose pass changed nothing is looked at again. The servers' state changes
	// without any Kubernetes event (a primary dies), so every set is polled; this bounds how long a dead primary
	// goes unnoticed. Default 1s: a pass over an idle set is one status read of each server.
	PollInterval time.Duration
	// BusyInterval is how soon a set is looked at again after a pass that changed something or failed: the
	// next pass checks the change or takes the next step. Default 500ms. The second pass of a failover, after
	// the first stopped the receivers, follows at once.
	BusyInterval time.Duration
	// StatusTimeout bounds the login and status read of one server; a server that takes longer is unreachable
	// for that pass. Default 2s. A primary that hangs is replaced after about poll/2 + 2 × StatusTimeout + the
	// failover's own work: these defaults bring a frozen or cut-off primary's replacement
	// under 8 s at the median on kind (docs/benchmarks.md, failover-kind), and one slow answer still never promotes anyone,
	// since a primary counts as lost only after two passes failed to read it.
	StatusTimeout time.Duration
	// PassTimeout bounds one pass's work on the servers, switchover waits included. Default 2m.
	PassTimeout time.Duration
	// MaxLag is the lag within which a replica counts as in sync and may become primary by switchover.
	// Default 10s.
	MaxLag time.Duration
	// ReplicaConnectRetry is how long a replica's receiver waits between reconnection attempts. Default 10s.
	ReplicaConnectRetry time.Duration
}

func (t Timing) withDefaults() Timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.PollInterval, time.Second)
	def(&t.BusyInterval, 500*time.Millisecond)
	def(&t.StatusTimeout, 2*time.Second)
	def(&t.PassTimeout, 2*time.Minute)
	def(&t.MaxLag, 10*time.Second)
	def(&t.ReplicaConnectRetry, 10*time.Second)
	return t
}

// scope is what one pass works on.
type scope struct {
	// key names the StatefulSet.
	key types.NamespacedName
	sts *appsv1.StatefulSet
	// pods are the StatefulSet's Pods by ordinal, nil where a Pod does not exist.
	pods []*corev1.Pod
	// cm is the report ConfigMap as it is in the API server (nil when there is none), kept current by this
	// pass's writes.
	cm *corev1.ConfigMap
	// rec is the engine's record: read from cm, replaced by every save.
	rec clustering.Record
	// recErr is why the record in cm cannot be read; the pass then leaves it as it is, for a human to see.
	recErr error
	// prev is the report published before this pass.
	prev *v1alpha1.ReplicationReport
	// obs is what the pass read of each server, by ordinal; nil when it read none.
	obs []clustering.Observation
	// creds are the database's passwords, once the pass has read them.
	creds *credentials
}

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;create;patch;delete
// +kubebuilder:rbac:groups="",resources=endpoints,verbs=get;delete

// Reconcile is one pass over one StatefulSet.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, sts); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !managed(sts) || sts.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	s, err := r.load(ctx, sts)
	if err != nil {
		return ctrl.Result{}, err
	}

	restore, err := r.restoreState(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	outcomes, err := r.jobPods(ctx, s, render.ComponentBackup)
	if err != nil {
		return ctrl.Result{}, err
	}
	var rep v1alpha1.ReplicationReport
	var changed, planFailed bool
	if holdForRestore(s, restore) {
		// No server becomes writable before the restore has loaded the backup into ordinal 0.
		rep = restoringReport(s.prev, restore)
	} else {
		rep, changed, planFailed = r.pass(ctx, s)
	}
	var prevBackups *v1alpha1.MemberBackups
	if s.prev != nil {
		prevBackups = s.prev.Backups
	}
	rep.Backups, rep.Restore = backups(prevBackups, outcomes), restore
	rep.PrimaryEndpoints = true
	primary := labelledPrimary(s.pods, rep, planFailed)
	rep.Archive = r.archive(ctx, s, &rep, primary)

	// The primary's endpoints, the labels, then the report: the report is the last word of a pass, and a
	// failure before it leaves the previous report in place to be rewritten by the next pass. The endpoints
	// come first because kube-proxy syncs every Service at once, at most once a second: a change of the
	// replicas' Service (its label changes) synced first would hold back the one clients of the primary wait for.
	var errs []error
	if err := r.reconcilePrimaryEndpoints(ctx, s, primary); err != nil {
		errs = append(errs, err)
	}
	if err := r.reconcileRoleLabels(ctx, s, rep, planFailed); err != nil {
		errs = append(errs, err)
	}
	if err := r.writeConfigMap(ctx, s, &rep); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		log.Error(err, "Failed to publish the pass", "statefulSet", klog.KObj(sts))
		return ctrl.Result{RequeueAfter: r.BusyInterval}, nil
	}
	return ctrl.Result{RequeueAfter: r.nextPass(rep.Decision.Kind, changed, planFailed)}, nil
}

// nextPass is how soon a set is looked at again after a pass that decided kind.
func (t Timing) nextPass(kind string, changed, planFailed bool) time.Duration {
	switch {
	case !planFailed && kind == string(clustering.FailoverStarted):
		// The receivers are stopped and what each replica received is final: the pass that chooses the new
		// primary reads everything again at once, the lost primary included (a frozen one is still given its
		// StatusTimeout), and waiting before it would only add to the time without a writable primary.
		// RequeueAfter must be positive to be a requeue that resets the rate limiter.
		return time.Nanosecond
	case changed || planFailed:
		return t.BusyInterval
	}
	return t.PollInterval
}

// holdForRestore tells a set that must wait for its restore Job: one that has one, has no primary yet (after
// the bootstrap the restore no longer matters) and whose Job has not succeeded.
func holdForRestore(s *scope, restore *v1alpha1.MemberRestore) bool {
	if restore == nil || restore.Phase == v1alpha1.RestoreSucceeded {
		return false
	}
	rec, err := readRecord(s.cm)
	return err == nil && rec.Primary == nil
}

// restoringReport is the report of a set that waits for its restore: no server was looked at.
func restoringReport(prev *v1alpha1.ReplicationReport, restore *v1alpha1.MemberRestore) v1alpha1.ReplicationReport {
	rep := v1alpha1.ReplicationReport{Decision: v1alpha1.ReplicationDecision{Kind: kindRestoring,
		Reason: "no server is made writable until the restore Job has loaded the backup into ordinal 0"}}
	if restore.Phase == v1alpha1.RestoreFailed {
		rep.LastError = "the restore failed: " + restore.Reason
	}
	if prev != nil {
		rep.LastTransition = prev.LastTransition
	}
	return rep
}

// load reads the pass's inputs from the API: the set's Pods and its report ConfigMap, record and report.
func (r *Reconciler) load(ctx context.Context, sts *appsv1.StatefulSet) (*scope, error) {
	s := &scope{key: client.ObjectKeyFromObject(sts), sts: sts}
	for i := range instances(sts) {
		pod := &corev1.Pod{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: sts.Namespace, Name: podName(sts, i)}, pod)
		switch {
		case apierrors.IsNotFound(err):
			pod = nil
		case err != nil:
			return nil, fmt.Errorf("failed to get Pod %s/%s: %w", sts.Namespace, podName(sts, i), err)
		case !metav1.IsControlledBy(pod, sts):
			pod = nil // a Pod of that name that this StatefulSet does not own is not one of its instances
		}
		s.pods = append(s.pods, pod)
	}
	cm, err := r.loadConfigMap(ctx, s.key)
	if err != nil {
		return nil, err
	}
	s.cm, s.prev = cm, readReport(cm)
	return s, nil
}

// pass observes the servers, decides and executes, and returns the report; changed tells whether the plan
// had steps (so the next pass comes soon), planFailed whether they failed. A set that cannot be observed at
// all is reported as such, with the reason.
func (r *Reconciler) pass(ctx context.Context, s *scope) (rep v1alpha1.ReplicationReport, changed, planFailed bool) {
	log := ctrl.LoggerFrom(ctx)
	in, err := r.passInputs(ctx, s)
	if err != nil {
		return unobservedReport(s.prev, err), false, true
	}
	d, targets, creds, flavor, seeds := in.desired, in.targets, in.creds, in.flavor, in.seeds
	s.creds = &creds
	dsns := make([]string, len(targets))
	for i, t := range targets {
		if t.err == nil {
			dsns[i] = dsn(v1alpha1.AdminUser, creds.admin, t.addr, r.StatusTimeout)
		}
	}
	servers, openErrs := r.pools.servers(s.key, flavor, dsns)
	ops := &clustering.ServerOps{
		Servers:             servers,
		ReplicationUser:     v1alpha1.ReplicationUser,
		ReplicationPassword: creds.replication,
		ConnectRetry:        r.ReplicaConnectRetry,
		Guard:               r.lease.guard(),
		Save: func(ctx context.Context, rec clustering.Record) error {
			rec.LeaseTransitions = r.lease.term()
			return r.saveRecord(ctx, s, rec)
		},
		SeedWith: func(ctx context.Context, i, source int) error {
			return r.seed(ctx, s, seeds, i, source)
		},
	}
	var rebuilds []v1alpha1.ServerRebuild
	var plan clustering.Plan
	ops.RebuildWith = func(ctx context.Context, i int, executed mysql.GTIDSet) error {
		rb, err := r.rebuild(ctx, s, flavor, targets[i], creds, plan, i, executed)
		if err == nil {
			rebuilds = append(rebuilds, rb)
		}
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, r.PassTimeout)
	defer cancel()
	obs := clustering.Observe(ctx, ops, d.Instances(), s.rec.PrimaryIndex(), r.StatusTimeout)
	// Say why an instance has no server rather than "no server for instance i".
	for i := range obs {
		if err := errors.Join(targets[i].err, openErrs[i]); err != nil {
			obs[i] = clustering.Observation{Err: err}
		}
		obs[i].Unhealthy = targets[i].unhealthy
	}
	s.obs = obs
	provisioned := r.provisionAccounts(ctx, flavor, targets, obs, creds)
	seeding(obs, seeds)
	plan = clustering.Decide(d, s.rec, obs)
	execErr := clustering.Execute(ctx, ops, plan.Steps)
	r.countPass(s.key)
	passesTotal.WithLabelValues(string(plan.Decision.Kind)).Inc()
	if plan.Decision.Kind != clustering.Steady || execErr != nil {
		log.Info("Replication pass", "statefulSet", klog.KObj(s.sts), "decision", plan.Decision.String(),
			"steps", len(plan.Steps), "error", execErr)
	}
	rep = buildReport(s.sts, plan, execErr, s.prev)
	seedOutcomes(&rep, plan, seeds)
	rep.Rebuilds = recentRebuilds(rebuilds, s.prev)
	asyncCommits(&rep, plan, obs)
	asyncWindow(&rep, plan, s.prev, metav1.Now())
	if in.requestErr != nil && rep.LastError == "" {
		rep.LastError = in.requestErr.Error()
	}
	return rep, plan.Requeue() || provisioned, execErr != nil
}

// inputs is what a pass knows before it reads any server: the set it wants, where each server is, the passwords,
// the engine's flavor and the seeds under way; requestErr is a requested primary that could not be read (reported,
// not fatal).
type inputs struct {
	desired    clustering.Desired
	targets    []target
	creds      credentials
	flavor     mysql.Flavor
	seeds      map[int]seedState
	requestErr error
}

// passInputs reads a pass's inputs: the record, the contract, the credentials Secret and the seed Jobs. An error
// means the set cannot be observed at all.
func (r *Reconciler) passInputs(ctx context.Context, s *scope) (*inputs, error) {
	rec, err := readRecord(s.cm)
	if err != nil {
		s.recErr = err
		return nil, err
	}
	s.rec = rec
	d, targets, err := desiredSet(s.sts, s.pods, r.Resolve, r.MaxLag, r.NodeName)
	if err != nil {
		return nil, err
	}
	in := &inputs{desired: d, targets: targets}
	if in.creds, err = r.credentials(ctx, s.sts); err != nil {
		return nil, err
	}
	in.desired.Primary, in.requestErr = requestedPrimary(s.sts)
	if in.flavor, err = mysql.FlavorFor(d.Engine); err != nil {
		return nil, err
	}
	if in.seeds, err = r.seedStates(ctx, s); err != nil {
		return nil, err
	}
	return in, nil
}

// credentials are the passwords a pass uses, from the MySQLCluster's credentials Secret.
type credentials struct {
	// admin is the password of v1alpha1.AdminUser, the account the controller works with.
	admin string
	// replication is the password of v1alpha1.ReplicationUser, the account replicas replicate with.
	replication string
	// root is root's, used only to create those two accounts on a server that lacks them, and to empty a
	// server that is rebuilt.
	root string
	// init is the rendered init script (v1alpha1.InitScriptKey), run again on a server that is rebuilt.
	init string
}

// credentials reads the passwords from the credentials Secret (the one the StatefulSet's contract names, see
// readContract), live: Secrets are not cached, so that the controller needs only get on them.
func (r *Reconciler) credentials(ctx context.Context, sts *appsv1.StatefulSet) (credentials, error) {
	k, err := readContract(sts)
	if err != nil {
		return credentials{}, err
	}
	name := k.credentialsSecret
	sec := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: sts.Namespace, Name: name}, sec); err != nil {
		return credentials{}, fmt.Errorf("failed to read the credentials Secret %s/%s: %w", sts.Namespace, name, err)
	}
	c := credentials{
		admin:       string(sec.Data[v1alpha1.AdminPasswordKey]),
		replication: string(sec.Data[v1alpha1.ReplicationPasswordKey]),
		root:        string(sec.Data[v1alpha1.RootPasswordKey]),
		init:        string(sec.Data[v1alpha1.InitScriptKey]),
	}
	for key, pw := range map[string]string{v1alpha1.AdminPasswordKey: c.admin,
		v1alpha1.ReplicationPasswordKey: c.replication} {
		if pw == "" {
			return credentials{}, fmt.Errorf("the credentials Secret %s/%s has no %q", sts.Namespace, name, key)
		}
	}
	return c, nil
}

// provisionAccounts creates the admin and replication accounts, as root and with the binary log off, on every
// instance that refused the admin login: a server whose data directory was initialised without the rendered
// init script (by an earlier release, or an image that does not run /docker-entrypoint-initdb.d). Such an
// instance stays unreachable for this pass; it tells whether it provisioned any, so that the next pass comes
// soon. A MySQL server already fenced with super_read_only refuses it and stays unreachable, with the reason.
func (r *Reconciler) provisionAccounts(ctx context.Context, f mysql.Flavor, targets []target,
	obs []clustering.Observation, c credentials) bool {
	log := ctrl.LoggerFrom(ctx)
	done := false
	for i, o := range obs {
		if o.Reachable() || !accessDenied(o.Err) || c.root == "" || targets[i].err != nil {
			continue
		}
		err := func() error {
			sctx, cancel := context.WithTimeout(ctx, r.StatusTimeout)
			defer cancel()
			root, err := mysql.Open(f, dsn("root", c.root, targets[i].addr, r.StatusTimeout))
			if err != nil {
				return err
			}
			defer func() { _ = root.Close() }()
			srv := root.Guarded(r.lease.guard())
			for _, u := range []mysql.User{
				{Kind: mysql.AdminUser, Name: v1alpha1.AdminUser, Password: c.admin},
				{Kind: mysql.ReplicationUser, Name: v1alpha1.ReplicationUser, Password: c.replication},
			} {
				if err := srv.EnsureUserUnlogged(sctx, u); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			obs[i].Err = fmt.Errorf("%w; creating the %s account as root failed too: %w", o.Err, v1alpha1.AdminUser, err)
			continue
		}
		log.Info("Created the admin and replication accounts", "pod", klog.KObj(targets[i].pod))
		done = true
	}
	return done
}

// accessDenied tells a refused login (MySQL error 1045) from a server that did not answer.
func accessDenied(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1045
}

// saveRecord is the plan's save-record step: the record is durable in the ConfigMap before the plan goes on to
// make a new primary writable.
func (r *Reconciler) saveRecord(ctx context.Context, s *scope, rec clustering.Record) error {
	prev := s.rec
	s.rec = rec
	if err := r.writeConfigMap(ctx, s, nil); err != nil {
		s.rec = prev
		return err
	}
	return nil
}

// writeConfigMap writes the report ConfigMap with the scope's record and rep (nil keeps the report it holds),
// and only when that changes it. Updates carry the resourceVersion the pass read: a concurrent writer makes
// the write fail rather than be overwritten, and the next pass reads afresh.
func (r *Reconciler) writeConfigMap(ctx context.Context, s *scope, rep *v1alpha1.ReplicationReport) error {
	desired, err := s.desiredConfigMap(rep)
	if err != nil {
		return err
	}
	if s.cm == nil {
		if err := r.Client.Create(ctx, desired); err != nil {
			r.distrust(s.key)
			return fmt.Errorf("failed to create ConfigMap %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		s.cm = desired
		r.trust(s.key, desired.ResourceVersion)
		return nil
	}
	next := merged(s.cm, desired)
	if equality.Semantic.DeepEqual(next, s.cm) {
		return nil
	}
	if err := r.Client.Update(ctx, next); err != nil {
		r.distrust(s.key)
		return fmt.Errorf("failed to update ConfigMap %s/%s: %w", next.Namespace, next.Name, err)
	}
	s.cm = next
	r.trust(s.key, next.ResourceVersion)
	return nil
}

// desiredConfigMap is the report ConfigMap the pass wants. A record that could not be read is left out, so
// that merging keeps the live one: overwriting it with an empty record would make the engine forget the
// primary.
func (s *scope) desiredConfigMap(rep *v1alpha1.ReplicationReport) (*corev1.ConfigMap, error) {
	cm, err := reportConfigMap(s.sts, rep, s.rec)
	if err != nil {
		return nil, err
	}
	if s.recErr != nil {
		delete(cm.Data, v1alpha1.ReplicationRecordKey)
	}
	return cm, nil
}

// loadConfigMap returns the report ConfigMap, nil when there is none. It reads the cache when the cache holds
// what this controller last wrote or read, and the API server otherwise (after its own write the cache lags;
// after a restart or a failed write nothing is known). An idle set's passes thus make no request at all.
func (r *Reconciler) loadConfigMap(ctx context.Context, key types.NamespacedName) (*corev1.ConfigMap, error) {
	name := types.NamespacedName{Namespace: key.Namespace, Name: v1alpha1.ReplicationReportName(key.Name)}
	cached := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, name, cached)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("failed to get ConfigMap %s: %w", name, err)
	}
	cachedRV := ""
	if err == nil {
		cachedRV = cached.ResourceVersion
	}
	r.mu.Lock()
	known, ok := r.written[key]
	r.mu.Unlock()
	if ok && known == cachedRV {
		if cachedRV == "" {
			return nil, nil
		}
		return cached, nil
	}
	live := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, name, live); err != nil {
		if apierrors.IsNotFound(err) {
			r.trust(key, "")
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get ConfigMap %s: %w", name, err)
	}
	r.trust(key, live.ResourceVersion)
	return live, nil
}

func (r *Reconciler) trust(key types.NamespacedName, rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[types.NamespacedName]string{}
	}
	r.written[key] = rv
}

func (r *Reconciler) distrust(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, key)
}

// reconcileRoleLabels sets or removes each Pod's role label with a merge patch, only where it differs, one at a
// time in roleLabelChanges' order: role=primary leaves a Pod before it goes to another. If taking it away
// fails, no Pod gets it in this pass.
func (r *Reconciler) reconcileRoleLabels(ctx context.Context, s *scope, rep v1alpha1.ReplicationReport,
	planFailed bool) error {
	var errs []error
	demoted := true
	for _, c := range roleLabelChanges(s.pods, rep, planFailed) {
		// The labels steer the application's writes: a controller that may have lost its Lease, and whose
		// report may be stale, must not move them.
		if err := r.lease.Check(); err != nil {
			return fmt.Errorf("failed to label Pod %s/%s: %w", s.sts.Namespace, c.Pod, err)
		}
		if c.Value == v1alpha1.RolePrimary && !demoted {
			errs = append(errs, fmt.Errorf("not labelling Pod %s/%s %s=%s: another Pod may still carry it",
				s.sts.Namespace, c.Pod, v1alpha1.RoleLabel, c.Value))
			continue
		}
		var value any // nil removes the label
		if c.Value != "" {
			value = c.Value
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"labels": map[string]any{v1alpha1.RoleLabel: value}}})
		if err != nil {
			return err
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.sts.Namespace, Name: c.Pod}}
		if err := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, body)); err != nil &&
			!apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to label Pod %s/%s %s=%q: %w", s.sts.Namespace, c.Pod,
				v1alpha1.RoleLabel, c.Value, err))
			demoted = demoted && !c.Demotes
		}
	}
	return errors.Join(errs...)
}

// forget drops what the controller holds for a set that is gone or no longer managed.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.pools.forget(key)
	if r.archives != nil {
		r.archives.stop(key)
	}
	r.distrust(key)
	for _, name := range primaryServiceNames(key.Name) {
		r.forgetSlice(types.NamespacedName{Namespace: key.Namespace, Name: name})
	}
}

func (r *Reconciler) countPass(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passes == nil {
		r.passes = map[types.NamespacedName]int{}
	}
	r.passes[key]++
}

// passCount is how many passes reached the servers of a set.
func (r *Reconciler) passCount(key types.NamespacedName) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passes[key]
}
