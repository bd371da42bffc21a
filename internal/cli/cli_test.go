package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/cli"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

const (
	fleetNS = "mysqlfleet-system"
	// awsMember is joined cluster-wide, with the TokenRequest fallback (no token controller runs in it).
	awsMember = "aws-test"
	// gcpMember is joined confined to namespaces, with a token controller stand-in and no CA in its kubeconfig.
	gcpMember = "gcp-test"
	saUser    = "system:serviceaccount:" + cli.MemberNamespace + ":" + cli.ServiceAccountName
)

// env is the fleet shared by the steps of TestCLI, which run in order: each builds on what the one before did,
// as a user's session would.
type env struct {
	t       *testing.T
	fleet   *testfleet.Fleet
	hub     client.Client
	hubPath string
	// memberPaths are the members' admin kubeconfigs written to disk, as an administrator has them.
	memberPaths map[string]string
	members     map[string]kubernetes.Interface
}

// hub is the CLI's view of the hub, with -n set to ns.
func (e *env) hubIn(ns string) cli.Hub {
	f := genericclioptions.NewConfigFlags(false)
	*f.KubeConfig = e.hubPath
	*f.Namespace = ns
	return cli.Hub{Getter: f, Namespace: fleetNS}
}

func TestCLI(t *testing.T) {
	f := testfleet.ForTest(t, testfleet.Options{
		Members: []clusters.Definition{
			{Name: awsMember, Role: clusters.RoleMember, Cloud: "aws", Region: "eu-west-1"},
			{Name: gcpMember, Role: clusters.RoleMember, Cloud: "gcp", Region: "us-central1"},
		},
		HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	})
	e := &env{t: t, fleet: f, hubPath: f.Hub.KubeconfigPath, memberPaths: map[string]string{}, members: map[string]kubernetes.Interface{}}
	var err error
	if e.hub, err = client.New(f.Hub.Config, client.Options{Scheme: mysqlcluster.Scheme()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, m := range f.Members {
		e.members[m.Name] = m.Clientset()
		e.memberPaths[m.Name] = filepath.Join(dir, m.Name+".kubeconfig")
		if err := os.WriteFile(e.memberPaths[m.Name], m.Kubeconfig, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.hub.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNS}}); err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name string
		run  func(*env, *testing.T)
	}{
		{"join registers a member with a least-privilege token", testJoin},
		{"join again changes nothing", testJoinIdempotent},
		{"the member ServiceAccount may do what the manager does and nothing else", testClusterWideRBAC},
		{"get and plan print what the manager reported", testGetAndPlan},
		{"backups lists what the manager reported; backup asks for one now", testBackups},
		{"rebuild asks for one server of one member, and refuses what it must not rebuild", testRebuild},
		{"members probes each registration through the gate", testMembers},
		{"the manager reconciles a joined member with the joined credentials", testManagerWithJoinedMember},
		{"join --rotate-token revokes the old token", testRotateToken},
		{"join --namespaces confines the member ServiceAccount", testConfinedJoin},
		{"unjoin removes the registration and the member access", testUnjoin},
	} {
		if !t.Run(step.name, func(t *testing.T) { step.run(e, t) }) {
			t.FailNow() // later steps build on this one
		}
	}
}

func (e *env) joinOptions(name string) cli.JoinOptions {
	m := e.fleet.Member(name)
	return cli.JoinOptions{
		Name: name, Member: cli.MemberFlags{Kubeconfig: e.memberPaths[name], Context: "envtest"},
		Cloud: m.Cloud, Region: m.Region, TokenWait: time.Second,
	}
}

// awsJoin registers awsMember under another address than its kubeconfig's (localhost, which its serving
// certificate also names), as --server is used for an address only the hub can reach.
func (e *env) awsJoin() cli.JoinOptions {
	o := e.joinOptions(awsMember)
	o.Labels = map[string]string{"tier": "gold"}
	o.StorageClass = "gp3-fast"
	o.Server = e.awsServer()
	o.MemberControllerImage = "registry.example.com/mysqlfleet/manager:1.2.3"
	return o
}

func (e *env) awsServer() string {
	return strings.Replace(e.fleet.Member(awsMember).Config.Host, "127.0.0.1", "localhost", 1)
}

func (e *env) registration(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := e.hub.Get(context.Background(), client.ObjectKey{Namespace: fleetNS, Name: name}, &s); err != nil {
		t.Fatalf("registration Secret %s: %v", name, err)
	}
	return &s
}

