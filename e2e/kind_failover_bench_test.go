//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/bench/failover"
	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	mfcli "github.com/mysqlfleet/mysqlfleet/internal/cli"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/kindfleet"
)

// Bench labels the failover bench on kind (make bench-failover-kind): it measures rather than checks, takes
// half an hour, and runs only when selected by its label; every default filter leaves it out.
const Bench = "bench"

// The faults the bench injects into the primary of a set of three in one kind member, in the order each round
// runs them. The node's PID of the Pod's server is found through its container ID in /proc/*/cgroup, from the
// kind node container (docker exec), which sees the Pod's processes and may signal them and enter their network
// namespace.
const (
	faultKill       = "kill-9"
	faultDelete     = "pod-deleted"
	faultFrozen     = "primary-frozen"
	faultCut        = "primary-cut-off"
	faultNodeFrozen = "node-frozen"
	faultNodeCut    = "node-cut-off"
	faultSwitchover = "switchover"
)

type benchFault struct {
	name, what string
	target     time.Duration
}

var benchFaults = []benchFault{
	{faultKill, "kill -9 of the primary's mariadbd → first write acknowledged through <name>-primary", 2 * time.Second},
	{faultDelete, "the primary's Pod deleted (default grace) → first write acknowledged through <name>-primary", 3 * time.Second},
	{faultFrozen, "the primary's mariadbd frozen (SIGSTOP) → first write acknowledged by the new primary", 8 * time.Second},
	{faultCut, "the primary's Pod cut off (iptables DROP in its network namespace) → first write acknowledged by the new primary", 8 * time.Second},
	{faultNodeFrozen, "the primary's node frozen (docker pause of the node container) → first write acknowledged by the new primary", 15 * time.Second},
	{faultNodeCut, "the primary's node cut from the others (nftables in the node drops all on its link) → first write acknowledged by the new primary", 15 * time.Second},
	{faultSwitchover, "switchover requested on the hub (spec.primaries) → first write acknowledged by the target", time.Second},
}

const (
	// benchConnections is how many connections the writer Pod writes on at once.
	benchConnections = 8
	// benchHold is how long a frozen or cut-off primary stays so: long past the failover, as a hung host or a
	// partition that outlives it, so that the old primary returns to a set that has moved on.
	benchHold = 45 * time.Second
	// benchWithin bounds a run's wait for the first write on a new primary.
	benchWithin = 2 * time.Minute
	// benchHeal bounds a run's wait for the set's full redundancy after the fault (the self-healing issue asks
	// for 3 minutes; the run records the figure and fails past this).
	benchHeal = 6 * time.Minute
)

