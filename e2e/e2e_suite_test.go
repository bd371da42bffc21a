//go:build e2e

// Package e2e is mysqlfleet's end-to-end suite: the whole product as a user meets it, on a fleet from clusters/
// (a hub and aws, azure and gcp members). The manager runs as two replicas with leader election, members are
// registered as Secrets, MySQLClusters are placed across the clouds and faults are injected. Run it with
// `make test-e2e` (the local fleet) or `make test-e2e-kind` (kind clusters: E2E_PROVIDER=kind), the same specs on
// both; specs that need what only one provider offers carry a Capability label.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/localfleet"
)

const (
	namespace = "mysqlfleet-system"
	release   = "mysqlfleet"
)

var (
	provider  Provider
	hub       *Cluster
	hubClient client.Client
	members   map[string]*Cluster
	// order is the members' names in the order of clusters/.
	order   []string
	clients map[string]client.Client
	workDir string
	// cli is the mysqlfleet binary, built from this tree.
	cli string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	switch name := os.Getenv("E2E_PROVIDER"); name {
	case "", "local":
		provider = &localProvider{}
	case "kind":
		p, err := newKindProvider()
		if err != nil {
			t.Fatal(err)
		}
		provider = p
	default:
		t.Fatalf("E2E_PROVIDER must be local or kind, not %q", name)
	}
	suiteConfig, reporterConfig := GinkgoConfiguration()
	if suiteConfig.LabelFilter == "" {
		suiteConfig.LabelFilter = defaultLabelFilter(provider)
	}
	if missing := missingCapabilities(provider); len(missing) > 0 {
		fmt.Printf("The %s provider does not offer %v: specs with those labels are left out (label filter %q); "+
			"they run on kind (make test-e2e-kind) once the provider offers them.\n", provider.Name(), missing, suiteConfig.LabelFilter)
	}
	RunSpecs(t, "mysqlfleet e2e ("+provider.Name()+")", suiteConfig, reporterConfig)
}

// A spec selected on a provider that lacks what it needs fails, never passes or skips quietly.
var _ = BeforeEach(func() {
	Expect(checkCapabilities(provider, CurrentSpecReport().Labels())).To(Succeed())
})

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	workDir, err = os.MkdirTemp("", "mysqlfleet-e2e-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(workDir) })

	DeferCleanup(func() { Expect(provider.Down()).To(Succeed()) })
	var ms []*Cluster
	hub, ms, err = provider.Up(ctx)
	Expect(err).NotTo(HaveOccurred())
	scheme := mysqlcluster.Scheme()
	hubClient, err = client.New(hub.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	members, clients = map[string]*Cluster{}, map[string]client.Client{}
	for _, m := range ms {
		members[m.Name] = m
		order = append(order, m.Name)
		clients[m.Name], err = client.New(m.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
	}

	By("installing the chart on the hub with helm and running two manager replicas with leader election")
	Expect(provider.InstallManager(ctx, filepath.Join("..", "charts", "mysqlfleet"), workDir)).To(Succeed())

	By("building the mysqlfleet CLI")
	cli, err = localfleet.Build("..", "./cmd/mysqlfleet", workDir)
	Expect(err).NotTo(HaveOccurred())

	By("registering every member with the hub")
	for _, m := range ms {
		Expect(provider.Join(ctx, m, cli)).To(Succeed())
	}
}, NodeTimeout(40*time.Minute))

// ReportAfterEach dumps what a person would look at when a spec fails: the MySQLClusters on the hub, the
// registration Events, and the manager replicas' logs.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() || hubClient == nil {
		return
	}
	ctx := context.Background()
	var list v1alpha1.MySQLClusterList
	if err := hubClient.List(ctx, &list); err == nil {
		for _, c := range list.Items {
			AddReportEntry("MySQLCluster "+c.Namespace+"/"+c.Name, fmt.Sprintf("spec=%+v\nstatus=%+v", c.Spec, c.Status))
		}
	}
	for name, c := range clients {
		var pods corev1.PodList
		var nodes corev1.NodeList
		var out []string
		if err := c.List(ctx, &pods); err == nil {
			for _, p := range pods.Items {
				out = append(out, fmt.Sprintf("pod %s/%s node=%s phase=%s conditions=%v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions))
			}
		}
		var sets appsv1.StatefulSetList
		if err := c.List(ctx, &sets); err == nil {
			for _, s := range sets.Items {
				out = append(out, fmt.Sprintf("statefulset %s/%s generation=%d status=%+v", s.Namespace, s.Name, s.Generation, s.Status))
			}
		}
		if err := c.List(ctx, &nodes); err == nil {
			for _, n := range nodes.Items {
				out = append(out, fmt.Sprintf("node %s taints=%v conditions=%v", n.Name, n.Spec.Taints, n.Status.Conditions))
			}
		}
		AddReportEntry("member "+name, strings.Join(out, "\n"))
	}
	if rs, err := provider.Managers(ctx); err == nil {
		for _, r := range rs {
			AddReportEntry("log of "+r.Name(), r.Log(ctx))
		}
	}
})

// memberNames are the members the provider started, in the order of clusters/: the real-Pods specs place on
// these, so that they run on a fleet of any size (E2E_KIND_MEMBERS).
func memberNames() []string { return slices.Clone(order) }

// registerMember writes the registration Secret that `mysqlfleet join` writes.
func registerMember(ctx context.Context, name, cloud, region string, kubeconfig []byte) error {
	return hubClient.Create(ctx, registration(name, cloud, region, kubeconfig))
}