// memberClient builds a client for a member from a registration's kubeconfig, exactly as the manager does.
func memberClient(t *testing.T, s *corev1.Secret) kubernetes.Interface {
	t.Helper()
	cfg, err := kubeconfig.RESTConfig(s.Name, s.Data[v1alpha1.KubeconfigKey], kubeconfig.Options{})
	if err != nil {
		t.Fatalf("the registration's kubeconfig was refused: %v", err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

func tokenOf(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	cfg, err := clientcmd.Load(s.Data[v1alpha1.KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	return cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].Token
}

// whoami asks the member who a token is; an error is what the member said (Unauthorized for a revoked token).
func whoami(e *env, member, token string) (string, error) {
	cfg := *e.fleet.Member(member).Config
	cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, token
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

func testJoin(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var out bytes.Buffer
	res, err := cli.Join(ctx, e.hubIn(""), e.awsJoin(), &out)
	t.Log(out.String())
	g.Expect(err).NotTo(HaveOccurred())

	// No token controller runs in the test members, so the token came from the TokenRequest API, and join said
	// so, with the expiry.
	g.Expect(res.TokenSource).To(Equal(cli.TokenRequested))
	g.Expect(*res.TokenExpiration).To(BeTemporally(">", time.Now().Add(30*24*time.Hour)))
	g.Expect(out.String()).To(ContainSubstring("TokenRequest API"))
	g.Expect(out.String()).To(ContainSubstring("EXPIRES at " + res.TokenExpiration.Format(time.RFC3339)))

	s := e.registration(t, awsMember)
	g.Expect(s.Labels).To(Equal(map[string]string{
		v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "aws", v1alpha1.RegionLabel: "eu-west-1", "tier": "gold",
	}))
	g.Expect(s.Annotations).To(HaveKeyWithValue(v1alpha1.StorageClassAnnotation, "gp3-fast"))
	g.Expect(s.Annotations).To(HaveKeyWithValue(v1alpha1.TokenExpirationAnnotation, res.TokenExpiration.Format(time.RFC3339)))
	g.Expect(s.Annotations).NotTo(HaveKey(v1alpha1.NamespacesAnnotation))
	facts, err := placement.MemberFromSecret(s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(facts.StorageClassOverride).To(Equal("gp3-fast"))
	g.Expect(s.ManagedFields).To(ContainElement(HaveField("Manager", cli.FieldManager)))

	// The kubeconfig passes the manager's gate and is self-contained.
	data := s.Data[v1alpha1.KubeconfigKey]
	_, err = kubeconfig.Validate(data, kubeconfig.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := clientcmd.Load(data)
	g.Expect(err).NotTo(HaveOccurred())
	for name, u := range kc.AuthInfos {
		g.Expect(u.Exec).To(BeNil(), name)
		g.Expect(u.AuthProvider).To(BeNil(), name)
		g.Expect(u.TokenFile).To(BeEmpty(), name)
		g.Expect(u.ClientCertificate).To(BeEmpty(), name)
		g.Expect(u.ClientKey).To(BeEmpty(), name)
		g.Expect(u.ClientCertificateData).To(BeEmpty(), "the administrator's certificate must not reach the hub")
		g.Expect(u.Token).NotTo(BeEmpty(), name)
	}
	for name, c := range kc.Clusters {
		g.Expect(c.CertificateAuthority).To(BeEmpty(), name)
		g.Expect(c.CertificateAuthorityData).To(Equal(e.fleet.Member(awsMember).Config.CAData), name)
		g.Expect(c.Server).To(Equal(e.awsServer()), "--server is what the hub uses")
	}
	g.Expect(string(data)).NotTo(ContainSubstring("exec"))
	g.Expect(string(data)).NotTo(MatchRegexp(`certificate-authority:|client-certificate:|client-key:|tokenFile`))
	who, err := whoami(e, awsMember, tokenOf(t, s))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(who).To(Equal(saUser))

	// It works for what the manager does: list StatefulSets cluster-wide, create a namespace and a ConfigMap.
	mc := memberClient(t, s)
	_, err = mc.AppsV1().StatefulSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = mc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "joined-check"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = mc.CoreV1().ConfigMaps("joined-check").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// And for nothing else: a real request, not only a review. Pods are read only.
	_, err = mc.CoreV1().Pods("joined-check").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a Pod: %v", err)

	// The member holds exactly the access join describes.
	member := e.members[awsMember]
	sa, err := member.CoreV1().ServiceAccounts(cli.MemberNamespace).Get(ctx, cli.ServiceAccountName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sa.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
	cr, err := member.RbacV1().ClusterRoles().Get(ctx, cli.RoleName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	g.Expect(cr.Rules).To(Equal([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps", "services", "persistentvolumeclaims"}, Verbs: all},
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: all},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: all},
		{APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	}))
	crb, err := member.RbacV1().ClusterRoleBindings().Get(ctx, cli.RoleName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: cli.ServiceAccountName, Namespace: cli.MemberNamespace}}))
	roles, err := member.RbacV1().Roles(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=member-access"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(roles.Items).To(BeEmpty())

	// The member controller: a Deployment of the requested image, as its own ServiceAccount, which may do what
	// the controller does (read StatefulSets, label Pods, write its reports, read a Secret by name, create seed
	// Jobs) and nothing else (no Pod deletion or exec, no listing Secrets, no StatefulSet writes, no Job changes).
	dep, err := member.AppsV1().Deployments(cli.MemberNamespace).Get(ctx, cli.MemberControllerName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(2))
	pod := dep.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("mysqlfleet-member-controller"))
	g.Expect(pod.TopologySpreadConstraints).To(HaveLen(1), "the standby on another node than the leader where there is one")
	g.Expect(pod.TopologySpreadConstraints[0].TopologyKey).To(Equal(corev1.LabelHostname))
	g.Expect(pod.TopologySpreadConstraints[0].WhenUnsatisfiable).To(Equal(corev1.DoNotSchedule))
	g.Expect(*pod.TopologySpreadConstraints[0].NodeTaintsPolicy).To(Equal(corev1.NodeInclusionPolicyHonor))
	g.Expect(pod.Containers[0].Image).To(Equal("registry.example.com/mysqlfleet/manager:1.2.3"))
	g.Expect(pod.Containers[0].Command).To(Equal([]string{"/mysqlfleet-member"}))
	g.Expect(pod.Containers[0].Args).To(ContainElements("--leader-elect",
		"--runner-image=registry.example.com/mysqlfleet/manager:1.2.3"), "its seed Jobs run the runner of its own image")
	g.Expect(pod.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "NODE_NAME",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}}),
		"it knows its own node, which a failover avoids")
	controllerUser := "system:serviceaccount:" + cli.MemberNamespace + ":mysqlfleet-member-controller"
	for _, c := range []struct {
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Group: "apps", Resource: "statefulsets", Verb: "watch"}, true},
		{authorizationv1.ResourceAttributes{Resource: "pods", Verb: "patch", Namespace: "shop"}, true},
		{authorizationv1.ResourceAttributes{Resource: "configmaps", Verb: "update", Namespace: "shop"}, true},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: "shop"}, true},
		{authorizationv1.ResourceAttributes{Group: "batch", Resource: "jobs", Verb: "create", Namespace: "shop"}, true},
		{authorizationv1.ResourceAttributes{Group: "batch", Resource: "jobs", Verb: "delete", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Group: "batch", Resource: "jobs", Verb: "patch", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update",
			Namespace: cli.MemberNamespace}, true},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "list", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Resource: "pods", Verb: "delete", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Resource: "pods", Subresource: "exec", Verb: "create", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Group: "apps", Resource: "statefulsets", Verb: "patch", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update",
			Namespace: "shop"}, false},
	} {
		sar, err := member.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: controllerUser, ResourceAttributes: &c.attrs,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + cli.MemberNamespace}}},
			metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sar.Status.Allowed).To(Equal(c.allowed), "%+v", c.attrs)
	}
}

func testJoinIdempotent(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	member := e.members[awsMember]
	before := e.registration(t, awsMember)
	sa, _ := member.CoreV1().ServiceAccounts(cli.MemberNamespace).Get(ctx, cli.ServiceAccountName, metav1.GetOptions{})
	tokenSecret, _ := member.CoreV1().Secrets(cli.MemberNamespace).Get(ctx, cli.TokenSecretName, metav1.GetOptions{})
	cr, _ := member.RbacV1().ClusterRoles().Get(ctx, cli.RoleName, metav1.GetOptions{})

	var out bytes.Buffer
	res, err := cli.Join(ctx, e.hubIn(""), e.awsJoin(), &out)
	t.Log(out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.TokenSource).To(Equal(cli.TokenReused))
	g.Expect(out.String()).To(ContainSubstring("unchanged"))

	after := e.registration(t, awsMember)
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the registration was rewritten")
	g.Expect(tokenOf(t, after)).To(Equal(tokenOf(t, before)))
	sa2, _ := member.CoreV1().ServiceAccounts(cli.MemberNamespace).Get(ctx, cli.ServiceAccountName, metav1.GetOptions{})
	g.Expect(sa2.ResourceVersion).To(Equal(sa.ResourceVersion))
	tokenSecret2, _ := member.CoreV1().Secrets(cli.MemberNamespace).Get(ctx, cli.TokenSecretName, metav1.GetOptions{})
	g.Expect(tokenSecret2.UID).To(Equal(tokenSecret.UID))
	g.Expect(tokenSecret2.ResourceVersion).To(Equal(tokenSecret.ResourceVersion))
	cr2, _ := member.RbacV1().ClusterRoles().Get(ctx, cli.RoleName, metav1.GetOptions{})
	g.Expect(cr2.ResourceVersion).To(Equal(cr.ResourceVersion))
}

// access is one question to the member's authorizer about the joined ServiceAccount.
type access struct {
	verb, group, resource, subresource, namespace, name, path string
}

func (a access) String() string {
	if a.path != "" {
		return a.verb + " " + a.path
	}
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	return strings.TrimSpace(a.verb + " " + r + " " + a.name + " in namespace " + a.namespace)
}

