package mysqlcluster_test

import (
	"bytes"
	"context"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// A converged fleet is silent: over an idle window neither the hub nor any member receives a single write from
// the manager, counted by each API server's own apiserver_request_total. Every MySQLCluster the earlier tests
// left behind (ready, paused-then-resumed, degraded with unknown members) is part of the idle fleet.
func TestIdleFleetMakesNoWrites(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("idle", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	create(t, c)
	converged := eventuallyConverged(g, client.ObjectKeyFromObject(c))

	before := settledWrites(t, g)
	// Silence is only news if the counters were read: the hub's count of MySQLCluster writes and, in every member
	// the cluster is placed on, its count of StatefulSet writes must be there (the cluster was written to both).
	g.Expect(before).To(HaveKey(HavePrefix(fleet.Hub.Name+"/mysqlclusters/")), "the hub's MySQLCluster writes")
	for _, m := range converged.Status.Members {
		g.Expect(before).To(HaveKey(HavePrefix(m.Name+"/statefulsets//")), "member %s's StatefulSet writes", m.Name)
	}
	g.Consistently(func() map[string]float64 { return diff(before, fleetWrites(g)) }, 20*time.Second, 2*time.Second).
		Should(BeEmpty(), "write requests while idle")
}

// settledWrites waits until the last status writes and the member controllers' work are done, that is until
// the fleet's write counters stay put for a few seconds, and returns them.
func settledWrites(t *testing.T, g Gomega) map[string]float64 {
	var last map[string]float64
	err := wait.PollUntilContextTimeout(context.Background(), 3*time.Second, time.Minute, false,
		func(context.Context) (bool, error) {
			cur := fleetWrites(g)
			settled := last != nil && maps.Equal(cur, last)
			last = cur
			return settled, nil
		})
	if err != nil {
		t.Fatalf("the fleet's writes did not settle: %v", err)
	}
	return last
}

// writesOfManager are the resources the manager writes; in members nothing else writes their main resource
// while idle (controllers write the status subresource, the scheduler and kwok write pods and nodes).
var (
	memberResources = map[string]bool{"statefulsets": true, "services": true, "configmaps": true, "secrets": true,
		"poddisruptionbudgets": true, "cronjobs": true, "jobs": true, "persistentvolumeclaims": true, "namespaces": true}
	hubResources = map[string]bool{"mysqlclusters": true, "secrets": true, "events": true, "configmaps": true}
	writeVerbs   = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}
)

// fleetWrites counts write requests per cluster and resource, from each API server's metrics.
func fleetWrites(g Gomega) map[string]float64 {
	out := map[string]float64{}
	for _, c := range append([]*testfleet.Cluster{fleet.Hub}, fleet.Members...) {
		watched := memberResources
		if c == fleet.Hub {
			watched = hubResources
		}
		requests := apiServerMetrics(g, c)["apiserver_request_total"].GetMetric()
		g.ExpectWithOffset(1, requests).NotTo(BeEmpty(), "apiserver_request_total of %s", c.Name)
		for _, m := range requests {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if !writeVerbs[l["verb"]] || !watched[l["resource"]] || (c != fleet.Hub && l["subresource"] != "") {
				continue
			}
			out[c.Name+"/"+l["resource"]+"/"+l["subresource"]+"/"+l["verb"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// apiServerMetrics reads an API server's metrics.
func apiServerMetrics(g Gomega, c *testfleet.Cluster) map[string]*dto.MetricFamily {
	raw, err := c.Clientset().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "metrics of %s", c.Name)
	return families
}

// managerMetrics reads the in-process manager's metrics, by family name.
func managerMetrics(g Gomega) map[string]*dto.MetricFamily {
	families, err := metrics.Registry.Gather()
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

// labelsOf is a sample's labels by name.
func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func diff(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// One member's API server goes away: the others still converge on a change, the member is reported
// unreachable, and it converges again once it is back, without restarting the manager.
func TestUnreachableMemberDoesNotStopTheOthers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("resilient", "db", nil...)
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)

	azure := fleet.Member("azure-westeurope")
	restart := stopMember(t, azure)
	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	for _, m := range []string{"aws-eu-west-1", "gcp-us-central1"} {
		g.Eventually(func() int32 {
			return statefulSet(g, m, key).Status.ReadyReplicas
		}, time.Minute, 250*time.Millisecond).Should(Equal(int32(2)), m)
	}
	g.Eventually(func() v1alpha1.Phase {
		ms := memberStatus(get(g, key), "azure-westeurope")
		if ms == nil {
			return ""
		}
		return ms.Phase
	}, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.PhaseUnreachable))
	got := get(g, key)
	g.Expect(findCondition(got, v1alpha1.ConditionDegraded).Message).To(ContainSubstring("unreachable: azure-westeurope"))
	ms := memberStatus(got, "azure-westeurope")
	g.Expect(findMemberCondition(ms, v1alpha1.MemberConditionReachable).Status).To(Equal(metav1.ConditionFalse))
	g.Eventually(func() metav1.ConditionStatus {
		return findMemberCondition(memberStatus(get(g, key), "aws-eu-west-1"), v1alpha1.MemberConditionPodsReady).Status
	}, time.Minute, 250*time.Millisecond).Should(Equal(metav1.ConditionTrue))

	restart()
	got = eventuallyConverged(g, key)
	g.Expect(got.Status.ReadyReplicas).To(Equal("6/6"))
	g.Expect(*statefulSet(g, "azure-westeurope", key).Spec.Replicas).To(Equal(int32(2)))
}

func findMemberCondition(ms *v1alpha1.MemberStatus, t string) metav1.Condition {
	for _, c := range ms.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

// A member whose API server accepts connections and never answers must not hold up the registration of the
// next one: multicluster-runtime's own kubeconfig provider would (one worker, no deadline on the first sync).
func TestUnresponsiveMemberDoesNotStallRegistrations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	var conns atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			defer func() { _ = conn.Close() }() // hold every connection open, say nothing
		}
	}()
	defer func() { _ = l.Close() }()

	silent := kubeconfigFor(g, "https://"+l.Addr().String())
	g.Expect(registerKubeconfig(ctx, "blackhole", cloudLabels("aws", "af-south-1"), silent)).To(Succeed())
	g.Eventually(conns.Load, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))

	gcp := fleet.Member("gcp-us-central1")
	g.Expect(registerKubeconfig(ctx, "gcp-second-name", cloudLabels("gcp", "us-central1"), gcp.Kubeconfig)).To(Succeed())
	g.Eventually(func() []string { return secretEvents(g, "gcp-second-name") }, 30*time.Second, 100*time.Millisecond).
		Should(ContainElement("MemberEngaged"))
	// The unresponsive member's first sync is still running (it gives up after the manager's sync timeout).
	g.Expect(secretEvents(g, "blackhole")).NotTo(ContainElement("MemberUnreachable"))
	g.Eventually(func() []string { return secretEvents(g, "blackhole") }, 90*time.Second, 250*time.Millisecond).
		Should(ContainElement("MemberUnreachable"))

	for _, name := range []string{"blackhole", "gcp-second-name"} {
		g.Expect(hub.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mgrNamespace, Name: name}})).To(Succeed())
	}
}

