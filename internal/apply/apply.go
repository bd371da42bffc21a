// Package apply writes the objects a MySQLCluster needs into one member with server-side apply, and keeps a
// converged member free of requests: it skips an apply whose owned fields already hold what is wanted, remembers
// which object versions were verified, shares concurrent applies of one object, and tells the echoes of its own
// writes from anyone else's. It also refuses to write over an object that another owner holds (ownership is by
// the hub object's UID label).
package apply

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"golang.org/x/sync/singleflight"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Actions an apply takes, as reported in status.members[].plan while paused.
const (
	ActionCreate    = "Create"
	ActionUpdate    = "Update"
	ActionUnchanged = "Unchanged"
	// ActionAdopt takes over an object the adopt annotation names.
	ActionAdopt = "Adopt"
	// ActionConflict is an object with the needed name that belongs to someone else; nothing is written.
	ActionConflict = "Conflict"
)

// Applier writes the rendered objects into one member with server-side apply, under one field manager. It
// first reads the object from the member's cache: when its version is one already verified (or written) for the
// same desired object, it writes nothing. Otherwise it checks that the object is this MySQLCluster's (its UID
// label): an object someone else owns is a conflict and is not written. When the fields mysqlfleet owns already
// equal the desired configuration, it writes nothing either. Both checks read the cached object, which keeps
// mysqlfleet's managedFields entry; only an object the cache lacks (it holds only what mysqlfleet labels) is read
// from the member's API server. So a converged fleet makes no API requests, and neither does a manager that
// checks a converged member it has just started to cache.
type Applier struct {
	// Client reads from the member's cache (and writes what is not an apply); Reader reads from its API server;
	// Writer sends the applies.
	Client client.Client
	Reader client.Reader
	Writer *Writer
	// DryRun computes the action without writing (paused MySQLClusters).
	DryRun bool
	Member string
	// UID is the MySQLCluster's; Adopt holds the UIDs whose objects it may take over (see Claim).
	UID   types.UID
	Adopt map[string]bool
	// Memory is what the manager remembers across passes; shared by every Applier of one manager.
	Memory *Memory
}

// Memory is what one manager remembers of its member writes across passes.
type Memory struct {
	// echoes records each write so that its watch event is not taken for a change.
	echoes echoes
	// verified lets a pass skip the Extract of an object whose version already held what it wants.
	verified verified
	// shared lets concurrent passes that want the same object in the same state share one apply: a Namespace
	// is wanted by every MySQLCluster in it, and many of them are reconciled at once.
	shared singleflight.Group
}

// Filter passes a watch event of a member object on (calls pass) unless it is the echo of this manager's own
// write.
func (m *Memory) Filter(member string, obj client.Object, pass func()) {
	m.echoes.filter(member, obj, pass)
}

// Forget drops what is known of a member object that was deleted.
func (m *Memory) Forget(member string, obj client.Object) { m.verified.forget(keyOf(member, obj)) }

// ForgetMember drops what is known of every object in a member that left the registry.
func (m *Memory) ForgetMember(member string) { m.verified.forgetMember(member) }

// FromWatchCache reads from the API server's watch cache (resourceVersion 0) rather than from etcd: for a look
// at whether an object exists, which may be a moment old without harm, at a fraction of the server's cost.
var FromWatchCache = &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}}

// Result is what one apply did (or, in dry run, would do).
type Result struct {
	// Kind and Name of the object.
	Kind, Name string
	// Action is one of the Action constants.
	Action string
	// Adopted names the object taken over and its former owner, for ActionAdopt.
	Adopted *v1alpha1.ObjectRef
}