var _ = Describe("Failover on kind, measured", Ordered, Label(Bench, string(RealPods), string(Replication)), func() {
	var member string
	var c *v1alpha1.MySQLCluster
	var key client.ObjectKey

	BeforeAll(func(ctx SpecContext) {
		member = memberNames()[0]
		c = mysqlCluster("bench", "orders", []string{member})
		c.Spec.Replicas, c.Spec.Database, c.Spec.User = 3, "orders", "app"
		c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		if flags := strings.Fields(os.Getenv("BENCH_MEMBER_FLAGS")); len(flags) > 0 {
			setMemberControllerFlags(ctx, member, flags)
		}
		create(ctx, c)
		key = client.ObjectKeyFromObject(c)
		DeferCleanup(func(ctx SpecContext) { deleteAndWait(ctx, key) })
		eventuallyReadyWithin(ctx, key, 10*time.Minute)
	})

	It("records how long each fault leaves the set without a writable primary, and how long until it is whole", func(ctx SpecContext) {
		runs := 5
		if v := os.Getenv("BENCH_RUNS"); v != "" {
			var err error
			runs, err = strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred(), "BENCH_RUNS")
		}
		res := &failover.KindResults{Timestamp: time.Now().UTC().Format("20060102T150405Z"), Host: machine.Now(),
			Tier: "kind", Member: member, FaultSeconds: benchHold.Seconds(),
			Writer: failover.KindWriter{Connections: benchConnections, Account: c.Spec.User, WriteTimeout: "5s"}}
		var nodes corev1.NodeList
		Expect(clients[member].List(ctx, &nodes)).To(Succeed())
		res.Nodes = len(nodes.Items)
		res.ControllerArgs = memberControllerArgs(ctx, member)
		var lease coordinationv1.Lease
		Expect(clients[member].Get(ctx, client.ObjectKey{Namespace: render.JoinNamespace, Name: render.MemberControllerName}, &lease)).To(Succeed())
		res.LeaseSeconds = int(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0))
		faults := benchFaults
		// BENCH_FAULTS (comma-separated names) runs only those faults, in the usual order.
		if only := os.Getenv("BENCH_FAULTS"); only != "" {
			names := strings.Split(only, ",")
			faults = slices.DeleteFunc(slices.Clone(benchFaults), func(f benchFault) bool { return !slices.Contains(names, f.name) })
			Expect(faults).To(HaveLen(len(names)), "BENCH_FAULTS=%s names a fault that is not one of the bench's", only)
		}
		figures := map[string]*failover.Figure{}
		for _, f := range faults {
			figures[f.name] = &failover.Figure{What: f.what, TargetSeconds: f.target.Seconds()}
			res.Figures = append(res.Figures, figures[f.name])
		}
		// Written after every round, so that a bench stopped partway keeps the rounds it completed.
		record := func() {
			res.Host.LoadEnd = machine.LoadAverage()
			for _, f := range res.Figures {
				f.Summarize()
			}
			writeKindResults(res)
		}
		defer record()
		var tables []string
		for i := 1; i <= runs; i++ {
			for _, f := range faults {
				r := failover.Run{Kind: f.name, Index: i, Load1: machine.LoadAverage()[0]}
				b := &benchRun{member: member, c: c, key: key, table: fmt.Sprintf("orders.%s_%d", strings.ReplaceAll(f.name, "-", "_"), i)}
				err := b.run(ctx, f.name, &r, &tables)
				if err != nil {
					r.Error = err.Error()
				}
				figures[f.name].Runs = append(figures[f.name].Runs, r)
				_, _ = fmt.Fprintf(GinkgoWriter, "%s %d: %.2fs to the first write on %s (from %s), whole after %.0fs, %d acknowledged, %d failed, %d lost, %d old-primary acks; %s\n",
					f.name, i, r.Seconds, r.To, r.From, r.FullRedundancySeconds, r.Acknowledged, r.FailedWrites, r.Lost, r.OldPrimaryAcks, r.Error)
				Expect(r.Lost).To(BeZero(), "acknowledged writes lost in %s run %d: %v", f.name, i, r.LostIDs)
				Expect(r.OldPrimaryAcks).To(BeZero(), "the old primary acknowledged writes after the new one in %s run %d", f.name, i)
				Expect(err).NotTo(HaveOccurred(), "%s run %d", f.name, i)
			}
			record()
		}
	})
})

// benchRun is one fault on the set, from a whole set to a whole set.
type benchRun struct {
	member string
	c      *v1alpha1.MySQLCluster
	key    client.ObjectKey
	table  string
}

func (b *benchRun) replication(ctx context.Context) *v1alpha1.MemberReplication {
	ms := memberStatus(get(ctx, b.key), b.member)
	if ms == nil || ms.Replication == nil {
		return &v1alpha1.MemberReplication{}
	}
	return ms.Replication
}

// whole tells whether the hub shows the set at full redundancy: a primary, every replica in sync, none errant
// or unreachable, and no switchover asked for that is not done.
func (b *benchRun) whole(mr *v1alpha1.MemberReplication) bool {
	return mr.Primary != "" && mr.ReplicasInSync == b.c.Spec.Replicas-1 && len(mr.ErrantReplicas) == 0 &&
		len(mr.Unreachable) == 0 && mr.WritesBlocked == "" && (mr.RequestedPrimary == "" || mr.RequestedPrimary == mr.Primary)
}

