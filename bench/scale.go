package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet/shard"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The scale profile (-scale 10,20,30): for each number of members, one fleet of that many bare members, the
// floor (the same objects pushed by Go server-side apply) on it, then the convergence by one manager replica and,
// once that run's MySQLClusters are deleted and their objects gone from the members, by -replicas sharded
// replicas, on the same fleet. For each it records the convergence, the idle writes and every replica's memory; on
// the sharded replicas it also kills -9 the replica of the most members once converged and times the takeover. It
// writes <out>/scale-<timestamp>.json (and scale-latest.json) and a PNG of memory and convergence time against
// members.
//
// One fleet for both runs of a size: runs on two fleets of one size (until 2026-11-28) compared two sets of
// control planes started minutes apart, and their floors differed by up to 38 % (the same objects cost the members
// a third more CPU on one fleet than on the other), as much as the ratio being judged. The single replica runs
// first: whatever the second run on a fleet pays for it (a larger etcd history, a warmer or colder machine) is
// paid by the sharded replicas. The replicas' caches still hold only their own run's objects: the first run's are
// deleted, through mysqlfleet, before the sharded replicas start.

// runScale runs the scale profile.
func (b *bench) runScale(ctx context.Context, stamp string) int {
	o := b.o
	res := &ScaleResults{Started: time.Now(), Host: b.res.Host, Profiles: b.profDir, Params: ScaleParams{
		Members: o.scale, Clusters: o.clusters, PerNamespace: o.perNamespace, Replicas: o.replicas,
		IdleSeconds: o.idle.Seconds(), Workers: o.workers, ManagerProcs: o.managerProcs, PinTiers: o.pinTiers,
	}}
	for _, n := range o.scale {
		if ctx.Err() != nil {
			break
		}
		size, err := b.scaleSize(ctx, n)
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%d members: %v", n, err))
			b.logf("%d members: %v", n, err)
		}
		size.summarize()
		res.Sizes = append(res.Sizes, size)
		b.logf("%d members: convergence %.2fs with 1 replica, %.2fs with %d (%.2fx); heap %.1f MiB, at most %.1f MiB per replica (%.2fx)",
			n, size.Single.Convergence.TotalSeconds, size.Sharded.Convergence.TotalSeconds, o.replicas, size.ConvergenceRatio,
			size.Single.heapMiB(), size.Sharded.maxHeapMiB(), size.HeapRatio)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted; no results written")
		return 130
	}
	res.Finished = time.Now()
	res.Host.Load1End = load1()
	res.evaluate()
	png := filepath.Join(o.out, "scale-"+stamp+".png")
	if err := plotScale(res, png); err != nil {
		res.Errors = append(res.Errors, "plot: "+err.Error())
	} else {
		res.Plot = png
		if err := copyFile(png, filepath.Join(o.out, "scale-latest.png")); err != nil {
			res.Errors = append(res.Errors, "plot: "+err.Error())
		}
	}
	fmt.Println(scaleLegend)
	fmt.Println()
	printScale(os.Stdout, res)
	path, err := writeScaleJSON(o.out, stamp, res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing results:", err)
		return 1
	}
	fmt.Printf("results: %s (and %s); plot: %s\n", path, filepath.Join(o.out, "scale-latest.json"), res.Plot)
	if len(res.Errors) > 0 {
		return 1
	}
	return 0
}