// Hostile kubeconfigs are refused before any client exists: an Event on the Secret says why, the exec plugin
// never runs, and a MySQLCluster placed there reports the member's refusal with the reason.
func TestHostileKubeconfigsAreRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "exec-ran")
	server := fleet.Member("aws-eu-west-1").Config.Host
	hostile := map[string]func(*clientcmdapi.Config){
		"hostile-exec": func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
				InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
			}}
		},
		"hostile-tokenfile": func(c *clientcmdapi.Config) { c.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: "/etc/hostname"} },
		"hostile-authprovider": func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}
		},
		"hostile-cafile": func(c *clientcmdapi.Config) {
			c.Clusters["c"].CertificateAuthority = "/etc/ssl/certs/ca-certificates.crt"
		},
		"hostile-insecure": func(c *clientcmdapi.Config) { c.Clusters["c"].InsecureSkipTLSVerify = true },
		"hostile-proxy":    func(c *clientcmdapi.Config) { c.Clusters["c"].ProxyURL = "http://127.0.0.1:3128" },
	}
	reasons := map[string]string{"hostile-exec": "exec", "hostile-tokenfile": "tokenFile", "hostile-authprovider": "auth-provider",
		"hostile-cafile": "certificate-authority", "hostile-insecure": "insecure-skip-tls-verify", "hostile-proxy": "proxy-url"}
	for name, mutate := range hostile {
		cfg := baseKubeconfig(server)
		mutate(cfg)
		if name == "hostile-insecure" {
			cfg.Clusters["c"].CertificateAuthorityData = nil
		}
		data, err := clientcmd.Write(*cfg)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(registerKubeconfig(ctx, name, cloudLabels("aws", "eu-west-1"), data)).To(Succeed())
	}
	for name, field := range reasons {
		g.Eventually(func() string { return secretEventNote(g, name, "KubeconfigRefused") }, 30*time.Second, 100*time.Millisecond).
			Should(ContainSubstring(field), name)
	}

	c := newCluster("hostile", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{"hostile-exec"} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func(g Gomega) {
		ms := memberStatus(get(g, key), "hostile-exec")
		g.Expect(ms).NotTo(BeNil())
		g.Expect(ms.LastError).To(And(ContainSubstring("refused"), ContainSubstring("exec")))
		g.Expect(findMemberCondition(ms, v1alpha1.MemberConditionReachable).Status).To(Equal(metav1.ConditionFalse))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	_, err := os.Stat(marker)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin must never run")
	for name := range hostile {
		g.Expect(hub.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mgrNamespace, Name: name}})).To(Succeed())
	}
}