func (b *benchRun) run(ctx context.Context, fault string, r *failover.Run, tables *[]string) error {
	// A whole set to start from: the previous run healed it, or this run fails before its fault.
	var mr *v1alpha1.MemberReplication
	if err := pollUntil(ctx, benchHeal, func() bool { mr = b.replication(ctx); return b.whole(mr) }); err != nil {
		return fmt.Errorf("the set is not whole before the fault: %+v", mr)
	}
	old := mr.Primary
	r.From = old
	before := mr.LastTransition
	if _, err := querySQL(ctx, b.member, b.key, b.c.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
		"CREATE TABLE "+b.table+" (id BIGINT PRIMARY KEY); SELECT 1"); err != nil {
		return err
	}
	*tables = append(*tables, b.table)
	var oldPod corev1.Pod
	if err := clients[b.member].Get(ctx, client.ObjectKey{Namespace: b.key.Namespace, Name: old}, &oldPod); err != nil {
		return err
	}
	r.PrimaryNode, r.LeaderNode = oldPod.Spec.NodeName, leaderNode(ctx, b.member)
	// Where the time goes: the member controller's record, the role labels, the primary Service's endpoints.
	wc, err := client.NewWithWatch(members[b.member].Config, client.Options{Scheme: clients[b.member].Scheme()})
	if err != nil {
		return err
	}
	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	tl := &failover.Timeline{}
	tl.WatchMember(watching, wc, b.key.Namespace, b.c, true)
	// The writer stands where the application would: on another node than the primary, which a node fault takes.
	writer := startClient(ctx, b.member, b.key, "bench-writer", b.c.PrimaryServiceName(), b.c.Spec.User, v1alpha1.PasswordKey,
		b.table, failover.WriterScript(benchConnections), offNode(oldPod.Spec.NodeName))
	defer deleteClient(ctx, b.member, b.key.Namespace, writer)
	if err := pollUntil(ctx, 3*time.Minute, func() bool { return len(failover.Acknowledged(b.writes(ctx, writer))) >= 20 }); err != nil {
		return fmt.Errorf("the writer got no 20 acknowledged writes before the fault")
	}
	var writerPod corev1.Pod
	if err := clients[b.member].Get(ctx, client.ObjectKey{Namespace: b.key.Namespace, Name: writer}, &writerPod); err != nil {
		return err
	}
	// Faults land anywhere in the member controller's poll cycle, as real ones do.
	spread := time.Duration(rand.Int64N(int64(5 * time.Second)))
	r.SpreadSeconds = spread.Seconds()
	time.Sleep(spread)

	target := ""
	var t0 float64
	var undo func() error
	switch fault {
	case faultDelete:
		t0 = unixNow()
		if err := clients[b.member].Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: b.key.Namespace, Name: old}}); err != nil {
			return err
		}
	case faultSwitchover:
		target = slices.DeleteFunc([]string{b.c.Name + "-0", b.c.Name + "-1", b.c.Name + "-2"}, func(p string) bool { return p == old })[0]
		ordinal, _ := strconv.Atoi(target[strings.LastIndex(target, "-")+1:])
		t0 = unixNow()
		update(ctx, b.key, func(c *v1alpha1.MySQLCluster) { c.Spec.Primaries = map[string]int32{b.member: int32(ordinal)} })
		// The request stays until the switch is done and is then removed, so that it does not pull the primary
		// back after a later run's failover.
		defer update(context.WithoutCancel(ctx), b.key, func(c *v1alpha1.MySQLCluster) { c.Spec.Primaries = nil })
	case faultNodeFrozen, faultNodeCut:
		hit := map[string]func(context.Context, string) (func(context.Context) error, error){
			faultNodeFrozen: kindfleet.FreezeNode, faultNodeCut: kindfleet.CutNode}[fault]
		// Timed from when the fault is whole: docker pause returns once every process is frozen (it is retried
		// when runc gives a freeze up), nft once the rules are in.
		end, err := hit(ctx, oldPod.Spec.NodeName)
		if err != nil {
			return err
		}
		t0 = unixNow()
		undo = func() error { return end(context.WithoutCancel(ctx)) }
		defer func() {
			if undo != nil {
				_ = undo()
			}
		}()
	default:
		node, pid, err := serverPID(ctx, b.member, b.key.Namespace, old)
		if err != nil {
			return err
		}
		cut := "iptables -I INPUT ! -i lo -j DROP && iptables -I OUTPUT ! -o lo -j DROP"
		uncut := "iptables -D INPUT ! -i lo -j DROP; iptables -D OUTPUT ! -o lo -j DROP"
		inNetns := func(script string) string { return "nsenter -t " + pid + " -n sh -c '" + script + "'" }
		step := map[string]struct{ do, then string }{
			faultKill:   {do: "kill -KILL " + pid},
			faultFrozen: {do: "kill -STOP " + pid, then: "kill -CONT " + pid},
			faultCut:    {do: inNetns(cut), then: inNetns(uncut)},
		}[fault]
		do, then := step.do, step.then
		out, err := nodeExec(ctx, node, "date +%s.%N && "+do)
		if err != nil {
			return fmt.Errorf("%s on %s: %w: %s", do, node, err, out)
		}
		if t0, err = strconv.ParseFloat(strings.TrimSpace(out), 64); err != nil {
			return fmt.Errorf("the node's clock: %q", out)
		}
		if then != "" {
			undo = func() error {
				if out, err := nodeExec(context.WithoutCancel(ctx), node, then); err != nil {
					return fmt.Errorf("%s on %s: %w: %s", then, node, err, out)
				}
				return nil
			}
			// Released on every path: here unless the run released it itself (undo then nil).
			defer func() {
				if undo != nil {
					_ = undo()
				}
			}()
		}
	}

	// The first write acknowledged after the fault by a new primary (see failover.Recovery); the writer goes on
	// for 5 s after it, and past the release of a frozen or cut-off primary, which must take none of its writes.
	var writes []failover.Write
	var first *failover.Write
	deadline := time.Now().Add(benchWithin)
	for first == nil || unixNow()-first.At < 5 {
		if time.Now().After(deadline) {
			return fmt.Errorf("no write acknowledged by a new primary within %s of the fault", benchWithin)
		}
		time.Sleep(time.Second)
		writes = b.writes(ctx, writer)
		first = failover.Recovery(writes, t0, old, target)
	}
	if undo != nil {
		time.Sleep(time.Until(time.Unix(0, int64(t0*1e9)).Add(benchHold)))
		if err := undo(); err != nil {
			return err
		}
		undo = nil
		time.Sleep(10 * time.Second)
	}
	writes = b.writes(ctx, writer)
	deleteClient(ctx, b.member, b.key.Namespace, writer)
	acked := r.Tally(writes, t0, old, target)
	at := func(unix float64) time.Time { return time.Unix(0, int64(unix*1e9)) }
	// The syncs of the kube-proxy that sends the writer's connections: the one on the writer's node.
	if logs, err := kubeProxyLogs(ctx, b.member, writerPod.Spec.NodeName, at(t0).Add(-10*time.Second)); err == nil {
		tl.AddKubeProxySyncs(logs, at(t0))
	} else {
		GinkgoWriter.Printf("kube-proxy's log on %s: %v\n", writerPod.Spec.NodeName, err)
	}
	r.Timeline = tl.Relative(at(t0))
	if r.Error != "" {
		return errors.New(r.Error)
	}
	refused, sawRefusal := time.Time{}, false
	if i := slices.IndexFunc(writes, func(w failover.Write) bool { return !w.Ack && w.At > t0 }); i >= 0 {
		refused, sawRefusal = at(writes[i].At), true
	}
	r.Phases = tl.Phases(at(t0), r.To, fault == faultSwitchover, refused, sawRefusal, r.Seconds)

	// Every acknowledged write is on the new primary, read as root from its own Pod.
	lost, err := b.missingOn(ctx, r.To, acked)
	if err != nil {
		return err
	}
	r.LostIDs = lost
	r.Lost = len(r.LostIDs)

	// Back to full redundancy without a human: the change of primary reported, every replica in sync again.
	if err := pollUntil(ctx, benchHeal, func() bool {
		mr = b.replication(ctx)
		changed := r.To == old || (mr.LastTransition != nil && mr.LastTransition.To == r.To && !equality.Semantic.DeepEqual(mr.LastTransition, before))
		return changed && mr.Primary == r.To && b.whole(mr)
	}); err != nil {
		return fmt.Errorf("the set was not whole again within %s of the fault: %+v", benchHeal, mr)
	}
	r.FullRedundancySeconds = unixNow() - t0
	if mr.LastTransition != nil {
		r.Transition = mr.LastTransition.Kind + " " + mr.LastTransition.From + " → " + mr.LastTransition.To
	}
	return b.sameEverywhere(ctx, *tables)
}

