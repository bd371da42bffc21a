package mysqlcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
)

// A MySQLCluster's status never contradicts itself: every version of it the hub's API server holds, read by a
// watch that sees each write, has the summary (phase, readyMembers, readyReplicas, serving, conditions,
// observedGeneration) of exactly the rows it carries, through a scale, a failover reported by a member
// controller, and an outage of a member. Converged, the manager does not write it.
func TestStatusNeverContradictsItself(t *testing.T) {
	statusStaysConsistent(t, "consistent")
}

func statusStaysConsistent(t *testing.T, ns string) {
	g := NewWithT(t)
	ctx := context.Background()
	names := []string{"aws-eu-west-1", "azure-westeurope", "gcp-us-central1"}
	c := newCluster(ns, "db")
	key := client.ObjectKeyFromObject(c)
	w := watchStatus(t, key)
	create(t, c)

	// A member's outage and return are member changes, whose passes may wait up to memberChangeMaxWait (2 min)
	// behind passes of other MySQLClusters in flight (pace.go): the waits below are longer than that bound. How
	// soon is not what this test asserts.
	const outageWait = 3 * time.Minute
	// report writes, in every member named, the member controller's report of a primary and in-sync replicas.
	report := func(replicas int, members ...string) {
		for _, m := range members {
			sts := statefulSet(g, m, key)
			writeReport(g, m, sts, setReport(sts.Name, 0, replicas))
		}
	}
	ready := func(replicas string) {
		g.Eventually(func(g Gomega) {
			got := get(g, key)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseReady))
			g.Expect(got.Status.ReadyReplicas).To(Equal(replicas))
			g.Expect(got.Status.Serving).To(Equal(replicas))
		}, outageWait, 250*time.Millisecond).Should(Succeed())
	}
	eventuallyConverged(g, key)
	report(1, names...)
	ready("3/3")

	// A scale: every member's row goes from Ready through Progressing (Pods, then replicas not yet in sync) to
	// Ready, each written on its own.
	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	for _, m := range names {
		g.Eventually(func() int32 { return statefulSet(g, m, key).Status.ReadyReplicas },
			time.Minute, 250*time.Millisecond).Should(Equal(int32(2)), m)
	}
	report(2, names...)
	ready("6/6")

	// A failover in one member: no primary for a moment (nothing served there), then the replica promoted.
	const failed = "aws-eu-west-1"
	sts := statefulSet(g, failed, key)
	lost := setReport(sts.Name, 0, 2)
	lost.Primary, lost.Decision = "", v1alpha1.ReplicationDecision{Kind: "FailoverStarted", From: sts.Name + "-0"}
	lost.Instances[0].Role = v1alpha1.ReplicationRoleUnreachable
	writeReport(g, failed, sts, lost)
	g.Eventually(func() string { return get(g, key).Status.Serving }, time.Minute, 250*time.Millisecond).Should(Equal("4/6"))
	promoted := setReport(sts.Name, 1, 2)
	promoted.LastTransition = &v1alpha1.ReplicationDecision{Kind: "Failover", From: sts.Name + "-0", To: sts.Name + "-1"}
	writeReport(g, failed, sts, promoted)
	ready("6/6")
	g.Expect(memberStatus(get(g, key), failed).Replication.Primary).To(Equal(sts.Name + "-1"))

	// An outage: the member's row turns Unreachable and the MySQLCluster Degraded, until it is back.
	restart := stopMember(t, fleet.Member("gcp-us-central1"))
	g.Eventually(func() v1alpha1.Phase { return get(g, key).Status.Phase }, outageWait, 250*time.Millisecond).
		Should(Equal(v1alpha1.PhaseDegraded))
	restart()
	ready("6/6")

	// Converged, nothing writes it again.
	before := settledWrites(t, g)
	g.Consistently(func() map[string]float64 { return diff(before, fleetWrites(g)) }, 6*time.Second, 2*time.Second).
		Should(BeEmpty(), "writes while converged")

	seen, watchErrs := w.stop()
	g.Expect(watchErrs).To(BeEmpty(), "the watch saw every write")
	phases := map[v1alpha1.Phase]int{}
	var contradicted []string
	bad := 0
	for _, got := range seen {
		phases[got.Status.Phase]++
		if says := contradictions(&got); len(says) > 0 {
			if bad++; bad <= 5 {
				status, _ := json.MarshalIndent(got.Status, "", "  ")
				contradicted = append(contradicted, fmt.Sprintf("resourceVersion %s, generation %d: %v\n%s",
					got.ResourceVersion, got.Generation, says, status))
			}
		}
	}
	t.Logf("%d versions of the MySQLCluster watched, by phase: %v; %d contradict themselves", len(seen), phases, bad)
	g.Expect(phases).To(HaveKey(v1alpha1.PhaseProgressing))
	g.Expect(phases).To(HaveKey(v1alpha1.PhaseDegraded))
	g.Expect(phases).To(HaveKey(v1alpha1.PhaseReady))
	g.Expect(contradicted).To(BeEmpty(), "statuses that contradict themselves")

	g.Expect(hub.Delete(ctx, get(g, key))).To(Succeed())
	eventuallyGone(g, key)
}