// scaleSize is one size of the scale profile on a fleet of its own: the floor, one replica's run, the deletion of
// its MySQLClusters, the sharded replicas' run.
func (b *bench) scaleSize(ctx context.Context, n int) (ScaleSize, error) {
	o := b.o
	size := ScaleSize{Members: n, Single: ScaleRun{Replicas: 1}, Sharded: ScaleRun{Replicas: o.replicas}}
	root, err := testfleet.ModuleRoot()
	if err != nil {
		return size, err
	}
	b.logf("%dm: starting the hub and %d bare members", n, n)
	f, err := testfleet.Start(ctx, testfleet.Options{
		Members:              memberDefinitions(n)[:n],
		HubCRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
	})
	if err != nil {
		return size, err
	}
	// A hub runs on machines of its own. Here its kube-apiserver and etcd are 2 of 2n+1 control-plane processes
	// on two cores, and with 20 members the hub answered so slowly (its kube-apiserver got 9 % of a core) that a
	// status patch timed out after a minute and the leader could not renew its Lease. Both runs, one replica and
	// sharded, run with the same priority; the floor writes to the members only.
	if err := f.Hub.Renice(hubNice); err != nil {
		b.logf("warning: %v: the hub shares the CPU with the members equally", err)
	}
	if o.pinTiers {
		if err := b.pinTiers(f); err != nil {
			_ = f.Stop()
			return size, err
		}
	}
	b.f, b.members, b.obs = f, f.Members, newObserver()
	b.clients = map[string]kubernetes.Interface{f.Hub.Name: f.Hub.Clientset()}
	b.facts = map[string]placement.Member{}
	defer func() {
		b.mgr.stop()
		b.mgr = nil
		b.obs.stop()
		b.logf("%dm: stopping the fleet", n)
		if err := f.Stop(); err != nil {
			b.logf("stopping the fleet: %v", err)
		}
	}()
	if b.hub, err = client.NewWithWatch(f.Hub.Config, client.Options{Scheme: mysqlcluster.Scheme()}); err != nil {
		return size, err
	}
	for _, m := range f.Members {
		b.clients[m.Name] = m.Clientset()
		if b.facts[m.Name], err = placement.MemberFromSecret(registrationSecret(m)); err != nil {
			return size, err
		}
		if err := b.obs.watch(ctx, m.Name, m.Config); err != nil {
			return size, err
		}
	}
	if err := b.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}); err != nil {
		return size, err
	}
	single := fmt.Sprintf("%dm-1r", n)
	if b.mgr, err = b.startManagers(ctx, single, 1); err != nil {
		return size, err
	}

	// The floor first, with the replica running and no member registered: it sees none of it.
	g, err := newGroup(ctx, b.hub, "b", o.clusters, o.perNamespace, b.factsOf(b.members...), true)
	if err != nil {
		return size, err
	}
	before := b.snapshot(ctx)
	start, _, err := pushGo(ctx, g, b.members, o.workers)
	if err != nil {
		return size, fmt.Errorf("floor: %w", err)
	}
	floor := b.finish(ctx, before, g, names(b.members), start, nil)
	size.Single.Floor, size.Sharded.Floor = floor, floor
	b.logf("%dm: floor %.2fs for %d objects", n, floor.TotalSeconds, floor.Objects)

	h, _, err := b.replicasRun(ctx, single, "h", &size.Single)
	if err != nil {
		return size, fmt.Errorf("1 replica: %w", err)
	}
	cleared := time.Now()
	if err := b.deleteGroup(ctx, h); err != nil {
		return size, fmt.Errorf("deleting the single replica's MySQLClusters: %w", err)
	}
	size.ClearSeconds = seconds(time.Since(cleared))
	b.logf("%dm: the single replica's MySQLClusters and their member objects deleted in %.2fs", n, size.ClearSeconds)
	b.mgr.stop()
	b.mgr = nil
	// The sharded replicas start as the single one did, before the members are registered: they find each other
	// first, and each engages its share only.
	for _, m := range b.members {
		if err := b.hub.Delete(ctx, registrationSecret(m)); err != nil {
			return size, err
		}
	}

	sharded := fmt.Sprintf("%dm-%dr", n, o.replicas)
	if o.replicas == 1 {
		sharded += "-again" // -replicas 1: the same manager a second time
	}
	if b.mgr, err = b.startManagers(ctx, sharded, o.replicas); err != nil {
		return size, err
	}
	s, owners, err := b.replicasRun(ctx, sharded, "s", &size.Sharded)
	if err != nil {
		return size, fmt.Errorf("%d replicas: %w", o.replicas, err)
	}
	if o.replicas > 1 {
		if size.Sharded.Takeover, err = b.takeover(ctx, s, owners); err != nil {
			return size, fmt.Errorf("takeover: %w", err)
		}
	}
	return size, nil
}