// sameEverywhere checks that every server of the whole set holds the same rows in every table the bench wrote
// so far (CHECKSUM TABLE, read as root from each Pod): a server rebuilt or rejoined in an earlier run must hold
// that run's writes too. Replicas in sync may still be applying the last writes, so it waits up to a minute.
func (b *benchRun) sameEverywhere(ctx context.Context, tables []string) error {
	var sums, seen []string // each server's checksums, and each as "pod: checksums" for the message
	err := pollUntil(ctx, time.Minute, func() bool {
		sums, seen = sums[:0], seen[:0]
		for i := range b.c.Spec.Replicas {
			pod := fmt.Sprintf("%s-%d", b.c.Name, i)
			out, err := querySQL(ctx, b.member, b.key, pod+"."+b.c.HeadlessServiceName(), "root", v1alpha1.RootPasswordKey,
				"CHECKSUM TABLE "+strings.Join(tables, ", ")+" EXTENDED")
			if err != nil {
				out = err.Error()
			}
			sums = append(sums, strings.Join(strings.Fields(out), " "))
			seen = append(seen, pod+": "+sums[i])
		}
		return len(slices.Compact(slices.Clone(sums))) == 1
	})
	if err != nil {
		return fmt.Errorf("the servers hold different rows: %s", strings.Join(seen, "; "))
	}
	return nil
}

