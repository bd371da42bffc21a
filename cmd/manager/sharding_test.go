package main_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet/shard"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// shardLeaseDuration is the sharded replicas' lease duration: longer than the leader election test's, because
// six API servers, four replicas and the race detector share the machine, and a replica whose renewal is held up
// past its renew deadline stops (as it must).
const shardLeaseDuration = 8 * time.Second

// shardFlags run a sharded replica under the given identity.
func shardFlags(id string) []string {
	return []string{"--sharding", "--shard-identity=" + id, "--leader-elect-lease-duration=" + shardLeaseDuration.String(),
		"--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s"}
}

// shardMembers are the bare members of the sharding test: six, so that three replicas own two each.
func shardMembers() []clusters.Definition {
	clouds := []struct{ cloud, region, class string }{
		{"aws", "eu-west-1", "gp3"}, {"azure", "westeurope", "managed-csi"}, {"gcp", "europe-west1", "pd-ssd"},
	}
	var defs []clusters.Definition
	for i := range 6 {
		c := clouds[i%len(clouds)]
		defs = append(defs, clusters.Definition{Name: fmt.Sprintf("%s-%02d", c.cloud, i), Role: clusters.RoleMember,
			Cloud: c.cloud, Region: c.region, StorageClasses: []clusters.StorageClass{{Name: c.class, Default: true}}})
	}
	return defs
}

