package mysqlcluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apitypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
)

// A member that goes away while another MySQLCluster's pass is in flight is reported on the MySQLClusters placed
// there once that pass has ended, not beside it: the passes the member change asks for wait outside the queue.
// The pass in flight is a deletion whose delete in aws an admission webhook holds (aws answers everything else,
// so it stays reachable); azure's API server is stopped meanwhile. Without the wait, the MySQLCluster on azure
// would be passed and reported unreachable within a second or two.
func TestMemberChangePassesWaitForPlacement(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, azure = "pace", "azure-westeurope"
	// Long enough that the held delete, not the manager's request timeout, decides when the deletion pass ends.
	restartManager(t, func(o *mysqlcluster.Options) { o.MemberTimeout = time.Minute })

	held := newCluster(ns, "held", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws} })
	waiting := newCluster(ns, "waiting", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{azure} })
	create(t, held)
	create(t, waiting)
	eventuallyConverged(g, client.ObjectKeyFromObject(held))
	key := client.ObjectKeyFromObject(waiting)
	eventuallyConverged(g, key)
	// A pass of waiting still in flight when azure stops (the echo of a Pod's status there) reports it at once,
	// rightly: the test begins once no pass is in flight or has ended for a while.
	eventuallyQuiet(g)
	azurePhase := func() v1alpha1.Phase {
		if ms := memberStatus(get(g, key), azure); ms != nil {
			return ms.Phase
		}
		return ""
	}

	hook := startHoldingWebhook(t, aws)
	hook.install(t, g, aws, ns)
	g.Expect(hub.Delete(ctx, held)).To(Succeed())
	g.Eventually(hook.log, time.Minute, 100*time.Millisecond).Should(ContainElement(aws + " held"))
	restart := stopMember(t, fleet.Member(azure))

	g.Eventually(func() float64 { return passesWaiting(g) },
		time.Minute, 100*time.Millisecond).Should(BeNumerically(">=", 1), "the member change's passes wait")
	g.Consistently(azurePhase, 3*time.Second, 250*time.Millisecond).ShouldNot(Equal(v1alpha1.PhaseUnreachable),
		"not reported while the deletion pass is in flight")
	g.Expect(slices.Contains(hook.log(), aws+" ended")).To(BeFalse(), "the deletion pass was in flight throughout")

	hook.release()
	g.Eventually(azurePhase, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.PhaseUnreachable),
		"reported once the deletion pass has ended")
	g.Expect(passesWaiting(g)).To(BeZero())
	eventuallyGone(g, client.ObjectKeyFromObject(held))

	restart()
	eventuallyConverged(g, key)
	g.Expect(hub.Delete(ctx, waiting)).To(Succeed())
	eventuallyGone(g, key)
}

// eventuallyQuiet waits until no MySQLCluster pass is in flight and none has ended for two seconds.
func eventuallyQuiet(g Gomega) {
	passes := func() (ended, inFlight float64) {
		families := managerMetrics(g)
		for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
			if labelsOf(m)["controller"] == "mysqlcluster" {
				ended += m.GetCounter().GetValue()
			}
		}
		for _, m := range families["controller_runtime_active_workers"].GetMetric() {
			if labelsOf(m)["controller"] == "mysqlcluster" {
				inFlight += m.GetGauge().GetValue()
			}
		}
		return ended, inFlight
	}
	g.Eventually(func() bool {
		before, _ := passes()
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if ended, inFlight := passes(); ended != before || inFlight != 0 {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond).Should(BeTrue(), "no MySQLCluster pass in flight or ending")
}

// passesWaiting reads mysqlfleet_member_change_passes_waiting from the in-process manager's registry; -1 while
// it has no sample.
func passesWaiting(g Gomega) float64 {
	for _, m := range managerMetrics(g)["mysqlfleet_member_change_passes_waiting"].GetMetric() {
		return m.GetGauge().GetValue()
	}
	return -1
}

// A pass that only a member change asked for looks at that member only: when azure goes away and comes back, the
// MySQLCluster's row for azure follows it, while aws, where nothing changed, is not passed again: its row, marked
// by hand before (a region no pass writes), is kept as it was. A change of the spec passes every member, and the
// pass over aws writes its row afresh. Without the scope, azure's changes would pass aws too and drop the mark.
func TestMemberChangePassesLookOnlyThere(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, azure, mark = "scoped", "azure-westeurope", "marked-by-the-test"
	c := newCluster(ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws, azure} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)
	awsRegion := func() string {
		if ms := memberStatus(get(g, key), aws); ms != nil {
			return ms.Region
		}
		return ""
	}
	// Mark aws's row once nothing passes it any more (its Pods are up): a pass there would write it back.
	g.Eventually(func(g Gomega) {
		got := get(g, key)
		i := slices.IndexFunc(got.Status.Members, func(m v1alpha1.MemberStatus) bool { return m.Name == aws })
		g.Expect(i).To(BeNumerically(">=", 0))
		patch := fmt.Sprintf(`[{"op":"test","path":"/status/members/%d/name","value":%q},{"op":"replace","path":"/status/members/%d/region","value":%q}]`,
			i, aws, i, mark)
		g.Expect(hub.Status().Patch(ctx, got, client.RawPatch(apitypes.JSONPatchType, []byte(patch)))).To(Succeed())
		g.Consistently(awsRegion, 3*time.Second, 250*time.Millisecond).Should(Equal(mark))
	}, time.Minute).Should(Succeed())

	restart := stopMember(t, fleet.Member(azure))
	g.Eventually(func() v1alpha1.Phase {
		if ms := memberStatus(get(g, key), azure); ms != nil {
			return ms.Phase
		}
		return ""
	}, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.PhaseUnreachable))
	g.Expect(awsRegion()).To(Equal(mark), "aws not passed when azure went")
	restart()
	eventuallyConverged(g, key)
	g.Expect(awsRegion()).To(Equal(mark), "aws not passed when azure came back")

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
	g.Eventually(awsRegion, time.Minute, 250*time.Millisecond).Should(Equal("eu-west-1"), "a new spec passes every member")
	eventuallyConverged(g, key)
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	eventuallyGone(g, key)
}
