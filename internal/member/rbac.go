package member

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// ServiceAccountName names the member controller's ServiceAccount, and its ClusterRole, Role and bindings.
const ServiceAccountName = "mysqlfleet-member-controller"

// ClusterRules are what the member controller may do in every namespace of its member, and no more:
//   - StatefulSets: read and watch (it never writes them; the hub does);
//   - Pods: read, watch, and patch (the role label only);
//   - ConfigMaps: read, watch, create and update (its report ConfigMaps only; no delete: garbage collection
//     removes them with their StatefulSet through the owner reference, which does not block deletion and so
//     needs no permission on statefulsets/finalizers);
//   - Secrets: get only (the credentials Secret, read by name when a pass needs it; never listed nor watched);
//   - Jobs: read and watch (the outcomes of the backup and restore Jobs the hub renders), and create (its seed
//     Jobs, which load an empty replica with a dump: see seed.go). No update, patch or delete: a finished seed
//     Job is removed by the member's TTL controller;
//   - Events: create and patch (ServerRebuilt on a StatefulSet, in its namespace).
func ClusterRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// NamespaceRules are what it may do in its own namespace: hold its leader election Lease and record the
// leader election's Events.
func NamespaceRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// RBAC is the member controller's identity and permissions in a member whose controller runs in namespace:
// a ServiceAccount, a ClusterRole and ClusterRoleBinding with ClusterRules, a Role and RoleBinding with
// NamespaceRules. `mysqlfleet join` is to apply them with the controller's Deployment (see the package
// documentation); tests apply them to check that they are enough.
func RBAC(namespace string) []client.Object {
	labels := map[string]string{
		v1alpha1.ManagedByLabel:            v1alpha1.ManagedByValue,
		v1alpha1.ReplicationComponentLabel: "member-controller",
	}
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: ServiceAccountName, Namespace: ns, Labels: labels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: namespace}}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(namespace)},
		&rbacv1.ClusterRole{ObjectMeta: meta(""), Rules: ClusterRules()},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta(""), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ServiceAccountName}},
		&rbacv1.Role{ObjectMeta: meta(namespace), Rules: NamespaceRules()},
		&rbacv1.RoleBinding{ObjectMeta: meta(namespace), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ServiceAccountName}},
	}
}