// TestSharding runs three, then four replicas of the manager binary with --sharding against one hub and six
// members, and proves that every member is worked in by exactly the replica the assignment names; that one
// MySQLCluster placed on members of different replicas gets one correct status (a row from each member's
// replica, the summary from the leader), and that a converged fleet makes no writes; that a fourth replica takes
// only its share, and takes it over without a write or a read of a single object there; that when a
// replica is killed outright its members are taken over by the others, no row of the status goes missing on the
// way, and a change made afterwards reaches every member through its new owner exactly once; that a replica
// stopped with SIGTERM gives its members back rather than leaving them to expire; and that deletion is finished
// by the replicas together.
func TestSharding(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := buildManager(t)

	defs := shardMembers()
	fleet := testfleet.ForTest(t, testfleet.Options{
		Members:              defs,
		HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	})
	scheme := mysqlcluster.Scheme()
	hub, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mgrNamespace}})).To(Succeed())
	var names []string
	memberAPI := map[string]kubernetes.Interface{}
	for _, d := range defs {
		m := fleet.Member(d.Name)
		g.Expect(register(ctx, hub, m)).To(Succeed())
		names = append(names, d.Name)
		memberAPI[d.Name] = m.Clientset()
	}

	procs := map[string]*managerProcess{}
	start := func(id string) {
		p := startManager(t, bin, fleet.Hub.KubeconfigPath, id, shardFlags(id)...)
		procs[id] = p
		dumpOnFailure(t, p)
	}
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		start(id)
	}

	// Every member is claimed by the replica the assignment names, and only that replica reports on it.
	owners := shard.Assign(names, []string{"replica-a", "replica-b", "replica-c"})
	g.Eventually(func() map[string]string { return claims(g, hub) }).WithTimeout(timeout).WithPolling(polling).
		Should(Equal(owners))
	g.Eventually(func(g Gomega) { g.Expect(reporters(g, procs, names)).To(Equal(owners)) }).
		WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		g.Expect(slices.Collect(maps.Values(owners))).To(ContainElement(id), "every replica owns a share")
	}
	t.Logf("Owners: %v", owners)

	// One MySQLCluster on all six members: every row, one summary.
	c := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sharding", Name: "db"},
		Spec: v1alpha1.MySQLClusterSpec{
			Version:   "8.4",
			Replicas:  1,
			Placement: v1alpha1.Placement{Members: names},
			Storage:   v1alpha1.Storage{Size: resource.MustParse("1Gi")},
		},
	}
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}})).To(Succeed())
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func(g Gomega) { expectStatus(g, hub, key, names, 1) }).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	var got v1alpha1.MySQLCluster
	g.Expect(hub.Get(ctx, key, &got)).To(Succeed())
	g.Expect(got.Finalizers).To(ContainElement(v1alpha1.Finalizer))
	for _, name := range names {
		g.Expect(got.Finalizers).To(ContainElement("member.mysqlfleet.io/"+name), "a finalizer for every member before anything is written there")
	}

	// Converged, nobody writes: neither the status on the hub nor anything in a member.
	hubCS := fleet.Hub.Clientset()
	hubBefore := apiserverWrites(g, hubCS, "mysqlclusters")
	memberBefore := map[string]float64{}
	for _, name := range names {
		memberBefore[name] = apiserverWrites(g, memberAPI[name], "")
	}
	g.Consistently(func(g Gomega) {
		g.Expect(apiserverWrites(g, hubCS, "mysqlclusters")).To(Equal(hubBefore), "writes to MySQLClusters while converged")
		for _, name := range names {
			g.Expect(apiserverWrites(g, memberAPI[name], "")).To(Equal(memberBefore[name]), "writes into member %s while converged", name)
		}
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

	// A member whose owner waits for its finalizer (taken off by hand) has not departed: nothing there is deleted.
	leader := ""
	g.Eventually(func(g Gomega) {
		leader = ""
		for id, p := range procs {
			if sum(scrape(g, p.metricsURL), "leader_election_master_status", map[string]string{"name": leaseName}) == 1 {
				g.Expect(leader).To(BeEmpty(), "%s and %s both lead", leader, id)
				leader = id
			}
		}
		g.Expect(leader).NotTo(BeEmpty(), "a replica leads")
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	waited := names[slices.IndexFunc(names, func(name string) bool { return owners[name] != leader })]
	t.Logf("%s leads; taking the finalizer of %s (owned by %s) off", leader, waited, owners[waited])
	torndown := []string{"statefulsets", "services", "configmaps", "secrets", "cronjobs"}
	deletes := map[string]float64{}
	for _, res := range torndown {
		deletes[res] = apiserverCount(g, memberAPI[waited], "DELETE", res)
	}
	stsOf := func(g Gomega) *appsv1.StatefulSet {
		sts, err := memberAPI[waited].AppsV1().StatefulSets(c.Namespace).Get(ctx, c.StatefulSetName(), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return sts
	}
	stsUID := stsOf(g).UID
	g.Expect(hub.Get(ctx, key, &got)).To(Succeed())
	unfinalize := client.MergeFrom(got.DeepCopy())
	got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == "member.mysqlfleet.io/"+waited })
	g.Expect(hub.Patch(ctx, &got, unfinalize)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, &got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement("member.mysqlfleet.io/"+waited), "the leader puts the finalizer back")
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, res := range torndown {
			g.Expect(apiserverCount(g, memberAPI[waited], "DELETE", res)).To(Equal(deletes[res]), "%s deleted in %s, which its owner waited on", res, waited)
		}
		g.Expect(stsOf(g).UID).To(Equal(stsUID), "the StatefulSet in %s is the one that was there", waited)
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

	// A fourth replica takes its share, and only its share.
	leaseVersions := claimVersions(g, hub)
	counters := snapshot(g, procs, names)
	start("replica-d")
	after := shard.Assign(names, []string{"replica-a", "replica-b", "replica-c", "replica-d"})
	g.Eventually(func() map[string]string { return claims(g, hub) }).WithTimeout(timeout).WithPolling(polling).Should(Equal(after))
	var moved []string
	for _, name := range names {
		if after[name] != owners[name] {
			moved = append(moved, name)
			g.Expect(after[name]).To(Equal("replica-d"), "member %s moved between replicas that were already there", name)
		}
	}
	g.Expect(moved).NotTo(BeEmpty(), "the fourth replica owns something")
	versions := claimVersions(g, hub)
	for _, name := range names {
		if !slices.Contains(moved, name) {
			g.Expect(versions[name]).To(Equal(leaseVersions[name]), "the claim of %s, which did not move, was not touched", name)
		}
	}
	t.Logf("The fourth replica took %v", moved)
	expectQuietTakeover(g, procs, counters, after, moved)

	// kill -9 the replica with the most members: the others take them over, and the status keeps every row.
	victim := ""
	for _, id := range []string{"replica-a", "replica-b", "replica-c", "replica-d"} {
		if victim == "" || countOf(after, id) > countOf(after, victim) {
			victim = id
		}
	}
	rows := watchRows(t, hub, key)
	counters = snapshot(g, procs, names)
	killedAt := time.Now()
	procs[victim].signal(t, syscall.SIGKILL)
	g.Eventually(procs[victim].done).WithTimeout(timeout).Should(BeClosed())
	delete(procs, victim)
	var live []string
	for id := range procs {
		live = append(live, id)
	}
	final := shard.Assign(names, live)
	g.Eventually(func() map[string]string { return claims(g, hub) }).WithTimeout(timeout).WithPolling(polling).Should(Equal(final))
	t.Logf("Takeover: the members of %s were claimed %s after it was killed (lease duration %s): %v", victim,
		time.Since(killedAt).Round(time.Millisecond), shardLeaseDuration, final)
	g.Eventually(func(g Gomega) { g.Expect(reporters(g, procs, names)).To(Equal(final)) }).
		WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	var taken []string
	for _, name := range names {
		if after[name] == victim {
			taken = append(taken, name)
		}
	}
	expectQuietTakeover(g, procs, counters, final, taken)

	// A change after the takeover reaches every member through its owner, once, and every row follows it.
	applies := map[string]float64{}
	for _, name := range names {
		applies[name] = apiserverCount(g, memberAPI[name], "APPLY", "statefulsets")
	}
	g.Expect(hub.Get(ctx, key, &got)).To(Succeed())
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Replicas = 2
	g.Expect(hub.Patch(ctx, &got, patch)).To(Succeed())
	for _, name := range names {
		member, err := client.New(fleet.Member(name).Config, client.Options{Scheme: scheme})
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			var sts appsv1.StatefulSet
			g.Expect(member.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts)).To(Succeed())
			g.Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		}).WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "the change reaches %s", name)
	}
	g.Eventually(func(g Gomega) { expectStatus(g, hub, key, names, got.Generation) }).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	for _, name := range names {
		g.Expect(apiserverCount(g, memberAPI[name], "APPLY", "statefulsets")-applies[name]).To(BeEquivalentTo(1),
			"the StatefulSet in %s was applied once", name)
	}
	g.Expect(rows.stop()).To(BeEmpty(), "rows missing from the status while replicas came and went")

	// SIGTERM: the replica stops its work, gives its claims back and releases its peer Lease, so that the others
	// take its members over without waiting for the Lease to expire.
	stopping := ""
	for id := range procs {
		if stopping == "" || countOf(final, id) > countOf(final, stopping) || countOf(final, id) == countOf(final, stopping) && id < stopping {
			stopping = id
		}
	}
	procs[stopping].signal(t, syscall.SIGTERM)
	g.Eventually(procs[stopping].done).WithTimeout(timeout).Should(BeClosed())
	g.Expect(procs[stopping].exitErr).NotTo(HaveOccurred(), "a replica stops cleanly on SIGTERM")
	delete(procs, stopping)
	live = slices.DeleteFunc(live, func(id string) bool { return id == stopping })
	last := shard.Assign(names, live)
	g.Eventually(func() map[string]string { return claims(g, hub) }).WithTimeout(timeout).WithPolling(polling).Should(Equal(last))
	var peer coordinationv1.Lease
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: shard.PeerLeaseName("mysqlfleet-manager", stopping)}, &peer)).
		To(MatchError(ContainSubstring("not found")), "the stopped replica's peer Lease is gone")
	for _, name := range names {
		if final[name] == stopping {
			g.Expect(procs[last[name]].log()).To(ContainSubstring(fmt.Sprintf(`"msg":"Claimed member","identity":%q,"member":%q,"from":""`, last[name], name)),
				"%s took %s as given back, not from a replica it found dead", last[name], name)
		}
	}

	// Deletion: every owner tears down in its members and takes their finalizers off; the leader ends it.
	g.Expect(hub.Delete(ctx, &got)).To(Succeed())
	g.Eventually(func() error { return hub.Get(ctx, key, &got) }).WithTimeout(timeout).WithPolling(polling).
		Should(MatchError(ContainSubstring("not found")), "the MySQLCluster is deleted")
	for _, name := range names {
		var list appsv1.StatefulSetList
		g.Expect(fleetClient(g, fleet.Member(name).Config).List(ctx, &list, client.InNamespace(c.Namespace))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty(), "the StatefulSet is gone from %s", name)
	}
}

