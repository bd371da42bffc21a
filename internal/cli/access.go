package cli

import (
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
)

// Access is every object that gives the manager its access to one member, as server-side apply configurations.
// MemberAccess builds it; it is pure, so that the exact grant is covered by table tests.
type Access struct {
	// Namespaces are MemberNamespace and, when the access is confined, the namespaces it is confined to: the
	// Roles live there, so they must exist.
	Namespaces         []*corev1ac.NamespaceApplyConfiguration
	ServiceAccount     *corev1ac.ServiceAccountApplyConfiguration
	ClusterRole        *rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBinding *rbacv1ac.ClusterRoleBindingApplyConfiguration
	// Roles and RoleBindings are set only when the access is confined to namespaces, one of each per namespace.
	Roles        []*rbacv1ac.RoleApplyConfiguration
	RoleBindings []*rbacv1ac.RoleBindingApplyConfiguration
}

// memberVerbs are what the manager does to the kinds it writes into members: it reads them through a cache
// (list, watch) and directly when it must see which fields it owns (get), writes them with server-side apply (patch, and create for a first apply), and deletes
// them when a database leaves. update is not used by the manager today; it is granted so that a switch from
// apply to update does not break registered members, and it allows nothing that patch does not.
var memberVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// namespacedRules are the namespaced kinds of controllers.MemberObjects.
func namespacedRules() []*rbacv1ac.PolicyRuleApplyConfiguration {
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups("").
			WithResources("secrets", "configmaps", "services", "persistentvolumeclaims").WithVerbs(memberVerbs...),
		rbacv1ac.PolicyRule().WithAPIGroups("apps").WithResources("statefulsets").WithVerbs(memberVerbs...),
		rbacv1ac.PolicyRule().WithAPIGroups("policy").WithResources("poddisruptionbudgets").WithVerbs(memberVerbs...),
		rbacv1ac.PolicyRule().WithAPIGroups("batch").WithResources("cronjobs", "jobs").WithVerbs(memberVerbs...),
		// Read only, and no subresources (no exec, no logs): when a StatefulSet made by an earlier release is moved
		// to claims born with the MySQLCluster's UID, the Pods it controls say which claims are its own (a claim
		// they mount), where names alone could be a predecessor's. The credential can already run any Pod through a
		// StatefulSet, so reading them widens nothing.
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods").WithVerbs("get", "list"),
	}
}

// namespaceRules are what the manager does to Namespaces: it applies the database's namespace and watches
// Namespaces through its cache. It never deletes one (retained volumes and other databases live there).
//
// Confined to namespaces, the credential may only patch those (an apply to an existing Namespace is a patch);
// it cannot create others, since RBAC cannot limit create by name. join creates the namespaces instead. list and
// watch cannot be limited by name either, and reveal only names and labels.
func namespaceRules(namespaces []string) []*rbacv1ac.PolicyRuleApplyConfiguration {
	if len(namespaces) == 0 {
		return []*rbacv1ac.PolicyRuleApplyConfiguration{
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("namespaces").
				WithVerbs("get", "list", "watch", "create", "patch"),
		}
	}
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("namespaces").WithVerbs("get", "list", "watch"),
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("namespaces").WithResourceNames(namespaces...).
			WithVerbs("patch"),
	}
}

// MemberAccess builds the ServiceAccount and RBAC for the manager in a member. With no namespaces, one
// ClusterRole grants every kind cluster-wide, which is what the manager needs today: its member cache lists and
// watches every kind it manages across all namespaces (filtered by label, which RBAC cannot express). With
// namespaces (sorted, without duplicates), the namespaced kinds are granted by a Role in each of them and the
// ClusterRole keeps only the Namespace rules.
func MemberAccess(namespaces []string) Access {
	labels := accessLabels()
	subject := rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(ServiceAccountName).WithNamespace(MemberNamespace)
	a := Access{
		ServiceAccount: corev1ac.ServiceAccount(ServiceAccountName, MemberNamespace).WithLabels(labels).
			// The manager uses the token from outside the member; no Pod runs as this account.
			WithAutomountServiceAccountToken(false),
	}
	// The Namespaces are applied with nothing but their names, so that join owns none of their fields: the
	// member's MemberNamespace may also be the hub's, labelled by whoever installed the manager there.
	a.Namespaces = append(a.Namespaces, corev1ac.Namespace(MemberNamespace))
	for _, ns := range namespaces {
		if ns != MemberNamespace {
			a.Namespaces = append(a.Namespaces, corev1ac.Namespace(ns))
		}
	}

	clusterRules := namespaceRules(namespaces)
	if len(namespaces) == 0 {
		clusterRules = append(clusterRules, namespacedRules()...)
	}
	a.ClusterRole = rbacv1ac.ClusterRole(RoleName).WithLabels(labels).WithRules(clusterRules...)
	a.ClusterRoleBinding = rbacv1ac.ClusterRoleBinding(RoleName).WithLabels(labels).WithSubjects(subject).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(RoleName))
	for _, ns := range namespaces {
		a.Roles = append(a.Roles, rbacv1ac.Role(RoleName, ns).WithLabels(labels).WithRules(namespacedRules()...))
		a.RoleBindings = append(a.RoleBindings, rbacv1ac.RoleBinding(RoleName, ns).WithLabels(labels).
			WithSubjects(subject).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(RoleName)))
	}
	return a
}

// tokenSecret is the ServiceAccount's long-lived token Secret; a token controller fills data.token.
func tokenSecret() *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(TokenSecretName, MemberNamespace).WithLabels(accessLabels()).
		WithAnnotations(map[string]string{"kubernetes.io/service-account.name": ServiceAccountName}).
		WithType("kubernetes.io/service-account-token")
}
