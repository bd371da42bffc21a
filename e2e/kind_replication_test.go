//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/bench/failover"
	"github.com/mysqlfleet/mysqlfleet/test/kindfleet"
)

// Replication as the member controller runs it on real servers (installed by `mysqlfleet join`): a set of three
// in every member, spread over the member's worker nodes; rows written through <name>-primary read on a replica
// through <name>-replicas; and failovers under a writer that records every write acknowledged to it, when the
// primary's Pod is deleted, when its node is frozen and when its node is cut off.
var _ = Describe("Replication on real Pods", Ordered, Label(string(RealPods), string(Replication)), func() {
	var placed []string
	var c *v1alpha1.MySQLCluster
	var key client.ObjectKey

	BeforeAll(func(ctx SpecContext) {
		placed = memberNames()
		c = mysqlCluster("payments", "ledger", placed)
		c.Spec.Replicas, c.Spec.Database, c.Spec.User = 3, "ledger", "app"
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		create(ctx, c)
		key = client.ObjectKeyFromObject(c)
		DeferCleanup(func(ctx SpecContext) { deleteAndWait(ctx, key) })
	})

	It("reads on a replica what was written on the primary in every member, and the hub shows them in sync", func(ctx SpecContext) {
		got := eventuallyReadyWithin(ctx, key, 10*time.Minute)
		Expect(got.Status.ReadyMembers).To(Equal(fmt.Sprintf("%d/%[1]d", len(placed))))
		Expect(got.Status.Serving).To(Equal(fmt.Sprintf("%d/%[1]d", 3*len(placed))))
		pods := []string{"ledger-0", "ledger-1", "ledger-2"}
		for _, member := range placed {
			ms := memberStatus(got, member)
			Expect(meta.IsStatusConditionTrue(ms.Conditions, v1alpha1.MemberConditionReplicating)).To(BeTrue(), member)
			mr := ms.Replication
			Expect(mr).NotTo(BeNil(), member)
			Expect(mr.Primary).To(BeElementOf(pods), member)
			Expect(mr.ReplicasInSync).To(Equal(int32(2)), member)
			Expect(mr.ErrantReplicas).To(BeEmpty(), member)
			Expect(mr.Unreachable).To(BeEmpty(), member)
			Expect(mr.LastTransition).To(And(Not(BeNil()), HaveField("Kind", "Bootstrap"), HaveField("To", mr.Primary)), member)
			replicas := slices.DeleteFunc(slices.Clone(pods), func(p string) bool { return p == mr.Primary })
			Eventually(func(g Gomega) []string { return endpointPods(ctx, g, member, key.Namespace, c.PrimaryServiceName()) }).
				WithTimeout(time.Minute).Should(Equal([]string{mr.Primary}), member)
			Eventually(func(g Gomega) []string { return endpointPods(ctx, g, member, key.Namespace, c.ReplicasServiceName()) }).
				WithTimeout(time.Minute).Should(Equal(replicas), member)

			By("writing through " + c.PrimaryServiceName() + " in " + member)
			Expect(runSQL(ctx, member, key, c.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
				"CREATE TABLE ledger.entries (id INT PRIMARY KEY, member VARCHAR(64)); "+
					"INSERT INTO ledger.entries VALUES (1, '"+member+"'); SELECT @@report_host")).To(Equal(mr.Primary), member)

			By("reading it through " + c.ReplicasServiceName() + " in " + member)
			Eventually(func() (string, error) {
				return querySQL(ctx, member, key, c.ReplicasServiceName(), "root", v1alpha1.RootPasswordKey,
					"SELECT CONCAT_WS(' ', @@report_host, @@read_only, COUNT(*)) FROM ledger.entries WHERE member = '"+member+"'")
			}).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(
				// read_only reads 1 on MySQL and ON on MariaDB.
				MatchRegexp(`^(%s|%s) (1|ON) 1$`, replicas[0], replicas[1]), member)
		}
	})

	It("fails over when the primary's Pod is deleted, loses no acknowledged write, and the hub shows it", func(ctx SpecContext) {
		failoverUnderWriter(ctx, c, key, placed[0], "acks_pod", func(old, _ string) func(context.Context) error {
			By("deleting the primary's Pod " + old)
			Expect(clients[placed[0]].Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: old}})).
				To(Succeed())
			return nil
		})
	})

	// A node that stops (a hung host) or is cut from the others: kubelet stops reporting, but Kubernetes evicts
	// its Pods only after five minutes. The member controller must not wait for that: it fails over as soon as
	// the primary stops answering, and the old primary, when its node returns, takes no write.
	for _, f := range []struct {
		spec, table, what string
		hit               func(context.Context, string) (func(context.Context) error, error)
	}{
		{"fails over when the primary's node is frozen, without waiting for an eviction, and the server rejoins when it thaws",
			"acks_frozen", "freezing the primary's node %s (docker pause)", kindfleet.FreezeNode},
		{"fails over when the primary's node is cut from the others, and the server rejoins when it returns",
			"acks_cut", "cutting the primary's node %s from every other host (nftables drops all on its link)", kindfleet.CutNode},
	} {
		It(f.spec, func(ctx SpecContext) {
			failoverUnderWriter(ctx, c, key, placed[0], f.table, func(old, node string) func(context.Context) error {
				expectAloneOnNode(ctx, placed[0], c, old, node)
				By(fmt.Sprintf(f.what, node))
				end, err := f.hit(ctx, node)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func(ctx SpecContext) { _ = end(ctx) })
				return end
			})
		})
	}
})

