// Package apply writes the objects a MySQLCluster needs into one member with server-side apply, and keeps a
// converged member free of requests: it skips an apply whose owned fields already hold what is wanted, remembers
// which object versions were verified, shares concurrent applies of one object, and tells the echoes of its own
// writes from anyone else's. It also refuses to write over an object that another owner holds (ownership is by
// the hub object's UID label).
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/util/csaupgrade"
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
// same desired object, it writes nothing. An object the cache lacks is created with a POST, which makes it only
// where no object has the name. Otherwise it checks that the object is this MySQLCluster's (its UID label): an
// object someone else owns is a conflict and is not written. When the fields mysqlfleet owns already equal the
// desired configuration, it writes nothing either. Both checks read the cached object, which keeps mysqlfleet's
// managedFields entry; only an object a create found taken, or a cached one mysqlfleet did not write, is read
// from the member's API server. So a convergence sends one request per object, a converged fleet none, and
// neither does a manager that checks a converged member it has just started to cache.
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
	// shared lets concurrent passes that want the same Namespace in the same state share one apply: a Namespace
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
		return applyTyped(ctx, a, ac, *ac.Name, "", corev1ac.ExtractNamespace, w.CoreV1().Namespaces())
	case *corev1ac.SecretApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, corev1ac.ExtractSecret, w.CoreV1().Secrets(*ac.Namespace))
	case *corev1ac.ConfigMapApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, corev1ac.ExtractConfigMap, w.CoreV1().ConfigMaps(*ac.Namespace))
	case *corev1ac.ServiceApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, corev1ac.ExtractService, w.CoreV1().Services(*ac.Namespace))
	case *corev1ac.PersistentVolumeClaimApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, corev1ac.ExtractPersistentVolumeClaim,
			w.CoreV1().PersistentVolumeClaims(*ac.Namespace))
	case *appsv1ac.StatefulSetApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, appsv1ac.ExtractStatefulSet, w.AppsV1().StatefulSets(*ac.Namespace))
	case *policyv1ac.PodDisruptionBudgetApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, policyv1ac.ExtractPodDisruptionBudget,
			w.PolicyV1().PodDisruptionBudgets(*ac.Namespace))
	case *batchv1ac.CronJobApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, batchv1ac.ExtractCronJob, w.BatchV1().CronJobs(*ac.Namespace))
	case *batchv1ac.JobApplyConfiguration:
		return applyTyped(ctx, a, ac, *ac.Name, *ac.Namespace, batchv1ac.ExtractJob, w.BatchV1().Jobs(*ac.Namespace))
	}
	return Result{}, fmt.Errorf("no apply support for %T", obj)
}

// AppliedAnnotation holds, on every object mysqlfleet applies, the digest of what it applied (the desired object
// without this annotation). With managedFields it lets a manager that meets an object version for the first time
// (after a restart, or in a member it took over from another replica) verify it without comparing it field by
// field: see heldSinceApplied.
const AppliedAnnotation = "mysqlfleet.io/applied"

// heldSinceApplied tells whether the object holds what the digest describes, from its metadata alone: its
// AppliedAnnotation is the digest, and no field manager but mysqlfleet's own entries (its apply, or the create
// that made the object) has written the object itself (status aside) since. Every write records its manager and
// time in managedFields, and mysqlfleet creates only what it wants and applies with force, so at its last create
// or apply every field it owns held what it wrote; a later write by anyone else shows as an entry newer than
// that. managedFields times have a resolution of a second: an entry of the same second as mysqlfleet's may be
// later, and the answer is then no (the caller compares field by field).
func heldSinceApplied(obj client.Object, digest uint64) bool {
	if digest == 0 || obj.GetAnnotations()[AppliedAnnotation] != strconv.FormatUint(digest, 16) {
		return false
	}
	var applied *metav1.Time
	for _, f := range obj.GetManagedFields() {
		if ours(f) && f.Time != nil && (applied == nil || applied.Before(f.Time)) {
			applied = f.Time
		}
	}
	if applied == nil {
		return false
	}
	for _, f := range obj.GetManagedFields() {
		if f.Subresource != "" || ours(f) {
			continue
		}
		if f.Time == nil || !f.Time.Before(applied) {
			return false
		}
	}
	return true
}

