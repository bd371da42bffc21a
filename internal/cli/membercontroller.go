package cli

import (
	"context"
	"fmt"
	"runtime/debug"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/mysqlfleet/mysqlfleet/internal/member"
)

// The member controller (internal/member) decides, inside each member, which server of each database is the
// primary, so that failover goes on when the hub cannot be reached. join installs it into the member, in
// MemberNamespace, with its own ServiceAccount and least-privilege RBAC (member.ClusterRules and
// member.NamespaceRules), as a Deployment of two replicas with leader election, running mysqlfleet-member from
// the manager's image. It runs with the member's own credentials, not the hub's: the hub's credential needs no
// right to run workloads or grant RBAC, and it reads the controller's reports through the member's API server.

// MemberControllerName names the member controller's Deployment; its ServiceAccount, ClusterRole and Role are
// member.ServiceAccountName.
const MemberControllerName = "mysqlfleet-member-controller"

// DefaultMemberControllerImage is the manager's image of this CLI's version: mysqlfleet/manager:<version>, or
// mysqlfleet/manager:dev for a build without a module version (what make docker-build tags by default).
func DefaultMemberControllerImage() string {
	tag := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		tag = bi.Main.Version
	}
	return "mysqlfleet/manager:" + tag
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

func memberControllerLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "mysqlfleet",
		"app.kubernetes.io/component":  "member-controller",
		"app.kubernetes.io/managed-by": managedByCLI,
	}
}

func policyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, 0, len(rules))
	for _, r := range rules {
		out = append(out, rbacv1ac.PolicyRule().WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).
			WithVerbs(r.Verbs...))
	}
	return out
}

// MemberController builds the member controller's objects for a member, running image. It is pure.
func MemberController(image string) MemberControllerObjects {
	labels := memberControllerLabels()
	name := member.ServiceAccountName
	subject := rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(MemberNamespace)
	selector := map[string]string{"app.kubernetes.io/name": "mysqlfleet", "app.kubernetes.io/component": "member-controller"}
	probe := func(path string) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("health"))).
			WithPeriodSeconds(10)
	}
	container := corev1ac.Container().WithName("member-controller").WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("/mysqlfleet-member").
		// The seed Jobs copy the backup runner from this same image.
		WithArgs("--leader-elect", "--namespace="+MemberNamespace, "--runner-image="+image).
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
		ServiceAccount: corev1ac.ServiceAccount(name, MemberNamespace).WithLabels(labels),
		ClusterRole:    rbacv1ac.ClusterRole(name).WithLabels(labels).WithRules(policyRules(member.ClusterRules())...),
		ClusterRoleBinding: rbacv1ac.ClusterRoleBinding(name).WithLabels(labels).WithSubjects(subject).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(name)),
		Role: rbacv1ac.Role(name, MemberNamespace).WithLabels(labels).
			WithRules(policyRules(member.NamespaceRules())...),
		RoleBinding: rbacv1ac.RoleBinding(name, MemberNamespace).WithLabels(labels).WithSubjects(subject).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)),
		Deployment: appsv1ac.Deployment(MemberControllerName, MemberNamespace).WithLabels(labels).
			WithSpec(appsv1ac.DeploymentSpec().
				// Two replicas: one leads (Lease member.DefaultLeaderElectionID), the other takes over within
				// the lease duration if its node goes.
				WithReplicas(2).
				WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RollingUpdateDeploymentStrategyType)).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(selector).
					WithSpec(corev1ac.PodSpec().WithServiceAccountName(name).
						WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).
							WithRunAsUser(65532).WithRunAsGroup(65532).
							WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
						WithContainers(container)))),
	}
}

// applyMemberController installs (or updates) the member controller in the member.
func (j *joiner) applyMemberController(ctx context.Context) error {
	o := MemberController(j.opts.MemberControllerImage)
	cs := j.mc.cs
	steps := []struct {
		what  string
		apply func() error
	}{
		{"ServiceAccount", func() error {
			_, err := cs.CoreV1().ServiceAccounts(MemberNamespace).Apply(ctx, o.ServiceAccount, applyOptions)
			return err
		}},
		{"ClusterRole", func() error { _, err := cs.RbacV1().ClusterRoles().Apply(ctx, o.ClusterRole, applyOptions); return err }},
		{"ClusterRoleBinding", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, o.ClusterRoleBinding, applyOptions)
			return err
		}},
		{"Role", func() error {
			_, err := cs.RbacV1().Roles(MemberNamespace).Apply(ctx, o.Role, applyOptions)
			return err
		}},
		{"RoleBinding", func() error {
			_, err := cs.RbacV1().RoleBindings(MemberNamespace).Apply(ctx, o.RoleBinding, applyOptions)
			return err
		}},
		{"Deployment", func() error {
			_, err := cs.AppsV1().Deployments(MemberNamespace).Apply(ctx, o.Deployment, applyOptions)
			return err
		}},
	}
	for _, s := range steps {
		if err := s.apply(); err != nil {
			return fmt.Errorf("failed to apply the member controller's %s in member %s: %w", s.what, j.opts.Name, err)
		}
	}
	say(j.out, "member: member controller %s/%s runs %s\n", MemberNamespace, MemberControllerName,
		j.opts.MemberControllerImage)
	return nil
}