// allowed asks the member, with a SubjectAccessReview as `kubectl auth can-i --as` does, whether the joined
// ServiceAccount may do something. The groups are those its token carries.
func allowed(t *testing.T, member kubernetes.Interface, a access) bool {
	t.Helper()
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   saUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + cli.MemberNamespace, "system:authenticated"},
	}
	if a.path != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: a.verb, Path: a.path}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource,
			Subresource: a.subresource, Namespace: a.namespace, Name: a.name}
	}
	r, err := member.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// refusedEverywhere are what the joined ServiceAccount must never be allowed, in any mode.
var refusedEverywhere = []access{
	{verb: "create", resource: "pods", subresource: "exec", namespace: "default", name: "mysql-0"},
	{verb: "get", resource: "pods", subresource: "log", namespace: "default", name: "mysql-0"},
	{verb: "create", resource: "pods", namespace: "default"},
	{verb: "delete", resource: "pods", namespace: "default", name: "mysql-0"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: "default"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
	{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"},
	{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"},
	{verb: "impersonate", resource: "users", name: "admin"},
	{verb: "impersonate", resource: "serviceaccounts", namespace: "kube-system", name: "default"},
	{verb: "impersonate", resource: "groups", name: "system:masters"},
	{verb: "delete", resource: "nodes", name: "node-1"},
	{verb: "list", resource: "nodes"},
	{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "kube-system", name: "default"},
	{verb: "delete", resource: "namespaces", name: "kube-system"},
	{verb: "create", group: "apps", resource: "deployments", namespace: "default"},
	{verb: "update", group: "batch", resource: "jobs", subresource: "status", namespace: "default", name: "orders-restore"},
	{verb: "update", group: "apps", resource: "statefulsets", subresource: "status", namespace: "default", name: "mysql"},
	{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
	{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations"},
	{verb: "deletecollection", resource: "secrets", namespace: "default"},
}

func expectAccess(t *testing.T, member kubernetes.Interface, allow, refuse []access) {
	t.Helper()
	for _, a := range allow {
		if !allowed(t, member, a) {
			t.Errorf("%s: refused, but the manager needs it", a)
		}
	}
	for _, a := range refuse {
		if allowed(t, member, a) {
			t.Errorf("%s: allowed, but the manager does not need it", a)
		}
	}
}

// managerNeeds are the requests the manager makes in a member, in namespace ns ("" for cluster-wide lists).
func managerNeeds(ns string) []access {
	var out []access
	for _, k := range []struct{ group, resource string }{
		{"", "secrets"}, {"", "configmaps"}, {"", "services"}, {"", "persistentvolumeclaims"},
		{"apps", "statefulsets"}, {"policy", "poddisruptionbudgets"}, {"batch", "cronjobs"}, {"batch", "jobs"},
	} {
		out = append(out,
			access{verb: "list", group: k.group, resource: k.resource, namespace: ns},
			access{verb: "watch", group: k.group, resource: k.resource, namespace: ns})
		if ns == "" {
			ns = "default"
		}
		for _, v := range []string{"get", "create", "update", "patch", "delete"} {
			out = append(out, access{verb: v, group: k.group, resource: k.resource, namespace: ns, name: "orders"})
		}
	}
	out = append(out, access{verb: "list", resource: "pods", namespace: ns},
		access{verb: "get", resource: "pods", namespace: ns, name: "orders-0"})
	return append(out,
		access{verb: "get", path: "/readyz"}, access{verb: "get", path: "/version"},
		access{verb: "list", resource: "namespaces"}, access{verb: "watch", resource: "namespaces"})
}

func testClusterWideRBAC(e *env, t *testing.T) {
	allow := append(managerNeeds(""),
		access{verb: "create", resource: "namespaces"},
		access{verb: "patch", resource: "namespaces", name: "shop"},
		// Decision, documented in docs/hub.md (Registering members): the manager lists and watches Secrets cluster-wide today (its
		// member cache is filtered by label, which RBAC cannot express), so without --namespaces the
		// credential can read every Secret of the member. --namespaces is how to confine it.
		access{verb: "get", resource: "secrets", namespace: "kube-system", name: "any"},
	)
	expectAccess(t, e.members[awsMember], allow, refusedEverywhere)
}

func testConfinedJoin(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	member := e.members[gcpMember]

	// This member's kubeconfig has no CA (the administrator skips verification), so join takes the cluster CA
	// from the kube-root-ca.crt ConfigMap, which kube-controller-manager would publish.
	ca := e.fleet.Member(gcpMember).Config.CAData
	_, err := member.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cli.MemberNamespace}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = member.CoreV1().ConfigMaps(cli.MemberNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": string(ca)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := clientcmd.Load(e.fleet.Member(gcpMember).Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range kc.Clusters {
		c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
	}
	g.Expect(clientcmd.WriteToFile(*kc, e.memberPaths[gcpMember])).To(Succeed())

	// A stand-in for the token controller, which the test members do not run: it fills the token Secret with a
	// real token of the ServiceAccount, as kube-controller-manager would.
	tokenCtx, stop := context.WithCancel(ctx)
	defer stop()
	go fillTokenSecret(tokenCtx, member)

	o := e.joinOptions(gcpMember)
	o.Member.Context = "" // the file's current context
	o.Namespaces = []string{"shop", "billing"}
	o.TokenWait = time.Minute
	var out bytes.Buffer
	res, err := cli.Join(ctx, e.hubIn(""), o, &out)
	t.Log(out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.TokenSource).To(Equal(cli.TokenFromSecret))
	g.Expect(res.TokenExpiration).To(BeNil())
	g.Expect(out.String()).To(ContainSubstring("kube-root-ca.crt"))

	s := e.registration(t, gcpMember)
	g.Expect(s.Annotations).To(HaveKeyWithValue(v1alpha1.NamespacesAnnotation, "billing,shop"))
	g.Expect(s.Annotations).NotTo(HaveKey(v1alpha1.TokenExpirationAnnotation))
	reg, err := clientcmd.Load(s.Data[v1alpha1.KubeconfigKey])
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range reg.Clusters {
		g.Expect(c.CertificateAuthorityData).To(Equal(ca))
		g.Expect(c.InsecureSkipTLSVerify).To(BeFalse())
	}
	tokenSecret, err := member.CoreV1().Secrets(cli.MemberNamespace).Get(ctx, cli.TokenSecretName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tokenOf(t, s)).To(Equal(string(tokenSecret.Data[corev1.ServiceAccountTokenKey])))

	// In its namespaces the ServiceAccount may do what the manager does; outside them, nothing.
	allow := append(managerNeeds("shop"), managerNeeds("billing")...)
	allow = append(allow, access{verb: "patch", resource: "namespaces", name: "shop"}, access{verb: "get", resource: "namespaces", name: "shop"})
	refuse := append([]access{
		{verb: "get", resource: "secrets", namespace: "kube-system", name: "any"},
		{verb: "list", resource: "secrets"},
		{verb: "list", resource: "secrets", namespace: "default"},
		{verb: "create", group: "apps", resource: "statefulsets", namespace: "default"},
		{verb: "list", group: "apps", resource: "statefulsets"},
		{verb: "patch", resource: "namespaces", name: "default"},
		{verb: "create", resource: "namespaces"},
	}, refusedEverywhere...)
	expectAccess(t, member, allow, refuse)

	mc := memberClient(t, s)
	_, err = mc.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = mc.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a ConfigMap outside the namespaces: %v", err)

	// Joining again with fewer namespaces withdraws the access to the others.
	o.Namespaces = []string{"shop"}
	out.Reset()
	res, err = cli.Join(ctx, e.hubIn(""), o, &out)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(res.TokenSource).To(Equal(cli.TokenReused))
	g.Expect(e.registration(t, gcpMember).Annotations).To(HaveKeyWithValue(v1alpha1.NamespacesAnnotation, "shop"))
	_, err = member.RbacV1().Roles("billing").Get(ctx, cli.RoleName, metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Role in billing: %v", err)
	_, err = member.RbacV1().RoleBindings("billing").Get(ctx, cli.RoleName, metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RoleBinding in billing: %v", err)
	g.Expect(allowed(t, member, access{verb: "create", resource: "configmaps", namespace: "billing"})).To(BeFalse())
	g.Expect(allowed(t, member, access{verb: "create", resource: "configmaps", namespace: "shop"})).To(BeTrue())

	// The manager serves the confined member in its namespace and refuses the others.
	managerInConfinedMember(e, t)

	// unjoin removes the Roles too.
	out.Reset()
	g.Expect(cli.Unjoin(ctx, e.hubIn(""), cli.UnjoinOptions{Name: gcpMember, Member: o.Member}, &out)).To(Succeed(), out.String())
	roles, err := member.RbacV1().Roles(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=member-access"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(roles.Items).To(BeEmpty())
	bindings, err := member.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=member-access"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bindings.Items).To(BeEmpty())
}

// fillTokenSecret plays kube-controller-manager's token controller for the join's token Secret.
func fillTokenSecret(ctx context.Context, member kubernetes.Interface) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		s, err := member.CoreV1().Secrets(cli.MemberNamespace).Get(ctx, cli.TokenSecretName, metav1.GetOptions{})
		if err != nil || len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
			return
		}
		tr, err := member.CoreV1().ServiceAccounts(cli.MemberNamespace).CreateToken(ctx, cli.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return
		}
		s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tr.Status.Token)}
		_, _ = member.CoreV1().Secrets(cli.MemberNamespace).Update(ctx, s, metav1.UpdateOptions{})
	}, 100*time.Millisecond)
}

// newCluster is a MySQLCluster as an application team writes it.
func newCluster(ns, name string, members ...string) *v1alpha1.MySQLCluster {
	return &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MySQLClusterSpec{
			Version: "8.4", Replicas: 2,
			Placement: v1alpha1.Placement{Members: members},
			Storage:   v1alpha1.Storage{Size: resource.MustParse("1Gi")},
		},
	}
}