// ours tells whether a managedFields entry is mysqlfleet's apply or the create that made the object.
func ours(f metav1.ManagedFieldsEntry) bool {
	return f.Subresource == "" && (f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply ||
		f.Manager == v1alpha1.CreateFieldManager && f.Operation == metav1.ManagedFieldsOperationUpdate)
}

// createdBy tells whether the object carries the entry of mysqlfleet's create, whose fields move to its apply
// entry before it applies.
func createdBy(obj client.Object) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return ours(f) && f.Manager == v1alpha1.CreateFieldManager
	})
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

// writtenBy tells whether mysqlfleet created or applied the object (see ours).
func writtenBy(obj client.Object) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), ours)
}

// typedClient is one kind's typed client, as the applier uses it.
type typedClient[O client.Object, AC runtime.ApplyConfiguration] interface {
	Create(context.Context, O, metav1.CreateOptions) (O, error)
	Apply(context.Context, AC, metav1.ApplyOptions) (O, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (O, error)
}

func applyTyped[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a Applier, desired AC,
	name, namespace string, extract func(O, string) (AC, error), c typedClient[O, AC]) (Result, error) {
	live := newObject[O]()
	key := objectKey{a.Member, reflect.TypeOf(live).Elem().Name(), namespace, name}
	digest := digestOf(desired)
	var r Result
	var err error
	if a.DryRun || digest == 0 || key.kind != "Namespace" {
		// Only a Namespace is wanted by several MySQLClusters; every other object by one, whose passes never run
		// at once. The group's one mutex, taken twice by every apply, queued the passes of a busy replica behind
		// one another (a 20-member takeover's profile showed it, 2026-11-28).
		r, err = applyOne(ctx, a, desired, live, key, digest, extract, c)
	} else {
		var out any
		out, err, _ = a.Memory.shared.Do(fmt.Sprintf("%s/%s/%s/%s/%x", key.member, key.kind, key.namespace, key.name, digest), func() (any, error) {
			return applyOne(ctx, a, desired, live, key, digest, extract, c)
		})
		r = out.(Result)
	}
	r.Kind, r.Name = key.kind, name
	return r, err
}

// newObject returns a new empty object of a pointer type such as *corev1.Secret.
func newObject[O client.Object]() O {
	var o O
	return reflect.New(reflect.TypeOf(o).Elem()).Interface().(O)
}

// applyOne is applyTyped for one caller: read the object, check whose it is, compare, create or apply if needed.
func applyOne[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a Applier, desired AC, live O,
	key objectKey, digest uint64, extract func(O, string) (AC, error), c typedClient[O, AC]) (Result, error) {
	nn := client.ObjectKey{Namespace: key.namespace, Name: key.name}
	err := a.Client.Get(ctx, nn, live)
	cached := err == nil
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return Result{}, err
	case cached && a.Memory.verified.holds(key, live.GetResourceVersion(), digest):
		return Result{Action: ActionUnchanged}, nil
	case cached && !a.DryRun && heldSinceApplied(live, digest):
		// Written as wanted and by nobody since: verified without comparing field by field.
		a.Memory.verified.set(key, live.GetResourceVersion(), digest)
		return Result{Action: ActionUnchanged}, nil
	}
	// The member cache keeps mysqlfleet's own apply entry of managedFields (and only that one), so a cached
	// object says which of its fields are ours: a version not verified yet (after a restart, or in a member this
	// manager just took over) is checked without a request. The cache holds only objects labelled as
	// mysqlfleet's, so an object someone else made with this name is absent from it. An object the cache lacks
	// is mostly one about to be created: it is created, which makes it only where no object has the name and so
	// takes nothing over, with no look first. Where one has the name (AlreadyExists), the create is refused
	// (Forbidden), or a cached object has no entry of mysqlfleet's, the object is read from the API server and
	// its owner checked. A dry run creates nothing: it looks, in the API server's watch cache, which costs the
	// server no etcd read.
	out := Result{Action: ActionCreate}
	read := false
	switch {
	case !cached && !a.DryRun:
		err = create(ctx, a, desired, key, digest, c)
		// Forbidden: a member credential confined to some namespaces may patch a Namespace it cannot create.
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
			return out, err
		}
		err, read = a.Reader.Get(ctx, nn, live), true
	case !cached:
		err = a.Reader.Get(ctx, nn, live, FromWatchCache)
	case !writtenBy(live):
		err, read = a.Reader.Get(ctx, nn, live), true
	}
	switch {
	case apierrors.IsNotFound(err): // gone since the create found it: the apply makes it
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
		if read && out.Adopted == nil && !a.DryRun && (a.Memory.verified.holds(key, live.GetResourceVersion(), digest) ||
			heldSinceApplied(live, digest)) {
			// The cache had not caught up with this manager's own create or apply.
			a.Memory.verified.set(key, live.GetResourceVersion(), digest)
			return Result{Action: ActionUnchanged}, nil
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
		if !a.DryRun && createdBy(live) {
			if err := moveCreatedFields(ctx, a, live, read, key, c); err != nil {
				return Result{}, err
			}
		}
	}
	if a.DryRun {
		return out, nil
	}
	setApplied(desired, strconv.FormatUint(digest, 16))
	written, err := echoed(a, key, func() (O, error) {
		return c.Apply(ctx, desired, metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: true})
	})
	// What this apply wrote is what was wanted: the next pass needs no Extract while it stays.
	a.Memory.verified.set(key, written, digest)
	return out, err
}