// expectAloneOnNode checks that the primary is the only server of its set on its node, and that the member
// controller runs on another node too: what spreading a set and the controller's replicas over nodes is for (a
// node holding two of three servers takes two at once, and then no failover can be sure to lose nothing).
func expectAloneOnNode(ctx context.Context, member string, c *v1alpha1.MySQLCluster, primary, node string) {
	var pods corev1.PodList
	Expect(clients[member].List(ctx, &pods, client.InNamespace(c.Namespace))).To(Succeed())
	where := map[string]string{}
	for _, p := range pods.Items {
		// The StatefulSet's Pods only (<name>-<ordinal>): a seed Job's Pod (<name>-seed-...) is no server.
		ordinal, ok := strings.CutPrefix(p.Name, c.Name+"-")
		if _, err := strconv.Atoi(ordinal); ok && err == nil && p.DeletionTimestamp == nil {
			where[p.Name] = p.Spec.NodeName
		}
	}
	for pod, n := range where {
		if pod != primary && n == node {
			Fail(fmt.Sprintf("the set's servers are not spread over nodes: %s shares node %s with the primary %s (%v)", pod, node, primary, where))
		}
	}
	Expect(clients[member].List(ctx, &pods, client.InNamespace(memberNamespace))).To(Succeed())
	var elsewhere []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "mysqlfleet-member-controller-") && p.Spec.NodeName != node && p.DeletionTimestamp == nil {
			elsewhere = append(elsewhere, p.Name)
		}
	}
	Expect(elsewhere).NotTo(BeEmpty(), "a member controller runs on another node than %s", node)
}