func (e *env) createNamespace(t *testing.T, ns string) {
	t.Helper()
	err := e.hub.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// createWithStatus creates a MySQLCluster and then writes its status through the status subresource, as the
// manager would. get and plan only read status, so this is what they are given in a real fleet too.
func (e *env) createWithStatus(t *testing.T, c *v1alpha1.MySQLCluster, status v1alpha1.MySQLClusterStatus) {
	t.Helper()
	ctx := context.Background()
	e.createNamespace(t, c.Namespace)
	if err := e.hub.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status = status
	if err := e.hub.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// rows are the lines of a table, split into cells (cells hold no spaces in these tests).
func rows(out string) [][]string {
	var r [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		r = append(r, strings.Fields(line))
	}
	return r
}

func testGetAndPlan(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	backup := metav1.NewTime(time.Now().Add(-30 * time.Hour).Truncate(time.Second))
	cond := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg,
			LastTransitionTime: metav1.Now(), ObservedGeneration: 1}}
	}
	e.createWithStatus(t, newCluster("shop", "orders", awsMember, gcpMember), v1alpha1.MySQLClusterStatus{
		ObservedGeneration: 1, Phase: v1alpha1.PhaseDegraded, ReadyMembers: "1/2", ReadyReplicas: "2/4",
		Serving: "2/4", StorageClasses: "gp3,pd-ssd", LastBackup: &backup,
		Conditions: cond(metav1.ConditionFalse, v1alpha1.ReasonNotReady, "gcp-test: unreachable"),
		Members: []v1alpha1.MemberStatus{
			{Name: gcpMember, Cloud: "gcp", Phase: v1alpha1.PhaseUnreachable, Replicas: 2, StorageClass: "pd-ssd",
				LastError: "dial tcp: connection refused"},
			{Name: awsMember, Cloud: "aws", Phase: v1alpha1.PhaseReady, Replicas: 2, ReadyReplicas: 2, StorageClass: "gp3",
				LastBackup: &backup, Replication: &v1alpha1.MemberReplication{Primary: "orders-1", ReplicasInSync: 1,
					RequestedPrimary: "orders-0", LastTransition: &v1alpha1.ReplicationTransition{Kind: "Failover",
						From: "orders-0", To: "orders-1", ObservedTime: &backup}}},
		},
	})
	paused := newCluster("shop", "catalog", awsMember)
	paused.Spec.Paused = true
	e.createWithStatus(t, paused, v1alpha1.MySQLClusterStatus{
		Phase: v1alpha1.PhasePaused, ReadyMembers: "0/1", ReadyReplicas: "0/2",
		Members: []v1alpha1.MemberStatus{{Name: awsMember, Phase: v1alpha1.PhasePaused, Replicas: 2, StorageClass: "gp3",
			Plan: []v1alpha1.PlannedObject{
				{Kind: "Namespace", Name: "shop", Action: "Unchanged"},
				{Kind: "Secret", Name: "catalog-credentials", Action: "Create"},
				{Kind: "StatefulSet", Name: "catalog", Action: "Update"},
			}}},
	})
	e.createWithStatus(t, newCluster("billing", "ledger", awsMember), v1alpha1.MySQLClusterStatus{})

	run := func(hub cli.Hub, o cli.GetOptions) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		g.Expect(cli.Get(ctx, hub, o, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})).To(Succeed())
		t.Logf("get %+v:\n%s%s", o, out.String(), errOut.String())
		return out.String(), errOut.String()
	}
	out, _ := run(e.hubIn("shop"), cli.GetOptions{})
	g.Expect(rows(out)).To(Equal([][]string{
		{"NAMESPACE/NAME", "MEMBER", "PHASE", "READY", "PRIMARY", "SERVING", "STORAGE", "CLASS", "LAST", "BACKUP"},
		{"shop/catalog", "0/1", "ready", "Paused", "-", "-", "-", "-", "-"},
		{awsMember, "Paused", "0/2", "-", "-", "gp3", "-"},
		{"shop/orders", "1/2", "ready", "Degraded", "False", "-", "2/4", "gp3,pd-ssd", "30h"},
		{awsMember, "Ready", "2/2", "orders-1→orders-0", "2/2", "gp3", "30h"},
		{gcpMember, "Unreachable", "0/2", "-", "-", "pd-ssd", "-"},
	}))

	out, _ = run(e.hubIn(""), cli.GetOptions{AllNamespaces: true})
	g.Expect(out).To(MatchRegexp(`(?m)^billing/ledger\s+-\s+-\s+-\s+-\s+-\s+-\s+-$`), "a MySQLCluster the manager has not reported yet")
	g.Expect(out).To(ContainSubstring("shop/orders"))

	out, _ = run(e.hubIn("shop"), cli.GetOptions{Name: "orders", Output: cli.OutputWide})
	g.Expect(out).NotTo(ContainSubstring("catalog"))
	g.Expect(out).To(ContainSubstring("dial tcp: connection refused"))
	g.Expect(out).To(ContainSubstring("gcp-test: unreachable"))
	g.Expect(out).To(ContainSubstring("Failover:orders-0→orders-1,30h-ago"), "the last change of primary, with when")

	out, _ = run(e.hubIn("shop"), cli.GetOptions{Name: "orders", Output: cli.OutputJSON})
	var views []cli.ClusterView
	g.Expect(json.Unmarshal([]byte(out), &views)).To(Succeed())
	g.Expect(views).To(HaveLen(1))
	g.Expect(views[0].Ready).To(Equal("False"))
	g.Expect(views[0].LastBackup.Time).To(BeTemporally("==", backup.Time))
	g.Expect(views[0].Members).To(HaveLen(2))
	g.Expect(views[0].Members[0]).To(Equal(cli.ClusterMemberView{Name: awsMember, Phase: "Ready", ReadyReplicas: 2, Replicas: 2,
		StorageClass: "gp3", LastBackup: views[0].Members[0].LastBackup,
		Replication: views[0].Members[0].Replication}))
	g.Expect(views[0].Members[0].Replication.RequestedPrimary).To(Equal("orders-0"))
	g.Expect(views[0].Serving).To(Equal("2/4"))

	out, _ = run(e.hubIn("shop"), cli.GetOptions{Output: cli.OutputYAML})
	g.Expect(yaml.Unmarshal([]byte(out), &views)).To(Succeed())
	g.Expect(views).To(HaveLen(2))

	_, errOut := run(e.hubIn("nothing-here"), cli.GetOptions{})
	g.Expect(errOut).To(ContainSubstring("No MySQLClusters found in namespace nothing-here"))
	g.Expect(cli.Get(ctx, e.hubIn("shop"), cli.GetOptions{Name: "missing"}, genericiooptions.IOStreams{Out: &bytes.Buffer{}})).
		To(MatchError(ContainSubstring("not found")))

	// plan
	var pout, perr bytes.Buffer
	g.Expect(cli.Plan(ctx, e.hubIn("shop"), cli.PlanOptions{Name: "catalog"}, genericiooptions.IOStreams{Out: &pout, ErrOut: &perr})).To(Succeed())
	t.Logf("plan:\n%s%s", pout.String(), perr.String())
	g.Expect(rows(pout.String())).To(Equal([][]string{
		{"MEMBER", "KIND", "NAME", "ACTION"},
		{awsMember, "Namespace", "shop", "Unchanged"},
		{awsMember, "Secret", "catalog-credentials", "Create"},
		{awsMember, "StatefulSet", "catalog", "Update"},
	}))
	g.Expect(perr.String()).To(BeEmpty())

	pout.Reset()
	g.Expect(cli.Plan(ctx, e.hubIn("shop"), cli.PlanOptions{Name: "catalog", Output: cli.OutputJSON}, genericiooptions.IOStreams{Out: &pout})).To(Succeed())
	var plan cli.PlanView
	g.Expect(json.Unmarshal(pout.Bytes(), &plan)).To(Succeed())
	g.Expect(plan.Paused).To(BeTrue())
	g.Expect(plan.Members).To(HaveLen(1))
	g.Expect(plan.Members[0].Objects).To(HaveLen(3))

	pout.Reset()
	perr.Reset()
	g.Expect(cli.Plan(ctx, e.hubIn("shop"), cli.PlanOptions{Name: "orders"}, genericiooptions.IOStreams{Out: &pout, ErrOut: &perr})).To(Succeed())
	g.Expect(pout.String()).To(BeEmpty())
	g.Expect(perr.String()).To(ContainSubstring("shop/orders is not paused"))
}