// missingOn is the ids of acked that pod's server lacks in the run's table. The server computes them, a chunk of
// ids at a time: a client Pod's log does not carry a large result whole (see querySQL), so only the missing ids
// come back.
func (b *benchRun) missingOn(ctx context.Context, pod string, acked []int64) ([]int64, error) {
	const chunk = 4000 // ids per statement: about 30 KB of SQL in the client Pod's environment
	var lost []int64
	for start := 0; start < len(acked); start += chunk {
		vals := make([]string, 0, chunk)
		for _, id := range acked[start:min(start+chunk, len(acked))] {
			vals = append(vals, "("+strconv.FormatInt(id, 10)+")")
		}
		out, err := querySQL(ctx, b.member, b.key, pod+"."+b.c.HeadlessServiceName(), "root", v1alpha1.RootPasswordKey,
			"WITH acked(id) AS (VALUES "+strings.Join(vals, ",")+") SELECT acked.id FROM acked LEFT JOIN "+b.table+
				" t ON t.id = acked.id WHERE t.id IS NULL")
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(out) {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("reading the missing ids on %s: %q", pod, out)
			}
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// writes are the writer's lines so far.
func (b *benchRun) writes(ctx context.Context, writer string) []failover.Write {
	logs, _ := clientLogs(ctx, b.member, b.key.Namespace, writer)
	return failover.ParseWrites(logs)
}

// kubeProxyLogs is the log since since of the kube-proxy Pod on node.
func kubeProxyLogs(ctx context.Context, member, node string, since time.Time) (string, error) {
	cs := memberClientset(member)
	pods, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		LabelSelector: "k8s-app=kube-proxy", FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return "", err
	}
	if len(pods.Items) != 1 {
		return "", fmt.Errorf("%d kube-proxy Pods on the node", len(pods.Items))
	}
	b, err := cs.CoreV1().Pods(metav1.NamespaceSystem).GetLogs(pods.Items[0].Name,
		&corev1.PodLogOptions{SinceTime: &metav1.Time{Time: since}}).DoRaw(ctx)
	return string(b), err
}

// serverPID is the kind node that runs the Pod and the node's PID of the Pod's server: mariadbd is its
// container's first process (the entrypoint execs it), found by the container ID in its cgroup.
func serverPID(ctx context.Context, member, ns, name string) (string, string, error) {
	var pod corev1.Pod
	if err := clients[member].Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return "", "", err
	}
	id := ""
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == render.MySQLContainerName {
			_, id, _ = strings.Cut(s.ContainerID, "://")
		}
	}
	if id == "" || pod.Spec.NodeName == "" {
		return "", "", fmt.Errorf("pod %s has no running server container", name)
	}
	out, err := nodeExec(ctx, pod.Spec.NodeName, `for p in $(pgrep -x mariadbd); do grep -qs "`+id+`" /proc/$p/cgroup && echo $p; done; true`)
	pids := strings.Fields(out)
	if err != nil || len(pids) != 1 {
		return "", "", fmt.Errorf("the server of %s in node %s: %v %q", name, pod.Spec.NodeName, err, out)
	}
	return pod.Spec.NodeName, pids[0], nil
}