// pinTiers pins the hub's control plane to pinHubCPU, and the members' and the bench's own threads to
// pinMembersCPU (-pin-tiers).
func (b *bench) pinTiers(f *testfleet.Fleet) error {
	if n, err := pinProcessesIn(f.Hub.Dir, pinHubCPU); err != nil || n != 2 {
		return fmt.Errorf("pinning the hub's kube-apiserver and etcd: %d pinned (%v)", n, err)
	}
	for _, m := range f.Members {
		if n, err := pinProcessesIn(m.Dir, pinMembersCPU); err != nil || n != 2 {
			return fmt.Errorf("pinning %s's kube-apiserver and etcd: %d pinned (%v)", m.Name, n, err)
		}
	}
	return pinProcess(os.Getpid(), pinMembersCPU)
}

// startManagers starts the replicas of a run, their logs and profiles in the run's directory.
func (b *bench) startManagers(ctx context.Context, name string, replicas int) (*managers, error) {
	dir := filepath.Join(b.profDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return startManagers(ctx, b.f.Hub.KubeconfigPath, dir, replicas, b.o)
}

// replicasRun is one run of the replicas now running: the members registered and every one engaged, the
// replicas' memory, the convergence of a group of MySQLClusters named by prefix, the idle writes and the memory
// converged. It returns the group and the replica that works in each member.
func (b *bench) replicasRun(ctx context.Context, name, prefix string, out *ScaleRun) (*group, map[string]*managerProc, error) {
	o := b.o
	all := names(b.members)
	if err := b.waitPeers(ctx, len(b.mgr.procs)); err != nil {
		return nil, nil, err
	}
	b.logf("%s: registering %d members", name, len(all))
	for _, m := range b.members {
		if err := b.hub.Create(ctx, registrationSecret(m)); err != nil {
			return nil, nil, err
		}
	}
	if err := b.mgr.waitEngaged(ctx, all, 2*time.Minute); err != nil {
		return nil, nil, err
	}
	if err := b.waitOwnersStable(ctx, all); err != nil {
		return nil, nil, err
	}
	engaged, err := b.mgr.settledEach(ctx)
	if err != nil {
		return nil, nil, err
	}
	h, err := newGroup(ctx, b.hub, prefix, o.clusters, o.perNamespace, b.factsOf(b.members...), false)
	if err != nil {
		return nil, nil, err
	}
	b.logf("%s: %d MySQLClusters onto %d members", name, o.clusters, len(all))
	// Where the hub's CPU goes: sharded replicas write more status to it (rows, summaries) than one replica.
	b.profileHub(ctx, name)
	out.Convergence = b.mysqlfleetRun(ctx, name, h, b.members)
	out.RatioFloor = ratio(out.Convergence.TotalSeconds, out.Floor.TotalSeconds)
	b.logf("%s: mysqlfleet %.2fs (%.2fx the floor), %d missing, %.0f reconciles", name, out.Convergence.TotalSeconds,
		out.RatioFloor, out.Convergence.Missing, out.Convergence.Manager["reconciles"])

	// The convergence is timed on the members' objects; status writes that the hub refused meanwhile (it timed out
	// rows patches of the sharded 30-member fleet on 2026-11-26) are retried after it. Let them pass, as the
	// phases do, so that the idle window counts what an idle fleet writes.
	b.quiesce(ctx)
	out.Idle = b.idle(ctx)
	b.logf("%s: idle writes over %s: hub %.0f, members %.0f", name, o.idle, out.Idle.HubWrites, out.Idle.MemberWrites)
	converged, err := b.mgr.settledEach(ctx)
	if err != nil {
		return nil, nil, err
	}
	owners, err := b.mgr.owners(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for i, p := range b.mgr.live() {
		r := ReplicaMem{Identity: p.identity, Engaged: engaged[i], Converged: converged[i]}
		for m, q := range owners {
			if q == p {
				r.Members++
				r.Owned = append(r.Owned, m)
			}
		}
		slices.Sort(r.Owned)
		out.Replica = append(out.Replica, r)
	}
	if err := b.mgr.heapProfile(ctx, filepath.Join(b.profDir, name, "manager-converged.heap.pprof")); err != nil {
		b.logf("%s: heap profile: %v", name, err)
	}
	return h, owners, nil
}

// waitPeers waits, for sharded replicas, until each has its peer Lease on the hub, and then settle more so that
// each has seen the others': members registered before that would be claimed by the first replica up and handed
// over during the run (on 2026-11-28, 5 s after the start, that was 36 member caches started and stopped during a
// 20-member convergence).
func (b *bench) waitPeers(ctx context.Context, replicas int) error {
	if replicas > 1 {
		deadline := time.Now().Add(time.Minute)
		for {
			var list coordinationv1.LeaseList
			err := b.hub.List(ctx, &list, client.InNamespace(managerNamespace), client.MatchingLabels{shard.LeaseLabel: shard.PeerLease})
			if err == nil && len(list.Items) >= replicas {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d replicas, peer Leases after a minute: %d (%v)", replicas, len(list.Items), err)
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return sleep(ctx, b.o.settle)
}

// waitOwnersStable waits until the members' owners have not changed for settle: a run starts with every member
// where it stays.
func (b *bench) waitOwnersStable(ctx context.Context, members []string) error {
	deadline := time.Now().Add(2 * time.Minute)
	var last map[string]string
	stableSince := time.Now()
	for {
		owners, err := b.mgr.owners(ctx, members)
		now := map[string]string{}
		for m, p := range owners {
			now[m] = p.identity
		}
		if err != nil || len(now) != len(members) || !maps.Equal(now, last) {
			last, stableSince = now, time.Now()
		} else if time.Since(stableSince) >= b.o.settle {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the members' owners still changed after 2 minutes (%v)", err)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// deleteGroup deletes a group's MySQLClusters with deletionPolicy Delete, so that the replicas running tear
// down every object of theirs in the members, and waits until the MySQLClusters are gone (their finalizers come
// off once nothing of theirs is left in any member). A bare member has no controller manager, whose
// pvc-protection controller would take its finalizer off a PersistentVolumeClaim that no Pod uses: meanwhile the
// bench does that.
func (b *bench) deleteGroup(ctx context.Context, g *group) error {
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	for _, c := range g.clusters {
		patch := []byte(`{"spec":{"deletionPolicy":"Delete"}}`)
		if err := b.hub.Patch(ctx, c.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		if err := b.hub.Delete(ctx, c.DeepCopy()); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	for {
		left := 0
		for _, c := range g.clusters {
			err := b.hub.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.MySQLCluster{})
			switch {
			case err == nil:
				left++
			case !apierrors.IsNotFound(err):
				return err
			}
		}
		if left == 0 {
			return nil
		}
		b.releaseClaims(ctx)
		if err := sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("%d MySQLClusters left: %w", left, err)
		}
	}
}

// releaseClaims takes the pvc-protection finalizer off the members' deleted PersistentVolumeClaims, as a member's
// controller manager does for claims no Pod uses (a bare member runs no Pods).
func (b *bench) releaseClaims(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range b.members {
		wg.Go(func() {
			cs := b.clients[m.Name]
			list, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{
				LabelSelector: v1alpha1.ManagedByLabel + "=" + v1alpha1.ManagedByValue})
			if err != nil {
				return
			}
			for _, pvc := range list.Items {
				if pvc.DeletionTimestamp == nil || len(pvc.Finalizers) == 0 {
					continue
				}
				patch := []byte(`{"metadata":{"finalizers":null}}`)
				_, _ = cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		})
	}
	wg.Wait()
}

// takeoverTraceSeconds is how long the survivors are traced from the kill: the lease duration (15 s), the
// takeover itself, and some room.
const takeoverTraceSeconds = 20

// hubNice is the CPU priority of the hub's kube-apiserver and etcd in the scale profile.
const hubNice = -10

// takeover kills -9 the replica that works in the most members of a converged fleet and times the others taking
// its members over: until their caches are synced (the cold sync, from the first claim), and until they have
// verified every object there (every MySQLCluster reconciled there since the kill); it counts their requests to
// those members, and the writes and single-object reads those members' API servers served meanwhile.
func (b *bench) takeover(ctx context.Context, h *group, owners map[string]*managerProc) (*Takeover, error) {
	var victim *managerProc
	count := map[*managerProc]int{}
	for _, p := range owners {
		count[p]++
		if victim == nil || count[p] > count[victim] || count[p] == count[victim] && p.identity < victim.identity {
			victim = p
		}
	}
	t := &Takeover{Victim: victim.identity}
	for m, p := range owners {
		if p == victim {
			t.Members = append(t.Members, m)
		}
	}
	slices.Sort(t.Members)
	survivors := slices.DeleteFunc(b.mgr.live(), func(p *managerProc) bool { return p == victim })
	reqsBefore := scrapeFleet(ctx, b.clients)
	countersBefore := map[*managerProc]map[string]float64{}
	for _, p := range survivors {
		countersBefore[p] = p.memberCounters(ctx)
	}
	// Every MySQLCluster of the run is placed on every member: verified means reconciled once more each.
	for _, p := range survivors {
		if err := p.startVerify(ctx, t.Members, len(h.clusters)); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(b.profDir, "takeover-"+strconv.Itoa(len(owners)))
	if err := os.MkdirAll(dir, 0o755); err == nil {
		for _, p := range survivors {
			_ = p.startCPUProfile(ctx, filepath.Join(dir, "manager-"+p.identity+".cpu.pprof"))
		}
		defer func() {
			for _, p := range survivors {
				_ = p.stopCPUProfile(context.WithoutCancel(ctx))
			}
		}()
	}

	// An execution trace of each survivor over the takeover, for `go tool trace` (-pprof=sync shows where
	// goroutines waited): the CPU profiles show that the survivors mostly wait.
	var traces sync.WaitGroup
	defer traces.Wait()
	for _, p := range survivors {
		traces.Go(func() {
			if body, err := p.get(ctx, fmt.Sprintf("/debug/pprof/trace?seconds=%d", takeoverTraceSeconds)); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "manager-"+p.identity+".trace"), body, 0o644)
			}
		})
	}

	b.logf("takeover: kill -9 %s, which works in %d members", victim.identity, len(t.Members))
	killed := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	<-victim.done
	claimed, synced, begun, verified := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	deadline := killed.Add(b.o.timeout)
	for len(verified) < len(t.Members) && time.Now().Before(deadline) {
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
		claims, err := b.claims(ctx)
		if err != nil {
			continue
		}
		for _, m := range t.Members {
			// The new owner stamps the claim when it takes it (same host, same clock).
			if l := claims[m]; l != nil && ptr.Deref(l.Spec.HolderIdentity, "") != victim.identity && l.Spec.AcquireTime != nil {
				claimed[m] = l.Spec.AcquireTime.Time
			}
		}
		for _, p := range survivors {
			if at, err := p.engagedAt(ctx); err == nil {
				for _, m := range t.Members {
					if ts, ok := at[m]; ok {
						synced[m] = ts
					}
				}
			}
			if at, err := p.verifiedAt(ctx); err == nil {
				maps.Copy(begun, at.Begun)
				maps.Copy(verified, at.Verified)
			}
		}
	}
	t.Missing = len(t.Members) - len(verified)
	first := earliest(claimed)
	t.ClaimedAfterSeconds = seconds(first.Sub(killed))
	t.CacheSyncSeconds = seconds(latest(synced).Sub(first))
	t.VerifiedSeconds = seconds(latest(verified).Sub(first))
	t.Ratio = ratio(t.VerifiedSeconds, t.CacheSyncSeconds)
	t.Timeline = map[string]TakeoverSteps{}
	since := func(at map[string]time.Time, m string) float64 {
		if ts, ok := at[m]; ok {
			return seconds(ts.Sub(first))
		}
		return -1
	}
	for _, m := range t.Members {
		t.Timeline[m] = TakeoverSteps{Claimed: since(claimed, m), Synced: since(synced, m), FirstPass: since(begun, m),
			Verified: since(verified, m)}
	}

	t.OwnerRequests = map[string]float64{}
	for _, p := range survivors {
		c := p.memberCounters(ctx)
		for _, m := range t.Members {
			for _, verb := range requestVerbs {
				if d := c[m+"/"+verb] - countersBefore[p][m+"/"+verb]; d != 0 {
					t.OwnerRequests[verb] += d
				}
			}
		}
	}
	after := scrapeFleet(ctx, b.clients).delta(reqsBefore)
	for _, m := range t.Members {
		w, _ := after[m].writes(false)
		t.MemberWrites += w
		for k, v := range after[m] {
			if res, verb := splitKey(k); verb == "GET" && ourResource[res] {
				t.MemberGets += v
			}
		}
	}
	b.logf("takeover: claimed %.2fs after the kill; caches synced %.2fs and every object verified %.2fs after the first claim (%.2fx); requests %v; member writes %.0f, gets %.0f",
		t.ClaimedAfterSeconds, t.CacheSyncSeconds, t.VerifiedSeconds, t.Ratio, t.OwnerRequests, t.MemberWrites, t.MemberGets)
	for _, m := range t.Members {
		s := t.Timeline[m]
		b.logf("takeover: %s claimed %.2fs, synced %.2fs, first pass %.2fs, verified %.2fs after the first claim",
			m, s.Claimed, s.Synced, s.FirstPass, s.Verified)
	}
	return t, nil
}

// ourResource are the member resources mysqlfleet writes, by the API server's resource names.
var ourResource = map[string]bool{
	"namespaces": true, "secrets": true, "configmaps": true, "services": true, "persistentvolumeclaims": true,
	"statefulsets": true, "poddisruptionbudgets": true, "cronjobs": true, "jobs": true,
}

// requestVerbs are the verbs of mysqlfleet_member_requests_total.
var requestVerbs = []string{"get", "list", "watch", "create", "update", "patch", "apply", "delete", "discovery"}

// memberCounters reads a replica's per-member counters: "<member>/reconciles" and "<member>/<verb>".
func (p *managerProc) memberCounters(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	raw, err := p.managerMetrics(ctx)
	if err != nil {
		return out
	}
	for _, s := range parseMetric(raw, "mysqlfleet_member_reconciles_total") {
		out[s.labels["member"]+"/reconciles"] += s.value
	}
	for _, s := range parseMetric(raw, "mysqlfleet_member_requests_total") {
		out[s.labels["member"]+"/"+s.labels["verb"]] += s.value
	}
	return out
}

// claims reads the members' claim Leases on the hub, by member.
func (b *bench) claims(ctx context.Context) (map[string]*coordinationv1.Lease, error) {
	var list coordinationv1.LeaseList
	if err := b.hub.List(ctx, &list, client.InNamespace(managerNamespace), client.MatchingLabels{shard.LeaseLabel: shard.MemberLease}); err != nil {
		return nil, err
	}
	out := map[string]*coordinationv1.Lease{}
	for i := range list.Items {
		out[list.Items[i].Annotations[shard.MemberAnnotation]] = &list.Items[i]
	}
	return out, nil
}

func earliest(ts map[string]time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if out.IsZero() || t.Before(out) {
			out = t
		}
	}
	return out
}

func latest(ts map[string]time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