// failoverUnderWriter checks one failover of a set in member under a writer: a Pod on another node than the
// primary's writes through <name>-primary as the application's account on 4 connections into a new table and
// records every write acknowledged to it; fault (given the primary and its node) hits the primary and returns
// what ends the fault, or nil. Then: the hub shows the failover in status and as an Event, the primary Service
// points at the promoted server, which takes writes; the fault ends (the old primary's Pod was neither deleted
// nor recreated meanwhile unless the fault deleted it, so the failover did not wait for Kubernetes); the old
// primary takes none of the writer's writes; every acknowledged write is on the new primary; and the old server
// rejoins as a replica, or is reported errant.
func failoverUnderWriter(ctx context.Context, c *v1alpha1.MySQLCluster, key client.ObjectKey, member, table string,
	fault func(old, node string) func(context.Context) error) {
	old := memberStatus(get(ctx, key), member).Replication.Primary
	Expect(old).NotTo(BeEmpty())
	var oldPod corev1.Pod
	Expect(clients[member].Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: old}, &oldPod)).To(Succeed())
	node := oldPod.Spec.NodeName
	Expect(runSQL(ctx, member, key, c.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
		"CREATE TABLE ledger."+table+" (id INT PRIMARY KEY); SELECT 'created'")).To(Equal("created"))

	By("writing through " + c.PrimaryServiceName() + " as " + c.Spec.User + " on 4 connections from a Pod off node " + node +
		" that records each acknowledged write")
	writer := startClient(ctx, member, key, "writer", c.PrimaryServiceName(), c.Spec.User, v1alpha1.PasswordKey,
		"ledger."+table, failover.WriterScript(4), offNode(node))
	DeferCleanup(func(ctx SpecContext) { deleteClient(ctx, member, key.Namespace, writer) })
	writes := func(g Gomega) []failover.Write {
		logs, err := clientLogs(ctx, member, key.Namespace, writer)
		g.Expect(err).NotTo(HaveOccurred())
		return failover.ParseWrites(logs)
	}
	Eventually(func(g Gomega) int { return len(failover.Acknowledged(writes(g))) }).
		WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", 20))

	t0 := float64(time.Now().UnixNano()) / 1e9
	end := fault(old, node)

	By("the hub shows the failover in status and as an Event")
	var mr *v1alpha1.MemberReplication
	Eventually(func(g Gomega) {
		mr = memberStatus(get(ctx, key), member).Replication
		g.Expect(mr).NotTo(BeNil())
		g.Expect(mr.LastTransition).To(And(Not(BeNil()), HaveField("Kind", "Failover"), HaveField("From", old)))
		g.Expect(mr.Primary).To(Equal(mr.LastTransition.To))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	promoted := mr.Primary
	Expect(promoted).NotTo(Equal(old))
	Expect(mr.LastTransition.ObservedTime).NotTo(BeNil())
	Eventually(func(g Gomega) []string { return eventNotes(ctx, g, key, "Failover") }).WithTimeout(time.Minute).
		Should(ContainElement(ContainSubstring("member " + member + ": Failover from " + old + " to " + promoted)))
	Eventually(func(g Gomega) []string { return endpointPods(ctx, g, member, key.Namespace, c.PrimaryServiceName()) }).
		WithTimeout(time.Minute).Should(Equal([]string{promoted}))

	By("the writer goes on through " + c.PrimaryServiceName() + " until " + promoted + " acknowledged 20 writes")
	ackedBy := func(g Gomega, host string) int {
		n := 0
		for _, w := range writes(g) {
			if w.Ack && w.Host == host {
				n++
			}
		}
		return n
	}
	Eventually(func(g Gomega) int { return ackedBy(g, promoted) }).
		WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", 20))
	if end != nil {
		var now corev1.Pod
		Expect(clients[member].Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: old}, &now)).To(Succeed())
		Expect(now.UID).To(Equal(oldPod.UID), "the failover did not wait for %s to be evicted", old)
		By("ending the fault; the writer goes on, and " + promoted + " takes 20 more writes")
		Expect(end(ctx)).To(Succeed())
		before := ackedBy(Default, promoted)
		Eventually(func(g Gomega) int { return ackedBy(g, promoted) }).
			WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", before+20))
	}
	var all []failover.Write
	Eventually(func(g Gomega) { all = writes(g) }).Should(Succeed())
	deleteClient(ctx, member, key.Namespace, writer)
	var r failover.Run
	acked := r.Tally(all, t0, old, "")
	Expect(r.Error).To(BeEmpty())
	Expect(r.To).To(Equal(promoted), "the first server after %s to acknowledge a write", old)
	Expect(r.OldPrimaryAcks).To(BeZero(), "%s acknowledged writes after %s did", old, promoted)
	_, _ = fmt.Fprintf(GinkgoWriter, "the writer: %d writes acknowledged, %d not; the first on %s %.2f s after the fault\n",
		r.Acknowledged, r.FailedWrites, promoted, r.Seconds)

	By("every acknowledged write is on the new primary " + promoted)
	out := runSQL(ctx, member, key, promoted+"."+c.HeadlessServiceName(), "root", v1alpha1.RootPasswordKey,
		"SELECT @@report_host; SELECT @@read_only; SELECT id FROM ledger."+table)
	rows := strings.Fields(out)
	Expect(rows[0]).To(Equal(promoted))
	Expect(rows[1]).To(BeElementOf("0", "OFF"), "the new primary is writable")
	var lost []int64
	for _, id := range acked {
		if !slices.Contains(rows[2:], strconv.FormatInt(id, 10)) {
			lost = append(lost, id)
		}
	}
	Expect(lost).To(BeEmpty(), "acknowledged writes missing on the new primary (%d acknowledged)", len(acked))

	By("the old primary " + old + " rejoins as a replica, or is reported errant")
	Eventually(func(g Gomega) {
		mr := memberStatus(get(ctx, key), member).Replication
		g.Expect(mr).NotTo(BeNil())
		g.Expect(mr.Primary).To(Equal(promoted))
		g.Expect(mr.Unreachable).To(BeEmpty())
		g.Expect(mr.ReplicasInSync == 2 || slices.Contains(mr.ErrantReplicas, old)).To(BeTrue(), "%+v", mr)
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// endpointPods are the Pods behind a Service in a member, by its EndpointSlices, sorted.
func endpointPods(ctx context.Context, g Gomega, member, ns, service string) []string {
	var list discoveryv1.EndpointSliceList
	g.Expect(clients[member].List(ctx, &list, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: service})).To(Succeed())
	pods := []string{}
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	slices.Sort(pods)
	return pods
}

// eventNotes are the notes of the hub's Events with the given reason on the MySQLCluster.
func eventNotes(ctx context.Context, g Gomega, key client.ObjectKey, reason string) []string {
	var list eventsv1.EventList
	g.Expect(hubClient.List(ctx, &list, client.InNamespace(key.Namespace))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == key.Name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// deleteAndWait deletes a MySQLCluster on the hub and waits until it is gone.
func deleteAndWait(ctx context.Context, key client.ObjectKey) {
	var c v1alpha1.MySQLCluster
	if err := hubClient.Get(ctx, key, &c); apierrors.IsNotFound(err) {
		return
	}
	Expect(hubClient.Delete(ctx, &c)).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(hubClient.Get(ctx, key, &v1alpha1.MySQLCluster{})) }).
		WithTimeout(3 * time.Minute).Should(BeTrue())
}