// leaderNode is the node of the member controller that holds its Lease ("" when none does): the holder's
// identity starts with its Pod's name (client-go's hostname_uuid).
func leaderNode(ctx context.Context, member string) string {
	var lease coordinationv1.Lease
	if err := clients[member].Get(ctx, client.ObjectKey{Namespace: render.JoinNamespace, Name: render.MemberControllerName}, &lease); err != nil {
		return ""
	}
	holder, _, _ := strings.Cut(ptr.Deref(lease.Spec.HolderIdentity, ""), "_")
	var pod corev1.Pod
	if holder == "" || clients[member].Get(ctx, client.ObjectKey{Namespace: render.JoinNamespace, Name: holder}, &pod) != nil {
		return ""
	}
	return pod.Spec.NodeName
}

// nodeExec runs a shell script in a kind node's container (the node's name is its container's).
func nodeExec(ctx context.Context, node, script string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "exec", node, "sh", "-c", script).CombinedOutput()
	return string(out), err
}

// memberControllerArgs are the member controller's arguments, as `mysqlfleet join` installed it.
func memberControllerArgs(ctx context.Context, member string) []string {
	d, err := memberClientset(member).AppsV1().Deployments(memberNamespace).Get(ctx, mfcli.MemberControllerName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return append(slices.Clone(d.Spec.Template.Spec.Containers[0].Command), d.Spec.Template.Spec.Containers[0].Args...)
}

// setMemberControllerFlags adds flags to the member controller's arguments (BENCH_MEMBER_FLAGS, for trying other
// timings than cmd/member's defaults; the run records the arguments it ran with) and waits for the rollout.
func setMemberControllerFlags(ctx context.Context, member string, flags []string) {
	deployments := memberClientset(member).AppsV1().Deployments(memberNamespace)
	d, err := deployments.Get(ctx, mfcli.MemberControllerName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	d.Spec.Template.Spec.Containers[0].Args = append(d.Spec.Template.Spec.Containers[0].Args, flags...)
	_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) string {
		d, err := deployments.Get(ctx, mfcli.MemberControllerName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return rollout(d)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(BeEmpty())
}

// pollUntil asks done every second until it holds, for at most within.
func pollUntil(ctx context.Context, within time.Duration, done func() bool) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, within, true, func(context.Context) (bool, error) { return done(), nil })
}

func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// writeKindResults saves the results as bench/results/failover-kind-<timestamp>.json and failover-kind-latest.json.
func writeKindResults(res *failover.KindResults) {
	writeBenchResults("failover-kind-", res.Timestamp, res)
}

// writeBenchResults saves a kind bench's results as bench/results/<prefix><timestamp>.json and
// <prefix>latest.json, which make bench-docs reads.
func writeBenchResults(prefix, timestamp string, res any) {
	data, err := json.MarshalIndent(res, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	data = append(data, '\n')
	dir := filepath.Join("..", "bench", "results")
	for _, name := range []string{prefix + timestamp + ".json", prefix + "latest.json"} {
		Expect(os.WriteFile(filepath.Join(dir, name), data, 0o644)).To(Succeed())
	}
	_, _ = fmt.Fprintf(GinkgoWriter, "results: %s\n", filepath.Join(dir, prefix+timestamp+".json"))
}