// Apply applies one object and returns what it did (or, in dry run, would do). An object with the name that
// another owner holds is not written: the error is a *ConflictError and the action ActionConflict.
func (a Applier) Apply(ctx context.Context, obj runtime.ApplyConfiguration) (Result, error) {
	if a.Writer == nil {
		return Result{}, errors.New("the applier has no writer")
	}
	w := a.Writer.cs
	switch ac := obj.(type) {
	case *corev1ac.NamespaceApplyConfiguration:
		return named("Namespace", *ac.Name)(applyTyped(ctx, a, ac, &corev1.Namespace{}, *ac.Name, "", corev1ac.ExtractNamespace,
			w.CoreV1().Namespaces().Apply))
	case *corev1ac.SecretApplyConfiguration:
		return named("Secret", *ac.Name)(applyTyped(ctx, a, ac, &corev1.Secret{}, *ac.Name, *ac.Namespace, corev1ac.ExtractSecret,
			w.CoreV1().Secrets(*ac.Namespace).Apply))
	case *corev1ac.ConfigMapApplyConfiguration:
		return named("ConfigMap", *ac.Name)(applyTyped(ctx, a, ac, &corev1.ConfigMap{}, *ac.Name, *ac.Namespace, corev1ac.ExtractConfigMap,
			w.CoreV1().ConfigMaps(*ac.Namespace).Apply))
	case *corev1ac.ServiceApplyConfiguration:
		return named("Service", *ac.Name)(applyTyped(ctx, a, ac, &corev1.Service{}, *ac.Name, *ac.Namespace, corev1ac.ExtractService,
			w.CoreV1().Services(*ac.Namespace).Apply))
	case *corev1ac.PersistentVolumeClaimApplyConfiguration:
		return named("PersistentVolumeClaim", *ac.Name)(applyTyped(ctx, a, ac, &corev1.PersistentVolumeClaim{}, *ac.Name, *ac.Namespace,
			corev1ac.ExtractPersistentVolumeClaim, w.CoreV1().PersistentVolumeClaims(*ac.Namespace).Apply))
	case *appsv1ac.StatefulSetApplyConfiguration:
		return named("StatefulSet", *ac.Name)(applyTyped(ctx, a, ac, &appsv1.StatefulSet{}, *ac.Name, *ac.Namespace, appsv1ac.ExtractStatefulSet,
			w.AppsV1().StatefulSets(*ac.Namespace).Apply))
	case *policyv1ac.PodDisruptionBudgetApplyConfiguration:
		return named("PodDisruptionBudget", *ac.Name)(applyTyped(ctx, a, ac, &policyv1.PodDisruptionBudget{}, *ac.Name, *ac.Namespace,
			policyv1ac.ExtractPodDisruptionBudget, w.PolicyV1().PodDisruptionBudgets(*ac.Namespace).Apply))
	case *batchv1ac.CronJobApplyConfiguration:
		return named("CronJob", *ac.Name)(applyTyped(ctx, a, ac, &batchv1.CronJob{}, *ac.Name, *ac.Namespace, batchv1ac.ExtractCronJob,
			w.BatchV1().CronJobs(*ac.Namespace).Apply))
	case *batchv1ac.JobApplyConfiguration:
		return named("Job", *ac.Name)(applyTyped(ctx, a, ac, &batchv1.Job{}, *ac.Name, *ac.Namespace, batchv1ac.ExtractJob,
			w.BatchV1().Jobs(*ac.Namespace).Apply))
	}
	return Result{}, fmt.Errorf("no apply support for %T", obj)
}

// AppliedAnnotation holds, on every object mysqlfleet applies, the digest of what it applied (the desired object
// without this annotation). With managedFields it lets a manager that meets an object version for the first time
// (after a restart, or in a member it took over from another replica) verify it without comparing it field by
// field: see heldSinceApplied.
const AppliedAnnotation = "mysqlfleet.io/applied"

// heldSinceApplied tells whether the object holds what the digest describes, from its metadata alone: its
// AppliedAnnotation is the digest, and no field manager but mysqlfleet's apply has written the object itself
// (status aside) since that apply. Every write records its manager and time in managedFields, and mysqlfleet
// applies with force, so at its last apply every field it owns held what it applied; a later write by anyone
// else shows as an entry newer than the apply's. managedFields times have a resolution of a second: an entry
// of the same second as the apply may be later, and the answer is then no (the caller compares field by field).
func heldSinceApplied(obj client.Object, digest uint64) bool {
	if digest == 0 || obj.GetAnnotations()[AppliedAnnotation] != strconv.FormatUint(digest, 16) {
		return false
	}
	var applied *metav1.Time
	for _, f := range obj.GetManagedFields() {
		if f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" {
			applied = f.Time
		}
	}
	if applied == nil {
		return false
	}
	for _, f := range obj.GetManagedFields() {
		if f.Subresource != "" || f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			continue
		}
		if f.Time == nil || !f.Time.Before(applied) {
			return false
		}
	}
	return true
}

// setApplied sets the AppliedAnnotation of an apply configuration, or with "" removes it.
func setApplied(ac any, digest string) {
	v := reflect.ValueOf(ac)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	f := v.Elem().FieldByName("ObjectMetaApplyConfiguration")
	if !f.IsValid() {
		return
	}
	if f.IsNil() {
		if digest == "" {
			return
		}
		f.Set(reflect.ValueOf(&metav1ac.ObjectMetaApplyConfiguration{}))
	}
	meta := f.Interface().(*metav1ac.ObjectMetaApplyConfiguration)
	if digest != "" {
		meta.WithAnnotations(map[string]string{AppliedAnnotation: digest})
		return
	}
	delete(meta.Annotations, AppliedAnnotation)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}