func testMembers(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Two registrations beside the joined one: one whose kubeconfig runs a command (the gate refuses it, so it
	// is never used), and one whose API server does not answer.
	evil := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/touch, args: [/tmp/pwned]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	gone, err := clientcmd.Write(func() clientcmdapi.Config {
		cfg, _ := clientcmd.Load(e.registration(t, awsMember).Data[v1alpha1.KubeconfigKey])
		for _, c := range cfg.Clusters {
			c.Server = "https://127.0.0.1:1"
		}
		return *cfg
	}())
	g.Expect(err).NotTo(HaveOccurred())
	for name, data := range map[string][]byte{"evil": evil, "gone": gone} {
		g.Expect(e.hub.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetNS, Labels: map[string]string{
				v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "azure", v1alpha1.RegionLabel: "westeurope"}},
			Data: map[string][]byte{v1alpha1.KubeconfigKey: data},
		})).To(Succeed())
	}
	defer func() {
		for _, name := range []string{"evil", "gone"} {
			_ = e.hub.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetNS}})
		}
	}()

	views, err := cli.ListMembers(ctx, e.hubIn(""), cli.MembersOptions{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(views).To(HaveLen(3))
	aws, evilView, goneView := views[0], views[1], views[2]
	g.Expect(aws.Name).To(Equal(awsMember))
	g.Expect(aws.Reachability).To(Equal(cli.Reachable), aws.Reason)
	g.Expect(aws.Version).To(Equal("v1.36.3"))
	g.Expect(aws.Cloud).To(Equal("aws"))
	g.Expect(aws.Region).To(Equal("eu-west-1"))
	g.Expect(*aws.Placed).To(Equal(2), "orders and catalog list aws-test in status; ledger has no status yet")
	g.Expect(evilView.Reachability).To(Equal(cli.Refused))
	g.Expect(evilView.Reason).To(ContainSubstring("exec"))
	g.Expect("/tmp/pwned").NotTo(BeAnExistingFile(), "the refused kubeconfig's command ran")
	g.Expect(goneView.Reachability).To(Equal(cli.Unreachable))
	g.Expect(*goneView.Placed).To(Equal(0))

	var out, errOut bytes.Buffer
	g.Expect(cli.Members(ctx, e.hubIn(""), cli.MembersOptions{Timeout: 5 * time.Second}, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})).To(Succeed())
	t.Logf("members:\n%s%s", out.String(), errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(4))
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "CLOUD", "REGION", "REACHABLE", "VERSION", "PLACED", "OWNER"}))
	g.Expect(strings.Fields(lines[1])).To(Equal([]string{awsMember, "aws", "eu-west-1", "yes", "v1.36.3", "2", "-"}), "no manager runs")
	g.Expect(lines[2]).To(MatchRegexp(`^evil\s+azure\s+westeurope\s+refused: .*exec`))
	g.Expect(lines[3]).To(MatchRegexp(`^gone\s+azure\s+westeurope\s+no: `))

	out.Reset()
	g.Expect(cli.Members(ctx, e.hubIn(""), cli.MembersOptions{Output: cli.OutputWide, Timeout: 5 * time.Second}, genericiooptions.IOStreams{Out: &out})).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("TOKEN EXPIRES"))
	g.Expect(out.String()).To(ContainSubstring("gp3-fast"))

	out.Reset()
	g.Expect(cli.Members(ctx, e.hubIn(""), cli.MembersOptions{Output: cli.OutputJSON, Timeout: 5 * time.Second}, genericiooptions.IOStreams{Out: &out})).To(Succeed())
	var parsed []cli.MemberView
	g.Expect(json.Unmarshal(out.Bytes(), &parsed)).To(Succeed())
	g.Expect(parsed).To(HaveLen(3))
	g.Expect(parsed[0].Version).To(Equal("v1.36.3"))

	// OWNER: the leader works in every member.
	leases := e.fleet.Hub.Clientset().CoordinationV1().Leases(fleetNS)
	leader, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: cli.ManagerLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("manager-0_1234")}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = leases.Delete(ctx, leader.Name, metav1.DeleteOptions{}) }()
	views, err = cli.ListMembers(ctx, e.hubIn(""), cli.MembersOptions{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	for _, v := range views {
		g.Expect(v.Owner).To(Equal("manager-0_1234"), v.Name)
	}
	out.Reset()
	g.Expect(cli.Members(ctx, e.hubIn(""), cli.MembersOptions{Timeout: 5 * time.Second}, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})).To(Succeed())
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(strings.Fields(lines[1])).To(Equal([]string{awsMember, "aws", "eu-west-1", "yes", "v1.36.3", "2", "manager-0_1234"}))

	// The hand-written MySQLClusters of the previous step are not the manager's; they go before it starts.
	for _, key := range []client.ObjectKey{{Namespace: "shop", Name: "orders"}, {Namespace: "shop", Name: "catalog"}, {Namespace: "billing", Name: "ledger"}} {
		g.Expect(e.hub.Delete(ctx, &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})).To(Succeed())
	}
}