func fleetClient(g Gomega, cfg *rest.Config) client.Client {
	cl, err := client.New(cfg, client.Options{Scheme: mysqlcluster.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// expectStatus checks the MySQLCluster's status as sharded replicas write it: a row for every member, each about
// the generation, and a summary of them all for that generation. Bare members run no Pods, so every member is
// applied but progressing.
func expectStatus(g Gomega, hub client.Client, key client.ObjectKey, names []string, generation int64) {
	var c v1alpha1.MySQLCluster
	g.Expect(hub.Get(context.Background(), key, &c)).To(Succeed())
	g.Expect(c.Generation).To(Equal(generation))
	var rows []string
	for _, m := range c.Status.Members {
		rows = append(rows, m.Name)
		applied := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
		g.Expect(applied).NotTo(BeNil(), "member %s", m.Name)
		g.Expect(applied.Status).To(Equal(metav1.ConditionTrue), "member %s: %s", m.Name, applied.Message)
		g.Expect(applied.ObservedGeneration).To(Equal(generation), "member %s", m.Name)
		g.Expect(m.Replicas).To(Equal(c.Spec.Replicas), "member %s", m.Name)
		g.Expect(m.Phase).To(Equal(v1alpha1.PhaseProgressing), "member %s", m.Name)
	}
	g.Expect(rows).To(ConsistOf(names))
	g.Expect(c.Status.ObservedGeneration).To(Equal(generation))
	g.Expect(c.Status.ReadyMembers).To(Equal(fmt.Sprintf("0/%d", len(names))))
	g.Expect(c.Status.ReadyReplicas).To(Equal(fmt.Sprintf("0/%d", len(names)*int(c.Spec.Replicas))))
	g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseProgressing))
	placed := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionPlaced)
	g.Expect(placed).NotTo(BeNil())
	g.Expect(placed.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(placed.Message).To(Equal(fmt.Sprintf("placed on %d members", len(names))))
	degraded := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
	g.Expect(degraded).NotTo(BeNil())
	g.Expect(degraded.Status).To(Equal(metav1.ConditionFalse), degraded.Message)
	progressing := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
	g.Expect(progressing).NotTo(BeNil())
	g.Expect(progressing.Message).To(Equal("converging: " + strings.Join(slices.Sorted(slices.Values(names)), ", ")))
}

// memberCounters are, per replica, its counts of reconciles and of requests by verb in each member.
type memberCounters map[string]map[string]float64

// snapshot reads the counters of every replica for every member, keyed "member/what".
func snapshot(g Gomega, procs map[string]*managerProcess, names []string) memberCounters {
	out := memberCounters{}
	for id, p := range procs {
		fams := scrape(g, p.metricsURL)
		out[id] = map[string]float64{}
		for _, name := range names {
			out[id][name+"/reconciles"] = sum(fams, "mysqlfleet_member_reconciles_total", map[string]string{"member": name})
			for _, verb := range requestVerbs {
				out[id][name+"/"+verb] = sum(fams, "mysqlfleet_member_requests_total", map[string]string{"member": name, "verb": verb})
			}
		}
	}
	return out
}

var requestVerbs = []string{"get", "list", "watch", "create", "update", "patch", "apply", "delete"}

// expectQuietTakeover checks, for each member that moved, that its new owner has reconciled the MySQLCluster
// there since the snapshot and sent no request but the lists and watches of its cache: no read of one object, no
// write.
func expectQuietTakeover(g Gomega, procs map[string]*managerProcess, before memberCounters, owners map[string]string, moved []string) {
	for _, name := range moved {
		id := owners[name]
		p := procs[id]
		var now memberCounters
		g.Eventually(func(g Gomega) {
			now = snapshot(g, map[string]*managerProcess{id: p}, []string{name})
			g.Expect(now[id][name+"/reconciles"]).To(BeNumerically(">", before[id][name+"/reconciles"]),
				"%s reconciled in %s", id, name)
		}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
		for _, verb := range []string{"get", "create", "update", "patch", "apply", "delete"} {
			g.Expect(now[id][name+"/"+verb]-before[id][name+"/"+verb]).To(BeZero(),
				"%s sent %s requests to %s after taking it over", id, verb, name)
		}
		// The cache's first sync: lists, or watches that stream the initial objects (WatchList).
		synced := now[id][name+"/list"] + now[id][name+"/watch"] - before[id][name+"/list"] - before[id][name+"/watch"]
		g.Expect(synced).To(BeNumerically(">", 0), "%s synced its cache of %s", id, name)
	}
}

// claims reads the members' claim Leases: member → holder, for those held.
func claims(g Gomega, hub client.Client) map[string]string {
	var list coordinationv1.LeaseList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(mgrNamespace),
		client.MatchingLabels{shard.LeaseLabel: shard.MemberLease})).To(Succeed())
	out := map[string]string{}
	for _, l := range list.Items {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			out[l.Annotations[shard.MemberAnnotation]] = h
		}
	}
	return out
}