// create makes the object with a POST, as CreateFieldManager, carrying the digest of what it wanted: no GET
// first, and no object of another owner taken over (the answer is AlreadyExists). The body is the desired apply
// configuration as the typed object, sent in protobuf like the answer.
func create[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a Applier, desired AC, key objectKey,
	digest uint64, c typedClient[O, AC]) error {
	setApplied(desired, strconv.FormatUint(digest, 16))
	data, err := json.Marshal(desired)
	setApplied(desired, "") // what is wanted, for the comparison when the name is taken
	obj := newObject[O]()
	if err == nil {
		err = json.Unmarshal(data, obj)
	}
	if err != nil {
		return fmt.Errorf("encoding %s %s for its create: %w", key.kind, key.name, err)
	}
	written, err := echoed(a, key, func() (O, error) {
		return c.Create(ctx, obj, metav1.CreateOptions{FieldManager: v1alpha1.CreateFieldManager})
	})
	a.Memory.verified.set(key, written, digest)
	return err
}

// moveCreatedFields moves the fields of mysqlfleet's create entry into its apply entry before the first apply
// to an object it created, so that the apply owns them and a field mysqlfleet no longer wants is removed, as if
// the object had been applied from the start. It is one JSON patch of managedFields, with the object's
// resourceVersion as precondition. The patch replaces the whole list, so it is computed from the object as
// the API server has it (the cache keeps only mysqlfleet's apply entry whole): live is read again unless it was
// just read from there.
func moveCreatedFields[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a Applier, live O, read bool,
	key objectKey, c typedClient[O, AC]) error {
	if !read {
		if err := a.Reader.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
			return err
		}
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(v1alpha1.CreateFieldManager), v1alpha1.FieldManager)
	if err != nil || patch == nil {
		return err
	}
	if _, err := echoed(a, key, func() (O, error) {
		return c.Patch(ctx, key.name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager})
	}); err != nil {
		return fmt.Errorf("moving the fields of %s %s's create into mysqlfleet's apply: %w", key.kind, key.name, err)
	}
	return nil
}

// echoed makes one write of the object with its watch event kept from being taken for a change (see echoes),
// and returns the version it wrote ("" when it failed).
func echoed[O client.Object](a Applier, key objectKey, write func() (O, error)) (string, error) {
	a.Memory.echoes.begin(key)
	obj, err := write()
	written := ""
	if err == nil {
		written = obj.GetResourceVersion()
	}
	a.Memory.echoes.end(key, written)
	return written, err
}
