package charts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

const (
	memberName = "aws-eu-west-1"
	// Generous bounds for a shared, slow machine; nothing asserts how fast anything is.
	timeout = 2 * time.Minute
	polling = 250 * time.Millisecond
)

// TestInstallUpgradeUninstall installs the chart with helm into a hub of the test fleet, upgrades it, then runs
// the manager as the Deployment would: the Deployment's own arguments, the chart's ServiceAccount (a token from
// the TokenRequest API) and so the chart's RBAC, in the release namespace. The manager must reconcile the
// MySQLCluster that the install's notes suggest into the member without being refused anything, and the
// ServiceAccount must not read Secrets outside the release namespace. Last, helm uninstall must leave the CRD
// and the MySQLClusters, and a new install must adopt that CRD.
//
// The Deployment's Pods never run (the hub has no kubelet); the manager process stands in for them.
func TestInstallUpgradeUninstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, defs, err := clusters.Fleet()
	g.Expect(err).NotTo(HaveOccurred())
	i := slices.IndexFunc(defs, func(d clusters.Definition) bool { return d.Name == memberName })
	g.Expect(i).To(BeNumerically(">=", 0), "clusters/ defines no member %s", memberName)
	// No CRD is installed up front: the chart brings it.
	fleet := testfleet.ForTest(t, testfleet.Options{Members: []clusters.Definition{defs[i]}})
	scheme := mysqlcluster.Scheme()
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	hub, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	mem := fleet.Member(memberName)
	member, err := client.New(mem.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	helm := helmConfig(t, fleet.Hub.KubeconfigPath)
	ch := loadChart(t)

	// helm install, with the defaults.
	install := action.NewInstall(helm)
	install.ReleaseName = releaseName
	install.Namespace = releaseNS
	install.CreateNamespace = true
	install.Timeout = timeout
	rel, err := install.Run(ch, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Status).To(Equal(release.StatusDeployed))
	g.Expect(rel.Version).To(Equal(1))
	notes := rel.Info.Notes

	var crd apiextensionsv1.CustomResourceDefinition
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "mysqlclusters.mysqlfleet.io"}, &crd)).To(Succeed())
		g.Expect(crd.Status.Conditions).To(ContainElement(And(
			HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "the chart's CRD is established")
	var dep appsv1.Deployment
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: fullName}, &dep)).To(Succeed())
	g.Expect(dep.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))

	// helm upgrade with other values: the Deployment changes, the CRD stays and is still kept on uninstall.
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace = releaseNS
	upgrade.Timeout = timeout
	rel, err = upgrade.Run(releaseName, ch, map[string]any{
		"memberHealthInterval": "2s",
		"extraArgs":            []any{"--zap-log-level=4"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Status).To(Equal(release.StatusDeployed))
	g.Expect(rel.Version).To(Equal(2))
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&dep), &dep)).To(Succeed())
	g.Expect(dep.Generation).To(BeEquivalentTo(2))
	args := dep.Spec.Template.Spec.Containers[0].Args
	g.Expect(args).To(ContainElements("--namespace="+releaseNS, "--leader-elect=true", "--member-health-interval=2s", "--zap-log-level=4"))
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&crd), &crd)).To(Succeed())
	g.Expect(crd.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))

	// The chart's ServiceAccount, with a token of its own.
	saName := dep.Spec.Template.Spec.ServiceAccountName
	saKubeconfig := serviceAccountKubeconfig(t, fleet.Hub, releaseNS, saName)
	saConfig, err := clientcmd.BuildConfigFromFlags("", saKubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	asSA, err := client.New(saConfig, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	// It reads Secrets in the release namespace only: the API server refuses the others.
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}})).To(Succeed())
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "not-yours"}})).To(Succeed())
	var secret corev1.Secret
	err = asSA.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: "not-yours"}, &secret)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "get a Secret in another namespace: %v", err)
	err = asSA.List(ctx, &corev1.SecretList{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list Secrets in every namespace: %v", err)
	g.Expect(asSA.List(ctx, &corev1.SecretList{}, client.InNamespace(releaseNS))).To(Succeed())
	// What else it may and may not do, asked of the API server's authorizer.
	user := "system:serviceaccount:" + releaseNS + ":" + saName
	for _, a := range []struct {
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "elsewhere"}, false},
		{authorizationv1.ResourceAttributes{Verb: "watch", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Verb: "watch", Resource: "secrets", Namespace: releaseNS}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: releaseNS}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "elsewhere"}, false},
		{authorizationv1.ResourceAttributes{Verb: "watch", Group: v1alpha1.GroupVersion.Group, Resource: "mysqlclusters"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: v1alpha1.GroupVersion.Group, Resource: "mysqlclusters", Subresource: "status", Namespace: "shop"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: v1alpha1.GroupVersion.Group, Resource: "mysqlclusters", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Group: v1alpha1.GroupVersion.Group, Resource: "mysqlclusters", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: "shop"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "statefulsets", Namespace: "shop"}, false},
		{authorizationv1.ResourceAttributes{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a.attrs}}
		g.Expect(hub.Create(ctx, sar)).To(Succeed())
		g.Expect(sar.Status.Allowed).To(Equal(a.allowed), "%s may %s %+v", saName, a.attrs.Verb, a.attrs)
	}

	// A member, and the MySQLCluster of the install's notes placed on it.
	registerMember(g, hub, mem)
	c := notesExample(g, notes, memberName)
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}})).To(Succeed())
	g.Expect(hub.Create(ctx, c)).To(Succeed())

	// The manager as the Deployment runs it: its arguments, then what a process outside the cluster needs.
	// The flag package lets a later flag win, so the servers are turned off after the chart's ports.
	mgr := startManager(t, slices.Concat(args, []string{
		"--kubeconfig=" + saKubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}))

	var sts appsv1.StatefulSet
	stsKey := client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}
	g.Eventually(func() error { return member.Get(ctx, stsKey, &sts) }).
		WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "StatefulSet %s in member %s", stsKey, memberName)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "the MySQLCluster's status has observedGeneration")
	var lease coordinationv1.Lease
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: "mysqlfleet-manager"}, &lease)).To(Succeed())
	g.Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).NotTo(BeEmpty(), "the manager leads through a Lease in the release namespace")
	// The chart's RBAC covers everything the manager did: the API server refused it nothing.
	g.Expect(linesWith(mgr.log(), "forbidden")).To(BeEmpty(), "requests of the manager that the API server refused")

	// helm uninstall removes the manager's objects and leaves the CRD, so the MySQLClusters survive.
	mgr.stop(t)
	res, err := action.NewUninstall(helm).Run(releaseName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Info).To(ContainSubstring("mysqlclusters.mysqlfleet.io"), "helm reports the kept CRD")
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: fullName}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: saName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fullName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: fullName}},
	} {
		g.Eventually(func() error { return hub.Get(ctx, client.ObjectKeyFromObject(o), o) }).
			WithTimeout(timeout).WithPolling(polling).Should(Satisfy(apierrors.IsNotFound), "%T %s is deleted", o, o.GetName())
	}
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&crd), &crd)).To(Succeed())
	g.Expect(crd.DeletionTimestamp).To(BeNil())
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())

	// Installing again adopts the kept CRD.
	install = action.NewInstall(helm)
	install.ReleaseName = releaseName
	install.Namespace = releaseNS
	install.Timeout = timeout
	rel, err = install.Run(ch, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Status).To(Equal(release.StatusDeployed))
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&crd), &crd)).To(Succeed())
	g.Expect(crd.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", releaseName))
}