// claimVersions reads the claim Leases' resourceVersions, by member.
func claimVersions(g Gomega, hub client.Client) map[string]string {
	var list coordinationv1.LeaseList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(mgrNamespace),
		client.MatchingLabels{shard.LeaseLabel: shard.MemberLease})).To(Succeed())
	out := map[string]string{}
	for _, l := range list.Items {
		out[l.Annotations[shard.MemberAnnotation]] = l.ResourceVersion
	}
	return out
}

// reporters finds, for each member, the one replica that reports on it (mysqlfleet_member_reachable): the
// others must have no such series.
func reporters(g Gomega, procs map[string]*managerProcess, names []string) map[string]string {
	out := map[string]string{}
	for id, p := range procs {
		fams := scrape(g, p.metricsURL)
		for _, name := range names {
			if has(fams, "mysqlfleet_member_reachable", map[string]string{"member": name}) {
				g.Expect(out).NotTo(HaveKey(name), "member %s reported by %s and %s", name, out[name], id)
				g.Expect(sum(fams, "mysqlfleet_member_reachable", map[string]string{"member": name})).To(BeEquivalentTo(1))
				out[name] = id
			}
		}
	}
	return out
}

func countOf(owners map[string]string, id string) int {
	n := 0
	for _, o := range owners {
		if o == id {
			n++
		}
	}
	return n
}