// setReport is a member controller's report on StatefulSet sts of replicas Pods: the Pod of ordinal primary is
// the primary, every other one a replica in sync.
func setReport(sts string, primary, replicas int) v1alpha1.ReplicationReport {
	rep := v1alpha1.ReplicationReport{Primary: fmt.Sprintf("%s-%d", sts, primary), Decision: v1alpha1.ReplicationDecision{Kind: "Steady"}}
	for i := range replicas {
		in := v1alpha1.ReplicationInstance{Pod: fmt.Sprintf("%s-%d", sts, i), Role: v1alpha1.ReplicationRoleReplica, InSync: true}
		if i == primary {
			in = v1alpha1.ReplicationInstance{Pod: rep.Primary, Role: v1alpha1.ReplicationRolePrimary}
		}
		rep.Instances = append(rep.Instances, in)
	}
	return rep
}

// statusWatch holds every version of one MySQLCluster that a watch on the hub delivered.
type statusWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   []v1alpha1.MySQLCluster
	errs   []string
}

// watchStatus watches the MySQLCluster key on the hub until stop: the API server sends an event for every write
// of it, in order, so its versions are every status a reader could have read. A watch that ends is taken up
// again from the last version it delivered.
func watchStatus(t *testing.T, key client.ObjectKey) *statusWatch {
	t.Helper()
	wc := must(client.NewWithWatch(fleet.Hub.Config, client.Options{Scheme: mysqlcluster.Scheme()}))
	ctx, cancel := context.WithCancel(context.Background())
	sw := &statusWatch{cancel: cancel, done: make(chan struct{})}
	rv := ""
	open := func() (watch.Interface, error) {
		return wc.Watch(ctx, &v1alpha1.MySQLClusterList{}, &client.ListOptions{Namespace: key.Namespace,
			Raw: &metav1.ListOptions{FieldSelector: "metadata.name=" + key.Name, ResourceVersion: rv}})
	}
	w, err := open() // before the MySQLCluster is made, so that its first version is seen too
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(sw.done)
		for {
			for ev := range w.ResultChan() {
				c, ok := ev.Object.(*v1alpha1.MySQLCluster)
				if !ok {
					if ctx.Err() != nil {
						break // the watch's own end, stopped
					}
					sw.mu.Lock()
					sw.errs = append(sw.errs, fmt.Sprintf("%s: %v", ev.Type, ev.Object))
					sw.mu.Unlock()
					continue
				}
				rv = c.ResourceVersion
				sw.mu.Lock()
				sw.seen = append(sw.seen, *c.DeepCopy())
				sw.mu.Unlock()
			}
			if ctx.Err() != nil {
				return
			}
			if w, err = open(); err != nil {
				sw.mu.Lock()
				sw.errs = append(sw.errs, err.Error())
				sw.mu.Unlock()
				return
			}
		}
	}()
	t.Cleanup(func() { sw.stop() })
	return sw
}

// stop ends the watch and returns the versions it saw and the errors it met.
func (sw *statusWatch) stop() ([]v1alpha1.MySQLCluster, []string) {
	sw.cancel()
	<-sw.done
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.seen, sw.errs
}

