// Package leftovers is what the hub knows about objects in members that no live MySQLCluster owns: the records of
// the teardowns it still owes members (a deletion that could not reach a member), and the orphans, objects that
// carry mysqlfleet's labels and a MySQLCluster UID that neither a MySQLCluster nor a record has. Both are found
// by UID only, never by name: a name says nothing about whose an object is.
package leftovers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Record is a teardown the hub owes a member: the MySQLCluster it deleted, by UID, and its deletion policy.
type Record struct {
	Namespace      string                  `json:"namespace"`
	Name           string                  `json:"name"`
	UID            types.UID               `json:"uid"`
	Member         string                  `json:"member"`
	DeletionPolicy v1alpha1.DeletionPolicy `json:"deletionPolicy"`
}

// NewRecord is the record of the MySQLCluster's teardown owed to member.
func NewRecord(c *v1alpha1.MySQLCluster, member string) Record {
	policy := c.Spec.DeletionPolicy
	if policy == "" {
		policy = v1alpha1.DeletionPolicyRetain
	}
	return Record{Namespace: c.Namespace, Name: c.Name, UID: c.UID, Member: member, DeletionPolicy: policy}
}

// Cluster is a stand-in for the deleted MySQLCluster with what teardown needs: namespace, name, UID and policy.
func (r Record) Cluster() *v1alpha1.MySQLCluster {
	return &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, UID: r.UID},
		Spec:       v1alpha1.MySQLClusterSpec{DeletionPolicy: r.DeletionPolicy},
	}
}

// ConfigMap is the record as it is stored, in the manager's namespace.
func (r Record) ConfigMap(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      r.Cluster().PendingTeardownName(r.Member),
			Labels: map[string]string{
				v1alpha1.PendingTeardownLabel: "true",
				v1alpha1.ManagedByLabel:       v1alpha1.ManagedByValue,
				// A member's name may pass the 63 characters of a label value; the data always has it.
				v1alpha1.MemberLabel:     labelValue(r.Member),
				v1alpha1.ClusterUIDLabel: string(r.UID),
			},
		},
		Data: map[string]string{
			v1alpha1.PendingTeardownNamespaceKey: r.Namespace,
			v1alpha1.PendingTeardownNameKey:      r.Name,
			v1alpha1.PendingTeardownUIDKey:       string(r.UID),
			v1alpha1.PendingTeardownMemberKey:    r.Member,
			v1alpha1.PendingTeardownPolicyKey:    string(r.DeletionPolicy),
		},
	}
}

func labelValue(s string) string {
	if len(s) > 63 {
		return ""
	}
	return s
}

// ErrInvalidRecord is a record that cannot be read; nothing is done with it.
var ErrInvalidRecord = errors.New("invalid pending teardown record")

// FromConfigMap reads a record. A record that lacks a field, or names a policy mysqlfleet does not know, is
// refused: a teardown is done exactly as recorded or not at all.
func FromConfigMap(cm *corev1.ConfigMap) (Record, error) {
	d := cm.Data
	r := Record{
		Namespace: d[v1alpha1.PendingTeardownNamespaceKey], Name: d[v1alpha1.PendingTeardownNameKey],
		UID: types.UID(d[v1alpha1.PendingTeardownUIDKey]), Member: d[v1alpha1.PendingTeardownMemberKey],
		DeletionPolicy: v1alpha1.DeletionPolicy(d[v1alpha1.PendingTeardownPolicyKey]),
	}
	var missing []string
	for key, v := range map[string]string{"namespace": r.Namespace, "name": r.Name, "uid": string(r.UID), "member": r.Member} {
		if v == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return r, fmt.Errorf("%w %s/%s: no %s", ErrInvalidRecord, cm.Namespace, cm.Name, strings.Join(missing, ", "))
	}
	if r.DeletionPolicy != v1alpha1.DeletionPolicyRetain && r.DeletionPolicy != v1alpha1.DeletionPolicyDelete {
		return r, fmt.Errorf("%w %s/%s: deletion policy %q", ErrInvalidRecord, cm.Namespace, cm.Name, r.DeletionPolicy)
	}
	return r, nil
}

// RecordLabels select the records; with a member, that member's.
func RecordLabels(member string) client.MatchingLabels {
	l := client.MatchingLabels{v1alpha1.PendingTeardownLabel: "true"}
	if member != "" && labelValue(member) != "" {
		l[v1alpha1.MemberLabel] = member
	}
	return l
}

// ListRecords reads the records in the manager's namespace; those that cannot be read are returned apart, as errors.
func ListRecords(ctx context.Context, r client.Reader, namespace, member string) ([]Record, []error, error) {
	var list corev1.ConfigMapList
	if err := r.List(ctx, &list, client.InNamespace(namespace), RecordLabels(member)); err != nil {
		return nil, nil, err
	}
	var out []Record
	var bad []error
	for i := range list.Items {
		rec, err := FromConfigMap(&list.Items[i])
		switch {
		case err != nil:
			bad = append(bad, err)
		case member == "" || rec.Member == member:
			out = append(out, rec)
		}
	}
	return out, bad, nil
}