// runManager runs the hub manager in-process for the rest of the test; its log is shown if the test fails.
func runManager(e *env, t *testing.T) {
	g := NewWithT(t)
	// controller-runtime takes its logger once per process, so every manager of this test binary logs here.
	managerLogOnce.Do(func() {
		f, err := os.CreateTemp("", "mysqlfleet-cli-manager-*.log")
		if err != nil {
			panic(err)
		}
		managerLogPath = f.Name()
		ctrl.SetLogger(zap.New(zap.WriteTo(f), zap.UseDevMode(true)))
	})
	logPath := managerLogPath
	mgr, err := mysqlcluster.New(e.fleet.Hub.Config, mysqlcluster.Options{
		Namespace: fleetNS, MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipControllerNameValidation: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(mgrCtx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			if len(data) > 30000 {
				data = data[len(data)-30000:]
			}
			t.Logf("manager log (tail):\n%s", data)
		}
	})
}

func testManagerWithJoinedMember(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	runManager(e, t)

	// Every kind the manager writes: a backup to a PVC adds the CronJob and the backup PersistentVolumeClaim.
	c := newCluster("inventory", "stock", awsMember)
	c.Spec.Backup = &v1alpha1.Backup{Schedule: "H 3 * * *",
		Target: v1alpha1.BackupTarget{PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")}}}
	e.createNamespace(t, c.Namespace)
	g.Expect(e.hub.Create(ctx, c)).To(Succeed())
	key := client.ObjectKeyFromObject(c)

	member := e.members[awsMember]
	g.Eventually(func() error {
		_, err := member.AppsV1().StatefulSets("inventory").Get(ctx, c.StatefulSetName(), metav1.GetOptions{})
		return err
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	// Every apply succeeded with the joined credentials: the member's Applied condition says so.
	g.Eventually(func(g Gomega) {
		var got v1alpha1.MySQLCluster
		g.Expect(e.hub.Get(ctx, key, &got)).To(Succeed())
		g.Expect(got.Status.Members).To(HaveLen(1))
		m := got.Status.Members[0]
		g.Expect(m.LastError).To(BeEmpty())
		g.Expect(meta.IsStatusConditionTrue(m.Conditions, v1alpha1.MemberConditionApplied)).To(BeTrue(), "%+v", m.Conditions)
		g.Expect(m.StorageClass).To(Equal("gp3-fast"), "the storage class join registered")
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	for _, get := range []func() error{
		func() error {
			_, err := member.CoreV1().Services("inventory").Get(ctx, c.ServiceName(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := member.CoreV1().ConfigMaps("inventory").Get(ctx, c.ConfigMapName(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := member.CoreV1().Secrets("inventory").Get(ctx, c.CredentialsSecretName(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := member.PolicyV1().PodDisruptionBudgets("inventory").Get(ctx, c.PodDisruptionBudgetName(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := member.BatchV1().CronJobs("inventory").Get(ctx, c.BackupCronJobName(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := member.CoreV1().PersistentVolumeClaims("inventory").Get(ctx, c.BackupPVCName(), metav1.GetOptions{})
			return err
		},
	} {
		g.Expect(get()).To(Succeed())
	}

	var out bytes.Buffer
	g.Expect(cli.Get(ctx, e.hubIn("inventory"), cli.GetOptions{}, genericiooptions.IOStreams{Out: &out})).To(Succeed())
	t.Logf("get:\n%s", out.String())
	g.Expect(out.String()).To(MatchRegexp(`(?m)^\s+` + awsMember + `\s+\w+\s+0/2\s+-\s+-\s+gp3-fast\s`))

	// Deleting it removes the member objects, again with the joined credentials.
	g.Expect(e.hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.hub.Get(ctx, key, &v1alpha1.MySQLCluster{}))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
	for _, list := range []func() (int, error){
		func() (int, error) {
			l, err := member.AppsV1().StatefulSets("inventory").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := member.BatchV1().CronJobs("inventory").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
	} {
		g.Expect(list()).To(Equal(0))
	}
}

func testRotateToken(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	old := tokenOf(t, e.registration(t, awsMember))
	o := e.awsJoin()
	o.RotateToken = true
	var out bytes.Buffer
	res, err := cli.Join(ctx, e.hubIn(""), o, &out)
	t.Log(out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.TokenSource).To(Equal(cli.TokenRequested))
	s := e.registration(t, awsMember)
	g.Expect(tokenOf(t, s)).NotTo(Equal(old))
	g.Expect(whoami(e, awsMember, tokenOf(t, s))).To(Equal(saUser))
	g.Eventually(func() bool {
		_, err := whoami(e, awsMember, old)
		return apierrors.IsUnauthorized(err)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), "the rotated-out token still works")
}

func testUnjoin(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	member := e.members[awsMember]
	token := tokenOf(t, e.registration(t, awsMember))
	// A deletion the hub still owes the member, as the manager records it.
	owed := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gone", UID: "0e0e0e0e-1111-4222-8333-444455556666"}}
	record := leftovers.NewRecord(owed, awsMember).ConfigMap(fleetNS)
	g.Expect(e.hub.Create(ctx, record)).To(Succeed())
	var out bytes.Buffer
	g.Expect(cli.Unjoin(ctx, e.hubIn(""), cli.UnjoinOptions{Name: awsMember, Member: e.joinOptions(awsMember).Member}, &out)).To(Succeed())
	t.Log(out.String())
	g.Expect(out.String()).To(ContainSubstring("the manager can no longer reach " + awsMember))
	g.Expect(out.String()).To(ContainSubstring("kept 1 pending teardown record(s) of " + awsMember))
	g.Expect(e.hub.Get(ctx, client.ObjectKeyFromObject(record), &corev1.ConfigMap{})).To(Succeed(),
		"unjoin keeps what the hub owes the member, for when it is joined again")

	err := e.hub.Get(ctx, client.ObjectKey{Namespace: fleetNS, Name: awsMember}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "registration Secret: %v", err)
	for what, err := range map[string]error{
		"ServiceAccount":     get(member.CoreV1().ServiceAccounts(cli.MemberNamespace).Get(ctx, cli.ServiceAccountName, metav1.GetOptions{})),
		"token Secret":       get(member.CoreV1().Secrets(cli.MemberNamespace).Get(ctx, cli.TokenSecretName, metav1.GetOptions{})),
		"ClusterRole":        get(member.RbacV1().ClusterRoles().Get(ctx, cli.RoleName, metav1.GetOptions{})),
		"ClusterRoleBinding": get(member.RbacV1().ClusterRoleBindings().Get(ctx, cli.RoleName, metav1.GetOptions{})),
	} {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %v", what, err)
	}
	_, err = member.CoreV1().Namespaces().Get(ctx, cli.MemberNamespace, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the namespace is kept")
	g.Eventually(func() bool {
		_, err := whoami(e, awsMember, token)
		return apierrors.IsUnauthorized(err)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), "the unjoined token still works")

	// Again: nothing left to do, no error; --forget-pending drops the records of a member gone for good.
	out.Reset()
	g.Expect(cli.Unjoin(ctx, e.hubIn(""), cli.UnjoinOptions{Name: awsMember, Member: e.joinOptions(awsMember).Member,
		ForgetPending: true}, &out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("no registration Secret"))
	g.Expect(out.String()).To(ContainSubstring("deleted 1 pending teardown record(s) of " + awsMember))
	err = e.hub.Get(ctx, client.ObjectKeyFromObject(record), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "record: %v", err)

	members, err := cli.ListMembers(ctx, e.hubIn(""), cli.MembersOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(members).To(BeEmpty())
	var errOut bytes.Buffer
	g.Expect(cli.Members(ctx, e.hubIn(""), cli.MembersOptions{}, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})).To(Succeed())
	g.Expect(errOut.String()).To(ContainSubstring("No members registered"))
}

func get[T any](_ T, err error) error { return err }

// A member joined with --namespaces is served in those namespaces, with a cache confined to them, and a
// MySQLCluster from another namespace is reported as not placeable there instead of failing the member.
func managerInConfinedMember(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	runManager(e, t)
	inside := newCluster("shop", "carts", gcpMember)
	outside := newCluster("elsewhere", "carts", gcpMember)
	for _, c := range []*v1alpha1.MySQLCluster{inside, outside} {
		e.createNamespace(t, c.Namespace)
		g.Expect(e.hub.Create(ctx, c)).To(Succeed())
	}
	member := e.members[gcpMember]
	g.Eventually(func() error {
		_, err := member.AppsV1().StatefulSets("shop").Get(ctx, inside.StatefulSetName(), metav1.GetOptions{})
		return err
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var got v1alpha1.MySQLCluster
		g.Expect(e.hub.Get(ctx, client.ObjectKeyFromObject(outside), &got)).To(Succeed())
		g.Expect(got.Status.Members).To(HaveLen(1))
		applied := meta.FindStatusCondition(got.Status.Members[0].Conditions, v1alpha1.MemberConditionApplied)
		g.Expect(applied).NotTo(BeNil())
		g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonNamespaceNotAllowed))
		g.Expect(applied.Message).To(ContainSubstring("allows only namespaces shop, not elsewhere"))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	_, err := member.AppsV1().StatefulSets("elsewhere").Get(ctx, outside.StatefulSetName(), metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

var (
	managerLogOnce sync.Once
	managerLogPath string
)

func testBackups(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	at := func(h int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(h) * time.Hour)) }
	c := newCluster("shop", "ledger", awsMember, gcpMember)
	c.Spec.Backup = &v1alpha1.Backup{Schedule: "@daily", Target: v1alpha1.BackupTarget{
		PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")}}}
	e.createWithStatus(t, c, v1alpha1.MySQLClusterStatus{Members: []v1alpha1.MemberStatus{
		{Name: awsMember, Replicas: 2, Backups: &v1alpha1.MemberBackups{
			LastSuccessful: &v1alpha1.BackupRecord{Name: "20261124T050000000Z", Time: at(2), Size: 3 << 20, Pod: "ledger-1",
				GTIDPosition: "0-1001-9"},
			Retained: []v1alpha1.BackupRecord{
				{Name: "20261124T050000000Z", Time: at(2), Size: 3 << 20, Pod: "ledger-1", GTIDPosition: "0-1001-9",
					Method: v1alpha1.BackupPhysical},
				{Name: "20261124T030000000Z", Time: at(0), Size: 2 << 20, Pod: "ledger-1", GTIDPosition: "0-1001-5"},
			}},
			// A segment lost between the two backups: the older one rolls forward to the gap only.
			Archive: &v1alpha1.MemberArchive{State: v1alpha1.ArchiveArchiving, Since: at(0), Source: "ledger-1",
				LatestTime: ptr.To(at(5)), LatestPosition: "0-1001-14",
				Gaps: []v1alpha1.ArchiveGap{{From: "0-1001-7", To: "0-1001-8", Reached: ptr.To(at(1))}}}},
		{Name: gcpMember, Replicas: 2, Backups: &v1alpha1.MemberBackups{
			LastSuccessful: &v1alpha1.BackupRecord{Name: "20261124T040000000Z", Time: at(1), Size: 1 << 10, Pod: "ledger-0"},
			LastFailure:    &v1alpha1.BackupFailure{Time: at(3), Reason: "no server answers"}},
			Archive: &v1alpha1.MemberArchive{State: v1alpha1.ArchiveArchiving, Since: at(0), Source: "ledger-0",
				LatestTime: ptr.To(at(4)), LatestPosition: "0-1001-12"}},
	}})
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}
	g.Expect(cli.Backups(ctx, e.hubIn("shop"), cli.BackupsOptions{Name: "ledger"}, streams)).To(Succeed())
	t.Logf("backups:\n%s%s", out.String(), errOut.String())
	g.Expect(rows(out.String())).To(Equal([][]string{
		{"TIME", "MEMBER", "BACKUP", "METHOD", "SIZE", "DURATION", "POD", "GTID"},
		{"2026-11-24T05:00:00Z", awsMember, "20261124T050000000Z", "Physical", "3.0MiB", "0s", "ledger-1", "0-1001-9"},
		{"2026-11-24T04:00:00Z", gcpMember, "20261124T040000000Z", "Logical", "1.0KiB", "0s", "ledger-0", "-"},
		{"2026-11-24T03:00:00Z", awsMember, "20261124T030000000Z", "Logical", "2.0MiB", "0s", "ledger-1", "0-1001-5"},
	}))
	g.Expect(errOut.String()).To(ContainSubstring("member " + gcpMember + ": the last backup Job failed"))
	g.Expect(errOut.String()).To(ContainSubstring("member " + gcpMember + ": binary log Archiving from ledger-0, " +
		"newest stored transaction 2026-11-24T07:00:00Z (0-1001-12)\n"))
	g.Expect(errOut.String()).To(ContainSubstring("member " + awsMember + ": binary log Archiving from ledger-1, " +
		"newest stored transaction 2026-11-24T08:00:00Z (0-1001-14); 1 gap(s), see restore-points\n"))

	// restore-points: each backup's window with its member's archive.
	out.Reset()
	g.Expect(cli.RestorePoints(ctx, e.hubIn("shop"), cli.RestorePointsOptions{Name: "ledger"}, streams)).To(Succeed())
	t.Logf("restore-points:\n%s", out.String())
	g.Expect(rows(out.String())).To(Equal([][]string{
		{"MEMBER", "BACKUP", "FROM", "TO", "POSITION", "NOTE"},
		{awsMember, "20261124T050000000Z", "2026-11-24T05:00:00Z", "2026-11-24T08:00:00Z", "0-1001-14", "-"},
		{gcpMember, "20261124T040000000Z", "2026-11-24T04:00:00Z", "2026-11-24T07:00:00Z", "0-1001-12", "-"},
		{awsMember, "20261124T030000000Z", "2026-11-24T03:00:00Z", "2026-11-24T04:00:00Z", "0-1001-7",
			"a", "gap", "in", "the", "archive", "from", "0-1001-7", "to", "0-1001-8"},
	}))

	// backup asks for one now, a second after the member's last outcome if that is later than now.
	err := cli.BackupNow(ctx, e.hubIn("shop"), cli.BackupNowOptions{Name: "ledger", Member: gcpMember,
		Now: func() time.Time { return t0 }}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	var got v1alpha1.MySQLCluster
	g.Expect(e.hub.Get(ctx, client.ObjectKeyFromObject(c), &got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(v1alpha1.BackupNowAnnotation, gcpMember+"=2026-11-24T06:00:01Z"))
	g.Expect(cli.BackupNow(ctx, e.hubIn("shop"), cli.BackupNowOptions{Name: "ledger", Member: "nowhere"}, io.Discard)).
		To(MatchError(ContainSubstring("not placed on member nowhere")))
	g.Expect(e.hub.Delete(ctx, &got)).To(Succeed()) // later steps count the MySQLClusters on each member
}

func testRebuild(e *env, t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("shop", "cart", awsMember, gcpMember)
	c.Spec.Replicas = 3
	// Another tool's annotation and another member's request stay as they are.
	c.Annotations = map[string]string{"example.com/owner": "payments",
		v1alpha1.RebuildAnnotation: gcpMember + "/cart-1=2026-11-01T00:00:00Z"}
	primary := func(pod string) *v1alpha1.MemberReplication { return &v1alpha1.MemberReplication{Primary: pod} }
	e.createWithStatus(t, c, v1alpha1.MySQLClusterStatus{Members: []v1alpha1.MemberStatus{
		{Name: awsMember, Replicas: 3, Replication: primary("cart-0")},
		{Name: gcpMember, Replicas: 3, Replication: primary("cart-2")},
	}})
	key := client.ObjectKeyFromObject(c)
	requests := func() string {
		var got v1alpha1.MySQLCluster
		g.Expect(e.hub.Get(ctx, key, &got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKeyWithValue("example.com/owner", "payments"))
		return got.Annotations[v1alpha1.RebuildAnnotation]
	}
	clock := func(s string) func() time.Time {
		return func() time.Time { return time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC).Add(mustDuration(t, s)) }
	}
	rebuild := func(member, pod, at string) (string, error) {
		var out bytes.Buffer
		err := cli.Rebuild(ctx, e.hubIn("shop"), cli.RebuildOptions{Name: "cart", Member: member, Pod: pod,
			Now: clock(at)}, &out)
		return out.String(), err
	}

	out, err := rebuild(awsMember, "cart-2", "1.5s")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("rebuild:\n%s", out)
	g.Expect(requests()).To(Equal(gcpMember + "/cart-1=2026-11-01T00:00:00Z," + awsMember + "/cart-2=2026-11-28T10:00:01.5Z"))
	g.Expect(out).To(ContainSubstring("Asked for a rebuild of cart-2 in member " + awsMember + " of shop/cart " +
		"(request 2026-11-28T10:00:01.5Z)"))
	g.Expect(out).To(ContainSubstring("discarding every transaction it holds that the primary lacks"))
	g.Expect(out).To(ContainSubstring(`kubectl get mysqlclusters.mysqlfleet.io cart -n shop -o jsonpath=` +
		`'{.status.members[?(@.name=="` + awsMember + `")].replication.rebuilds}'`))

	// A second request for the same server replaces the first; one for another server is added.
	_, err = rebuild(awsMember, "cart-2", "2s")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = rebuild(gcpMember, "cart-0", "3s")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v1alpha1.RebuildRequests(requests())).To(ConsistOf(
		v1alpha1.RebuildRequest{Member: gcpMember, Pod: "cart-1", ID: "2026-11-01T00:00:00Z"},
		v1alpha1.RebuildRequest{Member: awsMember, Pod: "cart-2", ID: "2026-11-28T10:00:02Z"},
		v1alpha1.RebuildRequest{Member: gcpMember, Pod: "cart-0", ID: "2026-11-28T10:00:03Z"}))

	// Refused, and nothing written: a member it is not placed on, a Pod that is not one of its StatefulSet's,
	// the member's primary (another member's primary is just a replica here).
	before := requests()
	for _, tc := range []struct{ member, pod, want string }{
		{"nowhere", "cart-1", "not placed on member nowhere"},
		{awsMember, "cart-3", "cart-3 is not a Pod of shop/cart: its Pods are cart-0 to cart-2"},
		{awsMember, "cart-01", "not a Pod of shop/cart"},
		{awsMember, "cart--1", "not a Pod of shop/cart"},
		{awsMember, "ledger-1", "not a Pod of shop/cart"},
		{awsMember, "cart", "not a Pod of shop/cart"},
		{awsMember, "cart-0", "cart-0 is the primary of shop/cart in member " + awsMember},
		{gcpMember, "cart-2", "cart-2 is the primary of shop/cart in member " + gcpMember},
	} {
		_, err := rebuild(tc.member, tc.pod, "4s")
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)), "%s/%s", tc.member, tc.pod)
	}
	g.Expect(requests()).To(Equal(before))

	// The patch carries the resourceVersion it read: a request made against a stale read conflicts, is read
	// again, and loses neither its own entry nor the one written in between.
	var got v1alpha1.MySQLCluster
	g.Expect(e.hub.Get(ctx, key, &got)).To(Succeed())
	raced := false
	racing := func() time.Time {
		if !raced {
			raced = true
			var other v1alpha1.MySQLCluster
			g.Expect(e.hub.Get(ctx, key, &other)).To(Succeed())
			other.Annotations[v1alpha1.RebuildAnnotation] += "," + awsMember + "/cart-1=2026-11-28T10:00:05Z"
			g.Expect(e.hub.Update(ctx, &other)).To(Succeed())
		}
		return clock("6s")()
	}
	g.Expect(cli.Rebuild(ctx, e.hubIn("shop"), cli.RebuildOptions{Name: "cart", Member: gcpMember, Pod: "cart-1",
		Now: racing}, io.Discard)).To(Succeed())
	g.Expect(v1alpha1.RebuildRequests(requests())).To(ConsistOf(
		v1alpha1.RebuildRequest{Member: gcpMember, Pod: "cart-1", ID: "2026-11-28T10:00:06Z"},
		v1alpha1.RebuildRequest{Member: awsMember, Pod: "cart-2", ID: "2026-11-28T10:00:02Z"},
		v1alpha1.RebuildRequest{Member: gcpMember, Pod: "cart-0", ID: "2026-11-28T10:00:03Z"},
		v1alpha1.RebuildRequest{Member: awsMember, Pod: "cart-1", ID: "2026-11-28T10:00:05Z"}))
	g.Expect(e.hub.Delete(ctx, &got)).To(Succeed()) // later steps count the MySQLClusters on each member
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