// Deleting with Retain removes workloads and keeps the volumes and the hub's credentials; Delete removes those
// too; a member that leaves the placement is torn down by the same rules.
func TestDeletionPolicies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	placed := []string{"aws-eu-west-1", "gcp-us-central1"}
	retain := newCluster("deletion", "keep", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = placed })
	remove := newCluster("deletion", "drop", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = placed
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	})
	create(t, retain)
	create(t, remove)
	eventuallyConverged(g, client.ObjectKeyFromObject(retain))
	eventuallyConverged(g, client.ObjectKeyFromObject(remove))

	// gcp leaves the placement of the Retain cluster: its StatefulSet goes, its volume stays.
	update(g, client.ObjectKeyFromObject(retain), func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = placed[:1] })
	g.Eventually(func() bool {
		return apierrors.IsNotFound(members["gcp-us-central1"].Get(ctx, client.ObjectKeyFromObject(retain), &appsv1.StatefulSet{}))
	}, time.Minute, 250*time.Millisecond).Should(BeTrue())
	g.Expect(pvcNames(g, "gcp-us-central1", "deletion")).To(ContainElement("data-keep-0"))

	for _, c := range []*v1alpha1.MySQLCluster{retain, remove} {
		g.Expect(hub.Delete(ctx, c)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.MySQLCluster{}))
		}, time.Minute, 250*time.Millisecond).Should(BeTrue(), c.Name)
	}
	for _, m := range placed {
		for _, name := range []string{"keep", "drop"} {
			for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}} {
				err := members[m].Get(ctx, client.ObjectKey{Namespace: "deletion", Name: name}, obj)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s in %s", obj, name, m)
			}
		}
		g.Eventually(func() []string { return pvcNames(g, m, "deletion") }, time.Minute, 250*time.Millisecond).
			ShouldNot(ContainElement(HavePrefix("data-drop-")), m)
	}
	g.Expect(pvcNames(g, "aws-eu-west-1", "deletion")).To(ContainElement("data-keep-0"))
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: "credentials.deletion.keep"}, &corev1.Secret{})).To(Succeed())
	err := hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: "credentials.deletion.drop"}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

