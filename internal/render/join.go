package render

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// What `mysqlfleet join` installs in a member, beside what the hub writes there for each MySQLCluster: the
// hub's access (a ServiceAccount whose token the manager uses, and its RBAC) and the member controller (its
// ServiceAccount, least-privilege RBAC and Deployment). Built here, with every other object mysqlfleet writes
// into a member, so that the CLI applies them without importing the member controller's runtime.

// Names join writes in a member.
const (
	// JoinNamespace is the namespace in each member that holds the hub's ServiceAccount and its token, and
	// the member controller.
	JoinNamespace = "mysqlfleet-system"
	// JoinFieldManager is the server-side apply field manager of everything the CLI writes. It differs from the
	// manager's ("mysqlfleet") so that neither takes the other's fields.
	JoinFieldManager = "mysqlfleet-cli"
	// HubServiceAccountName is the identity the manager acts as in a member.
	HubServiceAccountName = "mysqlfleet-member"
	// HubRoleName names the hub's ClusterRole, ClusterRoleBinding and (with namespaces) every Role and
	// RoleBinding.
	HubRoleName = "mysqlfleet-member"
	// HubTokenSecretName is the ServiceAccount's long-lived token Secret. A TokenRequest token, used where no
	// token controller fills this Secret, is bound to it, so that deleting the Secret revokes either kind of
	// token.
	HubTokenSecretName = "mysqlfleet-member-token"
	// MemberControllerName names the member controller's Deployment, ServiceAccount, ClusterRole, Role, their
	// bindings, and its leader election Lease.
	MemberControllerName = "mysqlfleet-member-controller"
)

// Labels on every object join writes into a member, so that unjoin (and a later join, pruning Roles of
// namespaces no longer listed) finds them. The managed-by value is not the manager's, whose member caches select
// managed-by=mysqlfleet: these objects are not the manager's to watch.
const (
	accessComponent = "member-access"
	// AccessSelector selects what AccessLabels marks.
	AccessSelector = "app.kubernetes.io/component=" + accessComponent + ",app.kubernetes.io/managed-by=" + JoinFieldManager
)

// AccessLabels are the labels of the hub's access objects in a member.
func AccessLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "mysqlfleet",
		"app.kubernetes.io/component":  accessComponent,
		"app.kubernetes.io/managed-by": JoinFieldManager,
	}
}

// Access is every object that gives the manager its access to one member, as server-side apply configurations.
// MemberAccess builds it; it is pure, so that the exact grant is covered by table tests.
type Access struct {
	// Namespaces are JoinNamespace and, when the access is confined, the namespaces it is confined to: the
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
// (list, watch) and directly when it must see which fields it owns (get), writes them with server-side apply
// (patch, and create for a first apply), and deletes them when a database leaves. update is not used by the
// manager today; it is granted so that a switch from apply to update does not break registered members, and it
// allows nothing that patch does not.
var memberVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// namespacedRules are the namespaced kinds the hub writes into members (the hub controller's MemberObjects).
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
	labels := AccessLabels()
	subject := rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(HubServiceAccountName).
		WithNamespace(JoinNamespace)
	a := Access{
		ServiceAccount: corev1ac.ServiceAccount(HubServiceAccountName, JoinNamespace).WithLabels(labels).
			// The manager uses the token from outside the member; no Pod runs as this account.
			WithAutomountServiceAccountToken(false),
	}
	// The Namespaces are applied with nothing but their names, so that join owns none of their fields: the
	// member's JoinNamespace may also be the hub's, labelled by whoever installed the manager there.
	a.Namespaces = append(a.Namespaces, corev1ac.Namespace(JoinNamespace))
	for _, ns := range namespaces {
		if ns != JoinNamespace {
			a.Namespaces = append(a.Namespaces, corev1ac.Namespace(ns))
		}
	}

	clusterRules := namespaceRules(namespaces)
	if len(namespaces) == 0 {
		clusterRules = append(clusterRules, namespacedRules()...)
	}
	a.ClusterRole = rbacv1ac.ClusterRole(HubRoleName).WithLabels(labels).WithRules(clusterRules...)
	a.ClusterRoleBinding = rbacv1ac.ClusterRoleBinding(HubRoleName).WithLabels(labels).WithSubjects(subject).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(HubRoleName))
	for _, ns := range namespaces {
		a.Roles = append(a.Roles, rbacv1ac.Role(HubRoleName, ns).WithLabels(labels).WithRules(namespacedRules()...))
		a.RoleBindings = append(a.RoleBindings, rbacv1ac.RoleBinding(HubRoleName, ns).WithLabels(labels).
			WithSubjects(subject).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(HubRoleName)))
	}
	return a
}

