package v1alpha1

import (
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations on member registration Secrets (on the hub).
const (
	// MemberSecretLabel marks a Secret in the manager's namespace as a member registration; its value is "true".
	// The Secret's name is the member's name and its key KubeconfigKey holds the member's kubeconfig.
	MemberSecretLabel = "mysqlfleet.io/member"
	// KubeconfigKey is the key of a member registration Secret that holds the kubeconfig.
	KubeconfigKey = "kubeconfig"
	// CloudLabel names the member's cloud: aws, azure or gcp.
	CloudLabel = "mysqlfleet.io/cloud"
	// RegionLabel names the member's region, e.g. eu-west-1.
	RegionLabel = "mysqlfleet.io/region"
	// StorageClassAnnotation on a member registration Secret overrides the storage class of every MySQLCluster
	// placed on that member, unless the MySQLCluster sets spec.storage.storageClassName.
	StorageClassAnnotation = "mysqlfleet.io/storage-class"
	// NamespacesAnnotation on a member registration Secret lists, comma separated, the only namespaces the member's
	// credential may use (`mysqlfleet join --namespaces`). The manager then caches only those namespaces there and
	// reports a MySQLCluster from any other namespace as not placeable on that member.
	NamespacesAnnotation = "mysqlfleet.io/namespaces"
	// TokenExpirationAnnotation on a member registration Secret is when its token expires (RFC 3339), set by
	// `mysqlfleet join` when the member issued a time-bound token.
	TokenExpirationAnnotation = "mysqlfleet.io/token-expiration"
)

// Labels on every object that mysqlfleet writes into a member. They name the hub object, so that member events
// map back to it and teardown finds its objects; mysqlfleet never sets an owner reference across clusters.
const (
	ManagedByLabel   = "app.kubernetes.io/managed-by"
	ManagedByValue   = "mysqlfleet"
	NameLabel        = "app.kubernetes.io/name"
	NameValue        = "mysql"
	InstanceLabel    = "app.kubernetes.io/instance"
	ComponentLabel   = "app.kubernetes.io/component"
	ClusterNameLabel = "mysqlfleet.io/cluster-name"
	// ClusterNamespaceLabel is the MySQLCluster's namespace on the hub.
	ClusterNamespaceLabel = "mysqlfleet.io/cluster-namespace"
	// ClusterUIDLabel is the MySQLCluster's UID on the hub; it tells a recreated hub object from its predecessor.
	ClusterUIDLabel = "mysqlfleet.io/cluster-uid"
	// MemberLabel is the member's name, set on the objects written into it.
	MemberLabel = "mysqlfleet.io/member-name"
)

// Finalizer is set on every MySQLCluster on the hub so that its member objects are removed before it goes.
const Finalizer = "mysqlfleet.io/finalizer"

// FieldManager is the one server-side apply field manager mysqlfleet writes with, on the hub and in members.
const FieldManager = "mysqlfleet"

// CreateFieldManager is the field manager of the member objects mysqlfleet creates. A create is an Update in
// managedFields, not an Apply, so it has a name of its own: mysqlfleet's later Update writes (a claim's labels)
// stay told apart from it, and before its first apply to the object mysqlfleet moves this entry's fields into
// FieldManager's apply entry (k8s.io/client-go/util/csaupgrade), so that a field it stops applying is removed.
const CreateFieldManager = "mysqlfleet-create"

// Annotations on a MySQLCluster and on the objects it adopts.
const (
	// AdoptAnnotation on a MySQLCluster lists, comma separated, the UIDs whose objects in its members it may take
	// over: a predecessor MySQLCluster's UID (its mysqlfleet.io/cluster-uid label) adopts every object that
	// predecessor left with the names this one needs, such as volumes kept by deletionPolicy Retain; an object's
	// own UID adopts that one object, such as a PersistentVolumeClaim made by hand from a snapshot. Without it,
	// mysqlfleet never writes over, uses or deletes an object it did not create: it reports a conflict.
	AdoptAnnotation = "mysqlfleet.io/adopt"
	// AdoptedFromAnnotation on an adopted PersistentVolumeClaim records the owner UID it carried before (empty
	// when it had none) and is never removed by mysqlfleet.
	AdoptedFromAnnotation = "mysqlfleet.io/adopted-from"
)

// ForceDetachAnnotation on a MySQLCluster being deleted releases it at once, without waiting for members that
// cannot be reached or keep failing; their objects stay where they are, named in an Event, until the teardown
// recorded as pending for each of those members finishes the deletion there once it answers (see
// PendingTeardownLabel), unless a MySQLCluster adopts them first.
const ForceDetachAnnotation = "mysqlfleet.io/force-detach"

// RebuildAnnotation on a MySQLCluster asks for servers to be rebuilt (emptied and seeded again from the set):
// "<member>/<pod>=<request id>" entries separated by commas, as `mysqlfleet rebuild` writes them (the id is
// the time of the request, RFC 3339; RebuildRequests reads them). The hub copies each member's entries to
// the same annotation of its StatefulSet there; the member controller carries each request out once (it
// records the id), whatever the server holds, and refuses the primary.
const RebuildAnnotation = "mysqlfleet.io/rebuild"

// RebuildRequest is one entry of RebuildAnnotation.
type RebuildRequest struct {
	Member, Pod, ID string
}

// RebuildRequests reads RebuildAnnotation's value; entries that cannot be read are left out.
func RebuildRequests(v string) []RebuildRequest {
	var out []RebuildRequest
	for _, e := range strings.Split(v, ",") {
		target, id, ok := strings.Cut(strings.TrimSpace(e), "=")
		member, pod, ok2 := strings.Cut(target, "/")
		if !ok || !ok2 || member == "" || pod == "" || id == "" {
			continue
		}
		out = append(out, RebuildRequest{Member: member, Pod: pod, ID: id})
	}
	return out
}

// FormatRebuildRequests writes RebuildAnnotation's value.
func FormatRebuildRequests(reqs []RebuildRequest) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		parts = append(parts, r.Member+"/"+r.Pod+"="+r.ID)
	}
	return strings.Join(parts, ",")
}

// BackupNowAnnotation on a MySQLCluster asks for backups now: "member=RFC3339 time" entries separated by commas
// (`mysqlfleet backup NAME --member M` writes it). For each member whose last backup outcome (success or
// failure) is older than its entry, the manager runs one Job of that member's backup CronJob.
const BackupNowAnnotation = "mysqlfleet.io/backup-now"

// BackupRequests reads BackupNowAnnotation's value; entries that cannot be read are left out.
func BackupRequests(v string) map[string]metav1.Time {
	out := map[string]metav1.Time{}
	for _, e := range strings.Split(v, ",") {
		member, at, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			continue
		}
		out[member] = metav1.NewTime(t.UTC())
	}
	return out
}

// FormatBackupRequests writes BackupNowAnnotation's value, members sorted.
func FormatBackupRequests(r map[string]metav1.Time) string {
	members := make([]string, 0, len(r))
	for m := range r {
		members = append(members, m)
	}
	sort.Strings(members)
	entries := make([]string, 0, len(members))
	for _, m := range members {
		entries = append(entries, m+"="+r[m].UTC().Format(time.RFC3339))
	}
	return strings.Join(entries, ",")
}