// Deletion does not hang on an unreachable member: after the bounded wait the MySQLCluster is released, an
// Event names the member, and the member's objects are still there when it returns, until the pending teardown
// recorded for it finishes the deletion there as the policy (Retain) says: by UID, the volume kept.
func TestDeletionWithUnreachableMember(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("deletion-down", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{"aws-eu-west-1", "azure-westeurope"}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	azure := fleet.Member("azure-westeurope")
	restart := stopMember(t, azure)
	g.Eventually(func() v1alpha1.Phase { return memberStatus(get(g, key), "azure-westeurope").Phase },
		time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.PhaseUnreachable))

	uid := get(g, key).UID
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(members["aws-eu-west-1"].Get(ctx, key, &appsv1.StatefulSet{}))
	}, time.Minute, 250*time.Millisecond).Should(BeTrue())
	g.Eventually(func() bool { return apierrors.IsNotFound(hub.Get(ctx, key, &v1alpha1.MySQLCluster{})) },
		2*time.Minute, 250*time.Millisecond).Should(BeTrue())
	var events eventsv1.EventList
	g.Expect(hub.List(ctx, &events, client.InNamespace("deletion-down"))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Reason == "LeftoversInUnreachableMembers" {
			notes = append(notes, e.Note)
		}
	}
	g.Expect(notes).To(ContainElement(ContainSubstring("azure-westeurope")))

	var rec corev1.ConfigMap
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: "teardown." + string(uid) + ".azure-westeurope"}, &rec)).
		To(Succeed(), "the teardown owed to azure is recorded")

	var claim corev1.PersistentVolumeClaim
	restart()
	g.Expect(members["azure-westeurope"].Get(ctx, client.ObjectKey{Namespace: "deletion-down", Name: "data-db-0"}, &claim)).To(Succeed())
	g.Eventually(func() []string { return ownedBy(g, "azure-westeurope", "deletion-down", uid) }, time.Minute, 250*time.Millisecond).
		Should(ConsistOf("PersistentVolumeClaim/data-db-0"), "the pending teardown finishes the deletion once azure answers")
	var kept corev1.PersistentVolumeClaim
	g.Expect(members["azure-westeurope"].Get(ctx, client.ObjectKeyFromObject(&claim), &kept)).To(Succeed())
	g.Expect(kept.UID).To(Equal(claim.UID), "Retain keeps the very same claim")
}

func pvcNames(g Gomega, member, ns string) []string {
	var list corev1.PersistentVolumeClaimList
	g.Expect(members[member].List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func cloudLabels(cloud, region string) map[string]string {
	return map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: cloud, v1alpha1.RegionLabel: region}
}

// baseKubeconfig is a valid token kubeconfig for server, with the hub's CA (any CA will do for refusal tests).
func baseKubeconfig(server string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: fleet.Hub.Config.CAData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "not-a-real-token"}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "ctx"
	return cfg
}

func kubeconfigFor(g Gomega, server string) []byte {
	data, err := clientcmd.Write(*baseKubeconfig(server))
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

// secretEvents lists the reasons of Events about a registration Secret.
func secretEvents(g Gomega, name string) []string {
	var list eventsv1.EventList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(mgrNamespace))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Secret" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func secretEventNote(g Gomega, name, reason string) string {
	var list eventsv1.EventList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(mgrNamespace))).To(Succeed())
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			return e.Note
		}
	}
	return ""
}