// HubTokenSecret is the hub ServiceAccount's long-lived token Secret; a token controller fills data.token.
func HubTokenSecret() *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(HubTokenSecretName, JoinNamespace).WithLabels(AccessLabels()).
		WithAnnotations(map[string]string{"kubernetes.io/service-account.name": HubServiceAccountName}).
		WithType("kubernetes.io/service-account-token")
}

// MemberControllerClusterRules are what the member controller may do in every namespace of its member, and no
// more:
//   - StatefulSets: read and watch (it never writes them; the hub does);
//   - Pods: read, watch, and patch (the role label only);
//   - ConfigMaps: read, watch, create and update (its report ConfigMaps only; no delete: garbage collection
//     removes them with their StatefulSet through the owner reference, which does not block deletion and so
//     needs no permission on statefulsets/finalizers);
//   - Secrets: get only (the credentials Secret, read by name when a pass needs it; never listed nor watched);
//   - Jobs: read and watch (the outcomes of the backup and restore Jobs the hub renders), and create (its seed
//     Jobs, which load an empty replica with a dump). No update, patch or delete: a finished seed Job is
//     removed by the member's TTL controller;
//   - Events: create and patch (ServerRebuilt on a StatefulSet, in its namespace).
func MemberControllerClusterRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		// The primary's Services, whose EndpointSlices it writes, and what Kubernetes' endpoint controllers left
		// of them from when they had a selector (controllers/member/endpoints.go). Cluster-wide like the Pods'
		// labels, which steer the same traffic.
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"},
			Verbs: []string{"get", "list", "create", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: []string{"get", "delete"}},
	}
}

// MemberControllerNamespaceRules are what it may do in its own namespace: hold its leader election Lease and
// record the leader election's Events.
func MemberControllerNamespaceRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// MemberControllerRBAC is the member controller's identity and permissions in a member whose controller runs in
// namespace, as typed objects: a ServiceAccount, a ClusterRole and ClusterRoleBinding with
// MemberControllerClusterRules, a Role and RoleBinding with MemberControllerNamespaceRules. Tests that run the
// member controller in-process apply them and act as its ServiceAccount, to check that they are enough;
// MemberController gives join the same grants as apply configurations.
func MemberControllerRBAC(namespace string) []client.Object {
	labels := map[string]string{
		v1alpha1.ManagedByLabel:            v1alpha1.ManagedByValue,
		v1alpha1.ReplicationComponentLabel: "member-controller",
	}
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: MemberControllerName, Namespace: ns, Labels: labels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: MemberControllerName, Namespace: namespace}}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(namespace)},
		&rbacv1.ClusterRole{ObjectMeta: meta(""), Rules: MemberControllerClusterRules()},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta(""), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MemberControllerName}},
		&rbacv1.Role{ObjectMeta: meta(namespace), Rules: MemberControllerNamespaceRules()},
		&rbacv1.RoleBinding{ObjectMeta: meta(namespace), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: MemberControllerName}},
	}
}

// MemberControllerObjects are the member controller's identity, RBAC and Deployment, as apply configurations.
type MemberControllerObjects struct {
	ServiceAccount     *corev1ac.ServiceAccountApplyConfiguration
	ClusterRole        *rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBinding *rbacv1ac.ClusterRoleBindingApplyConfiguration
	Role               *rbacv1ac.RoleApplyConfiguration
	RoleBinding        *rbacv1ac.RoleBindingApplyConfiguration
	Deployment         *appsv1ac.DeploymentApplyConfiguration
}

func policyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, 0, len(rules))
	for _, r := range rules {
		out = append(out, rbacv1ac.PolicyRule().WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).
			WithVerbs(r.Verbs...))
	}
	return out
}

// MemberController builds the member controller's objects for a member, running image, in JoinNamespace: a
// Deployment of two replicas with leader election (Lease MemberControllerName), running mysqlfleet-member from
// the manager's image, as its own ServiceAccount with MemberControllerClusterRules and
// MemberControllerNamespaceRules. It is pure.
func MemberController(image string) MemberControllerObjects {
	labels := map[string]string{
		"app.kubernetes.io/name":       "mysqlfleet",
		"app.kubernetes.io/component":  "member-controller",
		"app.kubernetes.io/managed-by": JoinFieldManager,
	}
	name, ns := MemberControllerName, JoinNamespace
	subject := rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(ns)
	selector := map[string]string{"app.kubernetes.io/name": "mysqlfleet", "app.kubernetes.io/component": "member-controller"}
	probe := func(path string) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("health"))).
			WithPeriodSeconds(10)
	}
	container := corev1ac.Container().WithName("member-controller").WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("/mysqlfleet-member").
		// The seed Jobs copy the backup runner from this same image.
		WithArgs("--leader-elect", "--namespace="+ns, "--runner-image="+image).
		// Its own node, which a failover avoids among equally fit replicas (member.Options.NodeName).
		WithEnv(corev1ac.EnvVar().WithName("NODE_NAME").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("spec.nodeName")))).
		WithPorts(corev1ac.ContainerPort().WithName("metrics").WithContainerPort(8080),
			corev1ac.ContainerPort().WithName("health").WithContainerPort(8081)).
		WithLivenessProbe(probe("/healthz")).WithReadinessProbe(probe("/readyz")).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"),
				corev1.ResourceMemory: resource.MustParse("64Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")})).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	return MemberControllerObjects{
		ServiceAccount: corev1ac.ServiceAccount(name, ns).WithLabels(labels),
		ClusterRole:    rbacv1ac.ClusterRole(name).WithLabels(labels).WithRules(policyRules(MemberControllerClusterRules())...),
		ClusterRoleBinding: rbacv1ac.ClusterRoleBinding(name).WithLabels(labels).WithSubjects(subject).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(name)),
		Role: rbacv1ac.Role(name, ns).WithLabels(labels).
			WithRules(policyRules(MemberControllerNamespaceRules())...),
		RoleBinding: rbacv1ac.RoleBinding(name, ns).WithLabels(labels).WithSubjects(subject).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)),
		Deployment: appsv1ac.Deployment(name, ns).WithLabels(labels).
			WithSpec(appsv1ac.DeploymentSpec().
				// Two replicas: one leads, the other takes over within the lease duration if its node goes.
				WithReplicas(2).
				WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RollingUpdateDeploymentStrategyType)).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(selector).
					WithSpec(corev1ac.PodSpec().WithServiceAccountName(name).
						WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).
							WithRunAsUser(65532).WithRunAsGroup(65532).
							WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
						// On two nodes where there are two: a standby on the leader's node would go with it. A
						// rule, not a preference (which the scheduler weighs against its other scores, and which
						// put both on one node in a kind run); with one schedulable node both still run there.
						WithTopologySpreadConstraints(corev1ac.TopologySpreadConstraint().
							WithMaxSkew(1).
							WithTopologyKey(corev1.LabelHostname).
							WithWhenUnsatisfiable(corev1.DoNotSchedule).
							// Nodes that take no Pods (a tainted control plane) are not places to spread over.
							WithNodeTaintsPolicy(corev1.NodeInclusionPolicyHonor).
							WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector))).
						WithContainers(container)))),
	}
}