// Kinds mysqlfleet writes into a member for a MySQLCluster, each object carrying the MySQLCluster's UID label,
// in the order teardown removes them: the StatefulSet first, whose Pods use the claims, and the claims last.
var kinds = []struct {
	kind string
	list func() client.ObjectList
}{
	{"StatefulSet", func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"CronJob", func() client.ObjectList { return &batchv1.CronJobList{} }},
	{"Job", func() client.ObjectList { return &batchv1.JobList{} }},
	{"PodDisruptionBudget", func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }},
	{"Service", func() client.ObjectList { return &corev1.ServiceList{} }},
	{"ConfigMap", func() client.ObjectList { return &corev1.ConfigMapList{} }},
	{"Secret", func() client.ObjectList { return &corev1.SecretList{} }},
	{"PersistentVolumeClaim", func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }},
}

// VolumeKind is the kind of the data and backup volumes, which only an explicit request deletes.
const VolumeKind = "PersistentVolumeClaim"

// Object is an object in a member that carries a MySQLCluster's UID label.
type Object struct {
	Kind string
	client.Object
}

// ownedSelector selects what mysqlfleet labels with a MySQLCluster's UID.
var ownedSelector = func() labels.Selector {
	managed, err := labels.NewRequirement(v1alpha1.ManagedByLabel, selection.Equals, []string{v1alpha1.ManagedByValue})
	if err != nil {
		panic(err)
	}
	uid, err := labels.NewRequirement(v1alpha1.ClusterUIDLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*managed, *uid)
}()

// Scan lists, in a member, every object of the kinds mysqlfleet writes that carries a MySQLCluster's UID label: in
// the namespaces given, or in all when none are.
func Scan(ctx context.Context, r client.Reader, namespaces []string) ([]Object, error) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []Object
	var errs []error
	for _, k := range kinds {
		for _, ns := range namespaces {
			list := k.list()
			if err := r.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: ownedSelector}); err != nil {
				errs = append(errs, fmt.Errorf("failed to list %ss: %w", k.kind, err))
				continue
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return nil, err
			}
			for _, item := range items {
				if obj, ok := item.(client.Object); ok {
					out = append(out, Object{Kind: k.kind, Object: obj})
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// Known are the UIDs whose objects in members are owned or owed: every MySQLCluster's, the UIDs they adopt (their
// objects are about to be taken over), and every pending record's.
func Known(clusters []v1alpha1.MySQLCluster, records []Record) map[types.UID]bool {
	known := map[types.UID]bool{}
	for i := range clusters {
		known[clusters[i].UID] = true
		for _, uid := range strings.Split(clusters[i].Annotations[v1alpha1.AdoptAnnotation], ",") {
			if uid = strings.TrimSpace(uid); uid != "" {
				known[types.UID(uid)] = true
			}
		}
	}
	for _, r := range records {
		known[r.UID] = true
	}
	return known
}

// Orphan is an object in a member that carries mysqlfleet's labels and a MySQLCluster UID nobody knows.
type Orphan struct {
	Member    string    `json:"member"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// ClusterNamespace, ClusterName and ClusterUID are what its labels say of the MySQLCluster it was made for.
	ClusterNamespace string    `json:"clusterNamespace,omitempty"`
	ClusterName      string    `json:"clusterName,omitempty"`
	ClusterUID       types.UID `json:"clusterUID"`
	// Object is the object as listed, for a delete with its UID as precondition.
	Object client.Object `json:"-"`
}

// Orphans are the objects whose MySQLCluster UID is not known, sorted by kind (teardown's order), namespace and
// name. Objects already being deleted are left out: they are going.
func Orphans(member string, objs []Object, known map[types.UID]bool) []Orphan {
	var out []Orphan
	for _, o := range objs {
		l := o.GetLabels()
		uid := types.UID(l[v1alpha1.ClusterUIDLabel])
		if uid == "" || known[uid] || l[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue || !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		out = append(out, Orphan{
			Member: member, Kind: o.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(),
			ClusterNamespace: l[v1alpha1.ClusterNamespaceLabel], ClusterName: l[v1alpha1.ClusterNameLabel], ClusterUID: uid,
			Object: o.Object,
		})
	}
	order := map[string]int{}
	for i, k := range kinds {
		order[k.kind] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return order[a.Kind] < order[b.Kind]
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// TeardownLists are the lists teardown goes through for one MySQLCluster, in order; volumes only when asked.
func TeardownLists(volumes bool) []client.ObjectList {
	out := make([]client.ObjectList, 0, len(kinds))
	for _, k := range kinds {
		if k.kind == VolumeKind && !volumes {
			continue
		}
		out = append(out, k.list())
	}
	return out
}