// notesExample reads the example MySQLCluster of the chart's notes, placed on member.
func notesExample(g Gomega, notes, member string) *v1alpha1.MySQLCluster {
	start := strings.Index(notes, "  apiVersion: "+v1alpha1.GroupVersion.String())
	g.Expect(start).To(BeNumerically(">=", 0), "the notes show a MySQLCluster:\n%s", notes)
	block, _, _ := strings.Cut(notes[start:], "\n\n")
	var doc strings.Builder
	for _, l := range strings.Split(block, "\n") {
		doc.WriteString(strings.TrimPrefix(l, "  ") + "\n")
	}
	var c v1alpha1.MySQLCluster
	g.Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(doc.String(), "<member>", member)), &c)).To(Succeed())
	return &c
}

// helmConfig is helm's action configuration for a cluster, as `helm --kubeconfig K --namespace N` builds it,
// with its discovery cache in the test's directory and no HELM_* variables read from the environment.
func helmConfig(t *testing.T, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = ptr.To(kubeconfig)
	flags.Namespace = ptr.To(releaseNS)
	flags.CacheDir = ptr.To(t.TempDir())
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, releaseNS, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the ServiceAccount with a token from the
// TokenRequest API, as the kubelet would mount it into the manager's Pods.
func serviceAccountKubeconfig(t *testing.T, hub *testfleet.Cluster, namespace, name string) string {
	t.Helper()
	tr, err := hub.Clientset().CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	ca := hub.Config.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(hub.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub.Config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "serviceaccount.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// registerMember stores the member's kubeconfig in the release namespace, as `kubectl mysqlfleet join` does.
func registerMember(g Gomega, hub client.Client, m *testfleet.Cluster) {
	labels := map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: m.Cloud, v1alpha1.RegionLabel: m.Region}
	for k, v := range m.Labels {
		labels[k] = v
	}
	g.Expect(hub.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: m.Name, Labels: labels},
		Data:       map[string][]byte{v1alpha1.KubeconfigKey: m.Kubeconfig},
	})).To(Succeed())
}

// managerProcess is the manager binary running as the chart's ServiceAccount.
type managerProcess struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// startManager starts the manager with its output in a file. The kernel kills it if the test binary dies
// (Pdeathsig); the test kills it when it ends, and shows its log if it failed.
func startManager(t *testing.T, args []string) *managerProcess {
	t.Helper()
	p := &managerProcess{logPath: filepath.Join(t.TempDir(), "manager.log"), done: make(chan struct{})}
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Starting %s %v", managerBin, args)
	p.cmd = exec.Command(managerBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	// The manager must take its namespace from the chart's argument, not from the environment.
	p.cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "POD_NAMESPACE=") })
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("starting the manager: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			data := []byte(p.log())
			if len(data) > 30000 {
				data = data[len(data)-30000:]
			}
			t.Logf("manager log (tail):\n%s", data)
		}
	})
	return p
}

// stop ends the manager as the kubelet would, with SIGTERM, and waits for it.
func (p *managerProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatal("the manager did not stop on SIGTERM")
	}
}

// linesWith returns the lines of text that contain s.
func linesWith(text, s string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, l)
		}
	}
	return lines
}

func (p *managerProcess) log() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}