// appliedBy tells whether the object carries the field manager's apply entry in managedFields.
func appliedBy(obj client.Object, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" {
			return true
		}
	}
	return false
}

// named puts the kind and name into an apply's result.
func named(kind, name string) func(Result, error) (Result, error) {
	return func(r Result, err error) (Result, error) {
		r.Kind, r.Name = kind, name
		return r, err
	}
}

// writeFunc is a typed client's Apply.
type writeFunc[O client.Object, AC runtime.ApplyConfiguration] func(context.Context, AC, metav1.ApplyOptions) (O, error)

func applyTyped[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a Applier, desired AC, live O,
	name, namespace string, extract func(O, string) (AC, error), write writeFunc[O, AC]) (Result, error) {
	key := objectKey{a.Member, reflect.TypeOf(live).Elem().Name(), namespace, name}
	digest := digestOf(desired)
	if a.DryRun || digest == 0 {
		return applyOne(ctx, a, desired, live, key, digest, extract, write)
	}
	out, err, _ := a.Memory.shared.Do(fmt.Sprintf("%s/%s/%s/%s/%x", key.member, key.kind, key.namespace, key.name, digest), func() (any, error) {
		return applyOne(ctx, a, desired, live, key, digest, extract, write)
	})
	return out.(Result), err
}

// applyOne is applyTyped for one caller: read the object, check whose it is, compare, apply if needed.
func applyOne[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a Applier, desired AC, live O,
	key objectKey, digest uint64, extract func(O, string) (AC, error), write writeFunc[O, AC]) (Result, error) {
	nn := client.ObjectKey{Namespace: key.namespace, Name: key.name}
	err := a.Client.Get(ctx, nn, live)
	cached := err == nil
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return Result{}, err
	case cached && a.Memory.verified.holds(key, live.GetResourceVersion(), digest):
		return Result{Action: ActionUnchanged}, nil
	case cached && !a.DryRun && heldSinceApplied(live, digest):
		// Applied as wanted and written by nobody since: verified without comparing field by field.
		a.Memory.verified.set(key, live.GetResourceVersion(), digest)
		return Result{Action: ActionUnchanged}, nil
	}
	// The member cache keeps mysqlfleet's own apply entry of managedFields (and only that one), so a cached
	// object says which of its fields are ours: a version not verified yet (after a restart, or in a member this
	// manager just took over) is checked without a request. The cache holds only objects labelled as
	// mysqlfleet's, so an object someone else made with this name is absent from it, and an apply would take it
	// over: that one, and a cached one without our entry, is read from the API server. An object the cache does
	// not have is mostly one about to be created: that look is served from the API server's watch cache, which
	// costs it no etcd read.
	out := Result{Action: ActionCreate}
	if !cached || !appliedBy(live, v1alpha1.FieldManager) {
		var opts []client.GetOption
		if !cached {
			opts = append(opts, FromWatchCache)
		}
		err = a.Reader.Get(ctx, nn, live, opts...)
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return Result{}, err
	default:
		if key.kind != "Namespace" { // shared by every MySQLCluster of a namespace; never deleted
			from, err := Claim(live, key.kind, a.UID, a.Adopt)
			if err != nil {
				return Result{Action: ActionConflict}, err
			}
			out.Adopted = from
		}
		owned, err := extract(live, v1alpha1.FieldManager)
		if err != nil {
			return Result{}, err
		}
		// The digest of what was applied is no part of what is wanted: an object applied by an earlier release,
		// without it, that holds what is wanted needs no write.
		setApplied(owned, "")
		if out.Adopted == nil && equality.Semantic.DeepEqual(owned, desired) {
			a.Memory.verified.set(key, live.GetResourceVersion(), digest)
			return Result{Action: ActionUnchanged}, nil
		}
		out.Action = ActionUpdate
		if out.Adopted != nil {
			out.Action = ActionAdopt
		}
	}
	if a.DryRun {
		return out, nil
	}
	setApplied(desired, strconv.FormatUint(digest, 16))
	a.Memory.echoes.begin(key)
	applied, err := write(ctx, desired, metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: true})
	written := ""
	if err == nil {
		written = applied.GetResourceVersion()
	}
	a.Memory.echoes.end(key, written)
	// What this apply wrote is what was wanted: the next pass needs no Extract while it stays.
	a.Memory.verified.set(key, written, digest)
	return out, err
}
