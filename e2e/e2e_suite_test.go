//go:build e2e

// Package e2e is mysqlfleet's end-to-end suite: the whole product as a user meets it, on a fleet from clusters/
// (a hub and aws, azure and gcp members). The manager runs as two replicas with leader election, members are
// registered as Secrets, MySQLClusters are placed across the clouds and faults are injected. Run it with
// `make test-e2e`.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/localfleet"
	"github.com/mysqlfleet/mysqlfleet/internal/manager"
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
	clients   map[string]client.Client
	managers  []*localfleet.Process
	workDir   string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "mysqlfleet e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	workDir, err = os.MkdirTemp("", "mysqlfleet-e2e-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(workDir) })

	provider = &localProvider{}
	DeferCleanup(func() { Expect(provider.Down()).To(Succeed()) })
	var ms []*Cluster
	hub, ms, err = provider.Up(ctx)
	Expect(err).NotTo(HaveOccurred())
	scheme := manager.Scheme()
	hubClient, err = client.New(hub.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	members, clients = map[string]*Cluster{}, map[string]client.Client{}
	for _, m := range ms {
		members[m.Name] = m
		clients[m.Name], err = client.New(m.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
	}

	By("installing the chart on the hub with helm")
	Expect(localfleet.InstallChart(hub.KubeconfigPath, filepath.Join("..", "charts", "mysqlfleet"), namespace, release, nil)).To(Succeed())

	By("starting two manager replicas with the chart's ServiceAccount and leader election")
	// The hub of the local fleet runs no Pods, so the replicas of the chart's Deployment run as processes,
	// authenticated as the chart's ServiceAccount: the chart's RBAC is what they are allowed.
	kc, err := localfleet.ServiceAccountKubeconfig(ctx, hub.Config, namespace, release, 2*time.Hour)
	Expect(err).NotTo(HaveOccurred())
	kcPath := filepath.Join(workDir, "manager.kubeconfig")
	Expect(os.WriteFile(kcPath, kc, 0o600)).To(Succeed())
	bin, err := localfleet.Build("..", "./cmd/manager", workDir)
	Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"manager-a", "manager-b"} {
		p, err := localfleet.StartManager(bin, name, workDir,
			"--kubeconfig="+kcPath, "--namespace="+namespace, "--leader-elect=true",
			"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--member-health-interval=1s",
			"--member-timeout=5s", "--deletion-timeout=20s")
		Expect(err).NotTo(HaveOccurred())
		managers = append(managers, p)
	}
	DeferCleanup(func() {
		for _, p := range managers {
			p.Kill()
		}
	})

	By("registering every member as a Secret on the hub")
	for _, m := range members {
		Expect(registerMember(ctx, m.Name, m.Cloud, m.Region, m.MemberKubeconfig)).To(Succeed())
	}
}, NodeTimeout(10*time.Minute))

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
		if err := c.List(ctx, &nodes); err == nil {
			for _, n := range nodes.Items {
				out = append(out, fmt.Sprintf("node %s taints=%v conditions=%v", n.Name, n.Spec.Taints, n.Status.Conditions))
			}
		}
		AddReportEntry("member "+name, strings.Join(out, "\n"))
	}
	for _, p := range managers {
		AddReportEntry("log of "+p.Name, p.Tail(30000))
	}
})

// registerMember writes the registration Secret that `mysqlfleet join` writes.
func registerMember(ctx context.Context, name, cloud, region string, kubeconfig []byte) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
			v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: cloud, v1alpha1.RegionLabel: region,
		}},
		Data: map[string][]byte{v1alpha1.KubeconfigKey: kubeconfig},
	}
	return hubClient.Create(ctx, s)
}