// rowWatch reads a MySQLCluster's status over and over and records every moment a row was missing.
type rowWatch struct {
	stop func() []string
}

func watchRows(t *testing.T, hub client.Client, key client.ObjectKey) rowWatch {
	var mu sync.Mutex
	var missing []string
	done := make(chan struct{})
	finished := make(chan struct{})
	var c v1alpha1.MySQLCluster
	if err := hub.Get(context.Background(), key, &c); err != nil {
		t.Fatal(err)
	}
	want := len(c.Status.Members)
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var now v1alpha1.MySQLCluster
			if err := hub.Get(context.Background(), key, &now); err != nil {
				continue
			}
			if len(now.Status.Members) != want {
				mu.Lock()
				missing = append(missing, fmt.Sprintf("%d rows at resourceVersion %s", len(now.Status.Members), now.ResourceVersion))
				mu.Unlock()
			}
		}
	}()
	return rowWatch{stop: func() []string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return missing
	}}
}

// scrape reads a replica's metrics.
func scrape(g Gomega, url string) map[string]*dto.MetricFamily {
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return fams
}

// matching lists the series of a family whose labels include the given ones.
func matching(fams map[string]*dto.MetricFamily, name string, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range fams[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range labels {
			ok = ok && have[k] == v
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

func has(fams map[string]*dto.MetricFamily, name string, labels map[string]string) bool {
	return len(matching(fams, name, labels)) > 0
}

// sum adds the matching series' values, counters and gauges alike.
func sum(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	var n float64
	for _, m := range matching(fams, name, labels) {
		n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return n
}

// apiserverFamilies reads an API server's own metrics.
func apiserverFamilies(g Gomega, cs kubernetes.Interface) map[string]*dto.MetricFamily {
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(data)))
	g.Expect(err).NotTo(HaveOccurred())
	return fams
}

// apiserverCount is how many requests of the verb on the resource the API server served.
func apiserverCount(g Gomega, cs kubernetes.Interface, verb, resource string) float64 {
	return sum(apiserverFamilies(g, cs), "apiserver_request_total", map[string]string{"verb": verb, "resource": resource})
}

// writeVerbs are the API server's verbs that change something.
var writeVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}

// apiserverWrites counts the writes an API server served, to one resource or (empty) to any but the Leases and
// Events that API servers and controllers write on their own.
func apiserverWrites(g Gomega, cs kubernetes.Interface, resource string) float64 {
	var n float64
	for _, m := range matching(apiserverFamilies(g, cs), "apiserver_request_total", nil) {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if !slices.Contains(writeVerbs, l["verb"]) {
			continue
		}
		if resource != "" && l["resource"] != resource || resource == "" && (l["resource"] == "leases" || l["resource"] == "events") {
			continue
		}
		n += m.GetCounter().GetValue()
	}
	return n
}

// TestShardingTakesOverFromOneLeader runs one unsharded replica, then two sharded ones in its place, and proves
// that they take over the MySQLClusters it reconciled: a row it wrote loses the fields no sharded replica sets
// (a paused MySQLCluster's plan, once it is unpaused), and a MySQLCluster it placed gets its members'
// finalizers, so that deleting it still clears every member.
func TestShardingTakesOverFromOneLeader(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := buildManager(t)
	defs := shardMembers()[:2]
	fleet := testfleet.ForTest(t, testfleet.Options{
		Members:              defs,
		HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	})
	hub := fleetClient(g, fleet.Hub.Config)
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mgrNamespace}})).To(Succeed())
	var names []string
	for _, d := range defs {
		g.Expect(register(ctx, hub, fleet.Member(d.Name))).To(Succeed())
		names = append(names, d.Name)
	}

	leader := startManager(t, bin, fleet.Hub.KubeconfigPath, "unsharded")
	dumpOnFailure(t, leader)
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "takeover"}})).To(Succeed())
	paused := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "takeover", Name: "paused"},
		Spec: v1alpha1.MySQLClusterSpec{Version: "8.4", Replicas: 1, Paused: true,
			Placement: v1alpha1.Placement{Members: names}, Storage: v1alpha1.Storage{Size: resource.MustParse("1Gi")}},
	}
	running := paused.DeepCopy()
	running.Name, running.Spec.Paused = "running", false
	g.Expect(hub.Create(ctx, paused)).To(Succeed())
	g.Expect(hub.Create(ctx, running)).To(Succeed())
	g.Eventually(func(g Gomega) {
		var c v1alpha1.MySQLCluster
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(paused), &c)).To(Succeed())
		g.Expect(c.Status.Members).To(HaveLen(len(names)))
		for _, m := range c.Status.Members {
			g.Expect(m.Plan).NotTo(BeEmpty(), "a paused member lists what it would apply")
		}
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	g.Eventually(func(g Gomega) { expectStatus(g, hub, client.ObjectKeyFromObject(running), names, 1) }).
		WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	leader.signal(t, syscall.SIGTERM)
	g.Eventually(leader.done).WithTimeout(timeout).Should(BeClosed())

	for _, id := range []string{"replica-a", "replica-b"} {
		dumpOnFailure(t, startManager(t, bin, fleet.Hub.KubeconfigPath, id, shardFlags(id)...))
	}
	var c v1alpha1.MySQLCluster
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(paused), &c)).To(Succeed())
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Paused = false
	g.Expect(hub.Patch(ctx, &c, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectStatus(g, hub, client.ObjectKeyFromObject(paused), names, c.Generation)
		var now v1alpha1.MySQLCluster
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(paused), &now)).To(Succeed())
		for _, m := range now.Status.Members {
			g.Expect(m.Plan).To(BeEmpty(), "the plan of %s, written by the unsharded replica, is gone", m.Name)
		}
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())

	// The MySQLCluster the unsharded replica placed gets a finalizer for every member it may have objects in.
	g.Eventually(func(g Gomega) {
		var now v1alpha1.MySQLCluster
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(running), &now)).To(Succeed())
		for _, name := range names {
			g.Expect(now.Finalizers).To(ContainElement("member.mysqlfleet.io/" + name))
		}
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	g.Expect(hub.Delete(ctx, running)).To(Succeed())
	g.Eventually(func() error { return hub.Get(ctx, client.ObjectKeyFromObject(running), &c) }).WithTimeout(timeout).
		WithPolling(polling).Should(MatchError(ContainSubstring("not found")))
	for _, name := range names {
		var sts appsv1.StatefulSet
		err := fleetClient(g, fleet.Member(name).Config).Get(ctx, client.ObjectKey{Namespace: running.Namespace, Name: running.StatefulSetName()}, &sts)
		g.Expect(err).To(MatchError(ContainSubstring("not found")), "the StatefulSet is gone from %s", name)
	}
}
