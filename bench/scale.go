package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The scale profile (-scale 10,20,30): for each number of members, one fleet of that many bare members, the
// floor (the same objects pushed by Go server-side apply) on it, then the convergence by the manager. It records
// the convergence, the idle writes and the manager's memory, and writes <out>/scale-<timestamp>.json (and
// scale-latest.json) and a PNG of memory and convergence time against members.

// runScale runs the scale profile.
func (b *bench) runScale(ctx context.Context, stamp string) int {
	o := b.o
	res := &ScaleResults{Started: time.Now(), Host: b.res.Host, Profiles: b.profDir, Params: ScaleParams{
		Members: o.scale, Clusters: o.clusters, PerNamespace: o.perNamespace, IdleSeconds: o.idle.Seconds(),
		Workers: o.workers, ManagerProcs: o.managerProcs, PinTiers: o.pinTiers,
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
		res.Sizes = append(res.Sizes, size)
		b.logf("%d members: convergence %.2fs (%.2fx the floor); heap %.1f MiB, RSS %.1f MiB", n,
			size.Single.Convergence.TotalSeconds, size.Single.RatioFloor, size.Single.heapMiB(), size.Single.rssMiB())
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

// scaleSize is one size of the scale profile on a fleet of its own: the floor, then the manager's run.
func (b *bench) scaleSize(ctx context.Context, n int) (ScaleSize, error) {
	o := b.o
	size := ScaleSize{Members: n}
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
	// status patch timed out after a minute. The floor writes to the members only.
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
	name := fmt.Sprintf("%dm", n)
	if b.mgr, err = b.startScaleManager(ctx, name); err != nil {
		return size, err
	}

	// The floor first, with the manager running and no member registered: it sees none of it.
	g, err := newGroup(ctx, b.hub, "b", o.clusters, o.perNamespace, b.factsOf(b.members...), true)
	if err != nil {
		return size, err
	}
	before := b.snapshot(ctx)
	start, _, err := pushGo(ctx, g, b.members, o.workers)
	if err != nil {
		return size, fmt.Errorf("floor: %w", err)
	}
	size.Single.Floor = b.finish(ctx, before, g, names(b.members), start, nil)
	b.logf("%dm: floor %.2fs for %d objects", n, size.Single.Floor.TotalSeconds, size.Single.Floor.Objects)
	return size, b.managerRun(ctx, name, &size.Single)
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

// startScaleManager starts the manager of a size, its log and profiles in the size's directory.
func (b *bench) startScaleManager(ctx context.Context, name string) (*managerProc, error) {
	dir := filepath.Join(b.profDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return startManager(ctx, b.f.Hub.KubeconfigPath, filepath.Join(dir, "manager.log"), b.o)
}

// managerRun is the manager's run on a fleet: the members registered and every one engaged, the manager's memory,
// the convergence of a group of MySQLClusters, the idle writes and the memory converged.
func (b *bench) managerRun(ctx context.Context, name string, out *ScaleRun) error {
	o := b.o
	all := names(b.members)
	b.logf("%s: registering %d members", name, len(all))
	for _, m := range b.members {
		if err := b.hub.Create(ctx, registrationSecret(m)); err != nil {
			return err
		}
	}
	if err := b.mgr.waitEngaged(ctx, all, 2*time.Minute); err != nil {
		return err
	}
	_ = sleep(ctx, o.settle)
	engaged, err := b.mgr.settledMem(ctx)
	if err != nil {
		return err
	}
	h, err := newGroup(ctx, b.hub, "h", o.clusters, o.perNamespace, b.factsOf(b.members...), false)
	if err != nil {
		return err
	}
	b.logf("%s: %d MySQLClusters onto %d members", name, o.clusters, len(all))
	b.profileHub(ctx, name)
	out.Convergence = b.mysqlfleetRun(ctx, name, h, b.members)
	out.RatioFloor = ratio(out.Convergence.TotalSeconds, out.Floor.TotalSeconds)
	b.logf("%s: mysqlfleet %.2fs (%.2fx the floor), %d missing, %.0f reconciles", name, out.Convergence.TotalSeconds,
		out.RatioFloor, out.Convergence.Missing, out.Convergence.Manager["reconciles"])

	// The convergence is timed on the members' objects; status writes that the hub refused meanwhile are retried
	// after it. Let them pass, as the phases do, so that the idle window counts what an idle fleet writes.
	b.quiesce(ctx)
	out.Idle = b.idle(ctx)
	b.logf("%s: idle writes over %s: hub %.0f, members %.0f", name, o.idle, out.Idle.HubWrites, out.Idle.MemberWrites)
	converged, err := b.mgr.settledMem(ctx)
	if err != nil {
		return err
	}
	out.Memory = []ReplicaMem{{Engaged: engaged, Converged: converged}}
	if err := b.mgr.heapProfile(ctx, filepath.Join(b.profDir, name, "manager-converged.heap.pprof")); err != nil {
		b.logf("%s: heap profile: %v", name, err)
	}
	return nil
}

// hubNice is the CPU priority of the hub's kube-apiserver and etcd in the scale profile.
const hubNice = -10

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