// contradictions lists what a MySQLCluster's status says against itself, for a valid spec whose placement
// names registered members: the summary must be that of the rows the same version carries, for the generation
// its conditions name. Nothing is checked before the first summary or once the MySQLCluster is being deleted.
func contradictions(c *v1alpha1.MySQLCluster) []string {
	st := &c.Status
	readyCond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if readyCond == nil || !c.DeletionTimestamp.IsZero() {
		return nil
	}
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	gen := readyCond.ObservedGeneration
	for _, cond := range st.Conditions {
		if cond.ObservedGeneration != gen {
			bad("condition %s is about generation %d, Ready about %d", cond.Type, cond.ObservedGeneration, gen)
		}
	}

	// What the rows say, for generation gen: a row about another generation is not Ready for this one.
	var ready, readyPods, pods, serving int
	var troubled, converging []string
	current := true
	for _, m := range st.Members {
		applied := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
		ofGen := applied != nil && applied.ObservedGeneration == gen
		current = current && ofGen
		readyPods += int(m.ReadyReplicas)
		pods += int(m.Replicas)
		serving += servingOf(m.Replication)
		switch {
		case len(m.Conflicts) > 0 || m.Phase == v1alpha1.PhaseUnreachable || m.Phase == v1alpha1.PhaseDegraded:
			troubled = append(troubled, m.Name)
		case m.Phase == v1alpha1.PhaseReady && ofGen:
			ready++
		default:
			converging = append(converging, m.Name)
		}
	}

	// The counts against the rows. A placed member whose row is not written yet counts in the denominators.
	var gotReady, placed, gotReadyPods, podsOf, gotServing, servingOfPods int
	if _, err := fmt.Sscanf(st.ReadyMembers, "%d/%d", &gotReady, &placed); err != nil {
		bad("readyMembers %q", st.ReadyMembers)
	}
	if _, err := fmt.Sscanf(st.ReadyReplicas, "%d/%d", &gotReadyPods, &podsOf); err != nil {
		bad("readyReplicas %q", st.ReadyReplicas)
	}
	if _, err := fmt.Sscanf(st.Serving, "%d/%d", &gotServing, &servingOfPods); err != nil {
		bad("serving %q", st.Serving)
	}
	missing := placed - len(st.Members)
	switch {
	case missing < 0:
		bad("readyMembers %s, but %d rows", st.ReadyMembers, len(st.Members))
	case missing == 0 && (podsOf != pods || servingOfPods != pods):
		bad("readyReplicas %s and serving %s, but the rows want %d Pods", st.ReadyReplicas, st.Serving, pods)
	}
	if gotReady != ready {
		bad("readyMembers %s, but %d rows are Ready for generation %d", st.ReadyMembers, ready, gen)
	}
	if gotReadyPods != readyPods {
		bad("readyReplicas %s, but the rows have %d Pods ready", st.ReadyReplicas, readyPods)
	}
	if gotServing != serving {
		bad("serving %s, but the rows' reports serve %d", st.Serving, serving)
	}

	// The conditions against the counts and the rows.
	allReady := placed > 0 && ready == placed
	if (readyCond.Status == metav1.ConditionTrue) != allReady {
		bad("Ready=%s with %s members ready", readyCond.Status, st.ReadyMembers)
	}
	if want := st.ReadyMembers + " members ready"; readyCond.Message != want {
		bad("Ready says %q, readyMembers %s", readyCond.Message, st.ReadyMembers)
	}
	if d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); d == nil ||
		(d.Status == metav1.ConditionTrue) != (len(troubled) > 0) {
		bad("Degraded=%v, but the rows of %v are in trouble", d, troubled)
	}
	if p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); p == nil ||
		(p.Status == metav1.ConditionTrue) != (len(converging) > 0 || missing > 0) {
		bad("Progressing=%v, but %v converge and %d rows are missing", p, converging, missing)
	}

	// The phase against the rows.
	want := v1alpha1.PhaseProgressing
	switch {
	case len(troubled) > 0:
		want = v1alpha1.PhaseDegraded
	case allReady:
		want = v1alpha1.PhaseReady
	}
	if st.Phase != want {
		bad("phase %s, but the rows make it %s", st.Phase, want)
	}

	// observedGeneration: the generation every row it carries is about, never one the summary has not seen.
	switch {
	case st.ObservedGeneration > gen:
		bad("observedGeneration %d, but the summary is about generation %d", st.ObservedGeneration, gen)
	case st.ObservedGeneration == gen && !current:
		bad("observedGeneration %d beside rows about an earlier generation", st.ObservedGeneration)
	}
	return out
}

// servingOf is what a member's report serves: its writable primary, if its commits return, and its replicas in
// sync.
func servingOf(r *v1alpha1.MemberReplication) int {
	switch {
	case r == nil || r.Primary == "":
		return 0
	case r.WritesBlocked != "":
		return int(r.ReplicasInSync)
	}
	return 1 + int(r.ReplicasInSync)
}