// stopMember stops a member's control plane for a test. The returned function brings it back and fails the test
// if it cannot; if the test ends before calling it, the member is brought back anyway for the tests after it.
func stopMember(t *testing.T, m *testfleet.Cluster) (restart func()) {
	t.Helper()
	if err := m.StopAPIServer(); err != nil {
		t.Fatalf("stopping %s: %v", m.Name, err)
	}
	running := false
	t.Cleanup(func() {
		if !running {
			_ = m.StartAPIServer()
		}
	})
	return func() {
		t.Helper()
		if err := m.StartAPIServer(); err != nil {
			t.Fatalf("restarting %s: %v", m.Name, err)
		}
		running = true
	}
}

// A member cut off behind a network partition (connections held open, nothing answered, as the relay does) is
// found out by the failure detector: requests to it wait a second with no answer, so it is probed at once, and
// the probe fails. Nothing else can find it within the 30 s this test waits: the manager here probes members
// only every ten minutes and gives a pass ten minutes in a member (whose timeout would also have it probed),
// and client-go's HTTP/2 health check drops a silent connection only after 45 s (30 s idle, 15 s ping). The
// member is reported unreachable with the probe's reason while the other members converge on a change, and it
// catches up once the partition heals, found by the detector's re-probe. The gcp member is registered through
// the relay for the test (registering its API server under a second name would make the two registrations
// fight over the same objects).
func TestPartitionedMemberIsCutOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const member = "gcp-us-central1"
	gcp := fleet.Member(member)
	u, err := url.Parse(gcp.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	relay, err := testfleet.NewBlackhole(u.Host)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(relay.Close)
	restartManager(t, func(o *mysqlcluster.Options) {
		o.MemberHealthInterval = 10 * time.Minute
		o.MemberTimeout = 10 * time.Minute
	})
	kc, err := testfleet.KubeconfigVia(gcp.Kubeconfig, relay.Addr())
	g.Expect(err).NotTo(HaveOccurred())
	setKubeconfig := func(data []byte) {
		var s corev1.Secret
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: member}, &s)).To(Succeed())
		s.Data[v1alpha1.KubeconfigKey] = data
		g.Expect(hub.Update(ctx, &s)).To(Succeed())
	}
	setKubeconfig(kc)
	t.Cleanup(func() { setKubeconfig(gcp.Kubeconfig) })
	g.Eventually(relay.Connections, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))

	c := newCluster("partitioned", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Placement.Members = []string{"aws-eu-west-1", member}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)

	relay.Drop(true)
	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	g.Eventually(func() metav1.Condition {
		if ms := memberStatus(get(g, key), member); ms != nil {
			return findMemberCondition(ms, v1alpha1.MemberConditionReachable)
		}
		return metav1.Condition{}
	}, 30*time.Second, 250*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring("/readyz"))))
	g.Eventually(func() int32 { return statefulSet(g, "aws-eu-west-1", key).Status.ReadyReplicas },
		time.Minute, 250*time.Millisecond).Should(Equal(int32(2)))
	// The hub shows what the member's StatefulSet shows one pass later.
	g.Eventually(func() metav1.ConditionStatus {
		return findMemberCondition(memberStatus(get(g, key), "aws-eu-west-1"), v1alpha1.MemberConditionPodsReady).Status
	}, time.Minute, 250*time.Millisecond).Should(Equal(metav1.ConditionTrue))

	relay.Drop(false)
	got := eventuallyConverged(g, key)
	g.Expect(got.Status.ReadyReplicas).To(Equal("4/4"))
	g.Expect(*statefulSet(g, member, key).Spec.Replicas).To(Equal(int32(2)))
}

// restartManager replaces the suite's manager with one whose options adjust changed, until the test ends.
func restartManager(t *testing.T, adjust func(*mysqlcluster.Options)) {
	t.Helper()
	stopManager()
	startManager(adjust)
	t.Cleanup(func() {
		stopManager()
		startManager()
	})
}
