package main

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// phases runs the measurements in order; a failed phase is reported and the next one still runs where it can.
func (b *bench) phases(ctx context.Context) {
	o := b.o
	all := append(append([]*testfleet.Cluster(nil), b.members...), b.join)

	// A small warm-up, so that the first measured run does not pay for first writes of each kind.
	if g, err := newGroup(ctx, b.hub, "w", 1, 1, b.factsOf(all...), true); err == nil {
		if _, _, err := pushGo(ctx, g, all, o.workers); err != nil {
			b.fail("warm-up", err)
		}
		b.obs.wait(ctx, g.allKeys(), time.Minute)
	}

	// Members that fill from empty slow down, then level off (the floor's time from one repetition to the next in
	// bench/results/20261126T102849Z.json, a -repeat 5 run without pre-fill): an approach measured first on an
	// empty fleet is flattered against the others. So the members are filled first, by the floor's method and
	// with the baselines' label (the manager caches none of it), and not measured.
	for i := range o.prefill {
		g, err := newGroup(ctx, b.hub, "p"+strconv.Itoa(i), o.clusters, o.perNamespace, b.factsOf(b.members...), true)
		if err != nil {
			b.fail("pre-fill", err)
			break
		}
		b.logf("pre-fill %d of %d: %d objects by the floor's method, not measured", i+1, o.prefill, g.children+g.namespaces)
		if _, _, err := pushGo(ctx, g, b.members, o.workers); err != nil {
			b.fail("pre-fill", err)
			break
		}
		b.obs.wait(ctx, g.allKeys(), o.timeout)
	}

	// 1. Convergence, -repeat times. Every run's MySQLClusters stay: each later phase finds them all.
	var healthy []*group
	for i := range o.repeat {
		run, g, err := b.convergence(ctx, i+1, all)
		if err != nil {
			b.fail("mysqlfleet", err)
			break
		}
		b.res.Convergence.Runs = append(b.res.Convergence.Runs, run)
		healthy = append(healthy, g)
	}
	b.res.Convergence.summarize()
	if len(healthy) == 0 {
		return
	}
	if err := b.mgr.heapProfile(ctx, filepath.Join(b.profDir, "manager-converged.heap.pprof")); err != nil {
		b.fail("heap profile", err)
	}

	// 2. Status reflection.
	b.res.Status = b.statusReflection(ctx, healthy[len(healthy)-1])
	b.logf("status reflection: P50 %.3fs, P99 %.3fs", b.res.Status.P50Seconds, b.res.Status.P99Seconds)

	// 3. Idle writes, then the memory of the converged fleet.
	b.res.Idle = b.idle(ctx)
	b.logf("idle writes over %s: hub %.0f, members %.0f (CPU-s: manager %.1f, fleet %.1f)", o.idle, b.res.Idle.HubWrites,
		b.res.Idle.MemberWrites, b.res.Idle.ManagerCPUSeconds, b.res.Idle.FleetCPUSeconds)
	if s, err := b.mgr.settledMem(ctx); err != nil {
		b.fail("memory", err)
	} else {
		m := &b.res.Memory
		m.Converged = s
		m.ChildObjects = b.cached
		m.HeapPer1000ChildrenMiB = round(float64(int64(s.HeapInuseBytes)-int64(m.Members.HeapInuseBytes))/mib/(float64(m.ChildObjects)/1000), 2)
		m.RSSPer1000ChildrenMiB = round(float64(int64(s.RSSBytes)-int64(m.Members.RSSBytes))/mib/(float64(m.ChildObjects)/1000), 2)
		m.LivePer1000ChildrenMiB = round(float64(int64(s.HeapAllocBytes)-int64(m.Members.HeapAllocBytes))/mib/(float64(m.ChildObjects)/1000), 2)
	}

	// 4. Join.
	b.joinPhase(ctx, healthy)

	// 5. One member's API server stopped; then one member partitioned from the manager.
	b.stopped(ctx, all)
	if o.partition {
		b.partitioned(ctx, all)
	}

	// 6. Unrelated objects.
	if o.unrelated > 0 {
		b.unrelated(ctx, all)
	}
}

// convergence is one run of the convergence phase, on namespaces of its own (their names end in rep): the floor,
// kubectl and mysqlfleet. It returns the figures and mysqlfleet's group, rendered for all the members (the
// joining one too: its objects there are what the join waits for).
//
// Every approach's objects stay, so each one runs on member API servers that hold more than the one before it
// did, and they get slower as they fill (the floor's time from one repetition to the next in
// bench/results/20261126T045436Z.json, whose approaches ran in one order). Measured always in the same order, the
// approach that comes last pays for that in every run. The order therefore rotates from run to run (run 1:
// floor, kubectl, mysqlfleet; run 2: mysqlfleet, floor, kubectl; run 3: kubectl, mysqlfleet, floor; ...), and
// the manager is let settle before whatever follows mysqlfleet, so that its trailing status writes are not timed
// as another approach's.
func (b *bench) convergence(ctx context.Context, rep int, all []*testfleet.Cluster) (ConvergenceRun, *group, error) {
	o := b.o
	var out ConvergenceRun
	registered := b.factsOf(b.members...)
	tag := strconv.Itoa(rep)
	b.logf("run %d of %d", rep, o.repeat)

	floor := func() {
		g, err := newGroup(ctx, b.hub, "b"+tag, o.clusters, o.perNamespace, registered, true)
		if err != nil {
			b.fail("floor", err)
			return
		}
		b.logf("(b) floor: %d objects by Go server-side apply, %d workers per member", g.children+g.namespaces, o.workers)
		b.profileMember(ctx, "floor-"+tag)
		before := b.snapshot(ctx)
		start, _, err := pushGo(ctx, g, b.members, o.workers)
		if err != nil {
			b.fail("floor", err)
		}
		out.Floor = b.finish(ctx, before, g, names(b.members), start, nil)
		b.logf("(b) floor: %.2fs", out.Floor.TotalSeconds)
	}
	kubectl := func() {
		b.logf("(a) kubectl apply --server-side into %d members at once", o.members)
		g, err := newGroup(ctx, b.hub, "a"+tag, o.clusters, o.perNamespace, registered, true)
		if err != nil {
			b.fail("kubectl", err)
			return
		}
		dirs, err := writeManifests(filepath.Join(b.tmpDir, "a"+tag), g, b.members)
		if err != nil {
			b.fail("kubectl", err)
			return
		}
		b.profileMember(ctx, "kubectl-"+tag)
		before := b.snapshot(ctx)
		start, _, err := pushKubectl(ctx, b.kubectl, filepath.Join(b.tmpDir, "kubectl-cache"), dirs, b.members)
		if err != nil {
			b.fail("kubectl", err)
		}
		out.Kubectl = b.finish(ctx, before, g, names(b.members), start, nil)
		b.logf("(a) kubectl: %.2fs", out.Kubectl.TotalSeconds)
	}
	var g *group
	var gerr error
	mysqlfleet := func() {
		if g, gerr = newGroup(ctx, b.hub, "h"+tag, o.clusters, o.perNamespace, b.factsOf(all...), false); gerr != nil {
			return
		}
		b.logf("mysqlfleet: %d MySQLClusters onto %d members", o.clusters, o.members)
		b.profileMember(ctx, "convergence-"+tag)
		out.MySQLFleet = b.mysqlfleetRun(ctx, "convergence-"+tag, g, b.members)
		b.cached += out.MySQLFleet.Objects - out.MySQLFleet.Missing
		b.quiesce(ctx)
	}
	run := map[string]func(){approachFloor: floor, approachKubectl: kubectl, approachMySQLFleet: mysqlfleet}
	out.Order = approachOrder(rep)
	for _, name := range out.Order {
		run[name]()
	}
	if gerr != nil {
		return out, nil, gerr
	}
	conv := out.MySQLFleet
	out.RatioKubectl = ratio(conv.TotalSeconds, out.Kubectl.TotalSeconds)
	out.RatioFloor = ratio(conv.TotalSeconds, out.Floor.TotalSeconds)
	out.ApplyRatioFloor = ratio(conv.MemberApplyMillis, out.Floor.MemberApplyMillis)
	b.logf("mysqlfleet: %.2fs (P50 %.2fs, P99 %.2fs); /(a) %.2f, /(b) %.2f; mean apply /(b) %.2f; apply errors %s; %.0f reconciles",
		conv.TotalSeconds, conv.P50Seconds, conv.P99Seconds, out.RatioKubectl, out.RatioFloor, out.ApplyRatioFloor,
		fmtApplyErrors(conv.ApplyErrors), conv.Manager["reconciles"])
	return out, g, nil
}

// The approaches of the convergence phase, as ConvergenceRun.Order names them.
const (
	approachFloor      = "floor"
	approachKubectl    = "kubectl"
	approachMySQLFleet = "mysqlfleet"
)

// approachOrder is the order of the approaches in run rep (from 1): run 1 starts with the floor, run 2 with
// mysqlfleet, run 3 with kubectl, and so on.
func approachOrder(rep int) []string {
	order := []string{approachFloor, approachKubectl, approachMySQLFleet}
	first := len(order) - (rep-1)%len(order)
	out := make([]string, 0, len(order))
	for i := range order {
		out = append(out, order[(first+i)%len(order)])
	}
	return out
}

// profileMember records, in the background, a CPU profile of the first member's API server over the first
// apiServerProfileSeconds of a run, as <profiles>/apiserver-<member>-<run>.cpu.pprof: where a member's CPU goes for
// each approach, compared with `go tool pprof -diff_base`.
func (b *bench) profileMember(ctx context.Context, run string) {
	b.profileAPIServer(ctx, b.members[0].Name, run)
}

// profileHub records a CPU profile of the hub's API server over the first apiServerProfileSeconds of a run, as
// <profiles>/apiserver-<hub>-<run>.cpu.pprof: where the hub's CPU goes when a member's outage makes every
// MySQLCluster placed there report it.
func (b *bench) profileHub(ctx context.Context, run string) {
	b.profileAPIServer(ctx, b.f.Hub.Name, run)
}

// profileAPIServer profiles one API server in the background. A process profiles once at a time, so it first
// waits for that server's previous profile to end: only an approach shorter than the window (a small run) waits.
func (b *bench) profileAPIServer(ctx context.Context, name, run string) {
	if b.profiling == nil {
		b.profiling = map[string]chan struct{}{}
	}
	if prev := b.profiling[name]; prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return
		}
	}
	done := make(chan struct{})
	b.profiling[name] = done
	file := filepath.Join(b.profDir, "apiserver-"+name+"-"+run+".cpu.pprof")
	go func() {
		defer close(done)
		data, err := b.clients[name].CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(apiServerProfileSeconds)).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(file, data, 0o600)
		}
		if err != nil && ctx.Err() == nil {
			b.logf("profile of %s's API server (%s): %v", name, run, err)
		}
	}()
}

// apiServerProfileSeconds is shorter than an approach's convergence (or an outage's run) in the default run (the
// floor, kubectl and mysqlfleet columns of docs/benchmarks.md), so that each profile sees only its approach.
const apiServerProfileSeconds = 20

// quiesce waits until the manager's counters (reconciles, applies, queue) have stood still for two seconds, at
// most a minute: what it still does after the last object appeared in the members (hub status writes) is done.
func (b *bench) quiesce(ctx context.Context) {
	var last map[string]float64
	still := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && still < 4; {
		if sleep(ctx, 500*time.Millisecond) != nil {
			return
		}
		now := b.mgr.counters(ctx)
		if maps.Equal(now, last) {
			still++
		} else {
			still = 0
		}
		last = now
	}
}

// mysqlfleetRun creates a group's MySQLClusters on the hub and waits for their objects in members.
func (b *bench) mysqlfleetRun(ctx context.Context, name string, g *group, members []*testfleet.Cluster) Run {
	before := b.snapshot(ctx)
	prof := filepath.Join(b.profDir, "manager-"+name+".cpu.pprof")
	if err := b.mgr.startCPUProfile(ctx, prof); err != nil {
		b.fail("cpu profile", err)
	}
	defer func() { _ = b.mgr.stopCPUProfile(context.WithoutCancel(ctx)) }()
	start, createdAt, err := b.createClusters(ctx, g)
	if err != nil {
		b.fail(name, err)
	}
	return b.finish(ctx, before, g, names(members), start, createdAt)
}

// createClusters creates a group's MySQLClusters on the hub, 8 at a time, and returns when each create began.
func (b *bench) createClusters(ctx context.Context, g *group) (time.Time, []time.Time, error) {
	createdAt := make([]time.Time, len(g.clusters))
	errs := make([]error, len(g.clusters))
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				c := g.clusters[i].DeepCopy()
				createdAt[i] = time.Now()
				errs[i] = b.hub.Create(ctx, c)
			}
		}()
	}
	for i := range g.clusters {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return start, createdAt, err
		}
	}
	return start, createdAt, nil
}

// probe is the state of the counters before a run.
type probe struct {
	at       time.Time
	reqs     fleetRequests
	mgrCPU   float64
	fleetCPU float64
	hubCPU   float64
	counters map[string]float64
}

func (b *bench) snapshot(ctx context.Context) probe {
	return probe{at: time.Now(), reqs: scrapeFleet(ctx, b.clients), mgrCPU: b.mgr.cpu(), fleetCPU: fleetCPU(b.f), hubCPU: cpuOfProcessesIn(b.f.Hub.Dir), counters: b.mgr.counters(ctx)}
}

// finish waits for a group's objects in members and computes the run's figures. start is when the push began;
// createdAt, for mysqlfleet, when each MySQLCluster was created.
func (b *bench) finish(ctx context.Context, before probe, g *group, members []string, start time.Time, createdAt []time.Time) Run {
	keys := g.keysIn(members...)
	missing := b.obs.wait(ctx, keys, b.o.timeout)
	r := Run{Missing: missing, ManagerCPUSeconds: round(b.mgr.cpu()-before.mgrCPU, 1), FleetCPUSeconds: round(fleetCPU(b.f)-before.fleetCPU, 1),
		HubCPUSeconds: round(cpuOfProcessesIn(b.f.Hub.Dir)-before.hubCPU, 1)}
	in := map[string]bool{}
	for _, m := range members {
		in[m] = true
	}
	distinct := map[key]bool{}
	var per []time.Duration
	var last time.Time
	for i, ks := range g.keys {
		var mine []key
		for _, k := range ks {
			if in[k.member] {
				mine = append(mine, k)
				distinct[k] = true
			}
		}
		t, ok := b.obs.last(mine)
		if !ok {
			continue
		}
		from := start
		if createdAt != nil {
			from = createdAt[i]
		}
		per = append(per, t.Sub(from))
		if t.After(last) {
			last = t
		}
	}
	r.Objects = len(distinct)
	r.MemberDoneSeconds = map[string]float64{}
	for _, m := range members {
		if t, ok := b.obs.last(g.keysIn(m)); ok {
			r.MemberDoneSeconds[m] = seconds(t.Sub(start))
		}
	}
	if !last.IsZero() {
		r.TotalSeconds = seconds(last.Sub(start))
	}
	r.P50Seconds, r.P99Seconds = percentile(per, 50), percentile(per, 99)

	// Let the status writes that follow the last apply land before counting.
	_ = sleep(ctx, time.Second)
	after := scrapeFleet(ctx, b.clients).delta(before.reqs)
	r.MemberRequests, r.HubRequests, r.MemberWritesBy = map[string]float64{}, map[string]float64{}, map[string]float64{}
	r.MemberWritesIn = map[string]float64{}
	var applySum, applyCount float64
	for name, reqs := range after {
		isHub := name == b.f.Hub.Name
		w, by := reqs.writes(isHub)
		target := r.MemberRequests
		if isHub {
			r.HubWrites += w
			target = r.HubRequests
			r.HubWritesBy = by
		} else {
			r.MemberWrites += w
			r.MemberWritesIn[name] = w
			for k, v := range by {
				r.MemberWritesBy[k] += v
			}
			// An object is made or changed by an apply, or (mysqlfleet, for what its cache lacks) by a create.
			for _, verb := range []string{"APPLY", "POST"} {
				applySum, applyCount = applySum+reqs["@sum "+verb], applyCount+reqs["@count "+verb]
			}
		}
		for verb, v := range reqs.verbs() {
			target[verb] += v
		}
	}
	if r.Objects > 0 {
		r.WritesPerObject = round(r.MemberWrites/float64(r.Objects), 2)
	}
	if applyCount > 0 {
		r.MemberApplyMillis = round(applySum/applyCount*1000, 1)
	}
	r.Manager = map[string]float64{}
	now, window := b.mgr.counters(ctx), time.Since(before.at).Seconds()
	for k, v := range now {
		if d := v - before.counters[k]; d != 0 && k != "@workers" {
			r.Manager[k] = d
		}
	}
	if n := r.Manager["reconciles"]; n > 0 {
		r.MeanReconcileSeconds = round(r.Manager["@reconcile seconds"]/n, 3)
		if workers := now["@workers"]; workers > 0 {
			r.WorkerBusy = round(r.Manager["@reconcile seconds"]/(workers*window), 2)
		}
	}
	if n := r.Manager["@queue count"]; n > 0 {
		r.MeanQueueWaitSeconds = round(r.Manager["@queue seconds"]/n, 3)
	}
	for k, v := range r.Manager {
		if reason, ok := strings.CutPrefix(k, applyErrorPrefix); ok {
			if r.ApplyErrors == nil {
				r.ApplyErrors = map[string]float64{}
			}
			r.ApplyErrors[reason] = v
		}
	}
	return r
}

// statusReflection writes, one at a time, status.readyReplicas=1 on a StatefulSet in a member (the status
// subresource, as the member's StatefulSet controller would) and times until the hub shows it.
func (b *bench) statusReflection(ctx context.Context, g *group) Latencies {
	k := min(b.o.statusSamples, len(g.clusters))
	var ds []time.Duration
	failed := 0
	for s := range k {
		c := g.clusters[s*len(g.clusters)/k]
		m := b.members[s%len(b.members)]
		d, err := b.reflect(ctx, c, m)
		if err != nil {
			failed++
			b.logf("status reflection of %s/%s in %s: %v", c.Namespace, c.Name, m.Name, err)
			continue
		}
		ds = append(ds, d)
	}
	l := Latencies{Samples: k, Failed: failed, P50Seconds: percentile(ds, 50), P99Seconds: percentile(ds, 99), MaxSeconds: percentile(ds, 100)}
	return l
}

func (b *bench) reflect(ctx context.Context, c *v1alpha1.MySQLCluster, m *testfleet.Cluster) (time.Duration, error) {
	// The watch starts at the resourceVersion of a list, which is the hub's current one: the object's own may be
	// older than the hub's watch cache reaches back (its last write may be minutes and thousands of writes
	// ago), and a watch from there ends at once with "too old resource version".
	var list v1alpha1.MySQLClusterList
	if err := b.hub.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingFields{"metadata.name": c.Name}); err != nil {
		return 0, err
	}
	if len(list.Items) != 1 {
		return 0, fmt.Errorf("%d MySQLClusters named %s/%s on the hub", len(list.Items), c.Namespace, c.Name)
	}
	cur := list.Items[0]
	shows := func(c *v1alpha1.MySQLCluster) bool {
		for _, ms := range c.Status.Members {
			if ms.Name == m.Name {
				return ms.ReadyReplicas == 1
			}
		}
		return false
	}
	if shows(&cur) {
		return 0, fmt.Errorf("already shows readyReplicas 1")
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := b.hub.Watch(wctx, &v1alpha1.MySQLClusterList{}, client.InNamespace(c.Namespace),
		client.MatchingFields{"metadata.name": c.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	status := appsv1ac.StatefulSet(c.StatefulSetName(), c.Namespace).
		WithStatus(appsv1ac.StatefulSetStatus().WithReplicas(1).WithReadyReplicas(1))
	if _, err := b.clients[m.Name].AppsV1().StatefulSets(c.Namespace).ApplyStatus(ctx, status,
		metav1.ApplyOptions{FieldManager: "bench", Force: true}); err != nil {
		return 0, err
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return 0, fmt.Errorf("watching the MySQLCluster: %w", apierrors.FromObject(ev.Object))
		}
		if got, ok := ev.Object.(*v1alpha1.MySQLCluster); ok && shows(got) {
			return time.Since(start), nil
		}
	}
	return 0, errTimeout
}

// idle counts write requests over the idle window.
func (b *bench) idle(ctx context.Context) Idle {
	_ = sleep(ctx, b.o.settle)
	before := scrapeFleet(ctx, b.clients)
	start, mgrCPU, fleetCPU0 := time.Now(), b.mgr.cpu(), fleetCPU(b.f)
	_ = sleep(ctx, b.o.idle)
	after := scrapeFleet(ctx, b.clients)
	out := Idle{WindowSeconds: seconds(time.Since(start)), PerCluster: map[string]map[string]float64{},
		ManagerCPUSeconds: round(b.mgr.cpu()-mgrCPU, 1), FleetCPUSeconds: round(fleetCPU(b.f)-fleetCPU0, 1)}
	for name, reqs := range after.delta(before) {
		isHub := name == b.f.Hub.Name
		total, by := reqs.writes(isHub)
		if isHub {
			out.HubWrites += total
		} else {
			out.MemberWrites += total
		}
		if total > 0 {
			out.PerCluster[name] = by
		}
	}
	if len(after) != len(b.clients) || len(before) != len(b.clients) {
		b.fail("idle", fmt.Errorf("scraped %d and %d of %d API servers", len(before), len(after), len(b.clients)))
	}
	return out
}

// joinPhase times kubectl into the joining member alone, then registers it and times mysqlfleet. The member
// receives the MySQLClusters of every convergence run, and kubectl as many.
func (b *bench) joinPhase(ctx context.Context, healthy []*group) {
	o, j := b.o, b.join
	b.res.Join.Member = j.Name
	b.logf("(a') kubectl apply --server-side into %s alone", j.Name)
	if g, err := newGroup(ctx, b.hub, "j", o.clusters*len(healthy), o.perNamespace, b.factsOf(j), true); err != nil {
		b.fail("join kubectl", err)
	} else if dirs, err := writeManifests(filepath.Join(b.tmpDir, "j"), g, []*testfleet.Cluster{j}); err != nil {
		b.fail("join kubectl", err)
	} else {
		before := b.snapshot(ctx)
		start, _, err := pushKubectl(ctx, b.kubectl, filepath.Join(b.tmpDir, "kubectl-cache"), dirs, []*testfleet.Cluster{j})
		if err != nil {
			b.fail("join kubectl", err)
		}
		b.res.Join.Kubectl = b.finish(ctx, before, g, []string{j.Name}, start, nil)
	}

	b.logf("join: registering %s", j.Name)
	before := b.snapshot(ctx)
	prof := filepath.Join(b.profDir, "manager-join.cpu.pprof")
	if err := b.mgr.startCPUProfile(ctx, prof); err != nil {
		b.fail("cpu profile", err)
	}
	start := time.Now()
	if err := b.hub.Create(ctx, registrationSecret(j)); err != nil {
		b.fail("join", err)
		_ = b.mgr.stopCPUProfile(ctx)
		return
	}
	engaged := make(chan time.Duration, 1)
	go func() {
		if err := b.mgr.waitEngaged(ctx, []string{j.Name}, o.timeout); err == nil {
			engaged <- time.Since(start)
		}
		close(engaged)
	}()
	r := b.finish(ctx, before, merge(healthy), []string{j.Name}, start, nil)
	_ = b.mgr.stopCPUProfile(ctx)
	b.cached += r.Objects - r.Missing
	b.res.Join.MySQLFleet = r
	b.res.Join.EngagedSeconds = seconds(<-engaged)
	b.res.Join.RatioKubectl = ratio(r.TotalSeconds, b.res.Join.Kubectl.TotalSeconds)
	b.logf("join: %.2fs (engaged after %.2fs); kubectl %.2fs", r.TotalSeconds, b.res.Join.EngagedSeconds, b.res.Join.Kubectl.TotalSeconds)
}

// stopped runs another convergence while the first member's API server is stopped, then restarts it and
// times how long the member takes to catch up.
func (b *bench) stopped(ctx context.Context, all []*testfleet.Cluster) {
	dead := b.members[0]
	out := &b.res.Stopped
	out.Member, out.How = dead.Name, "kube-apiserver stopped (connections refused)"
	g, err := newGroup(ctx, b.hub, "x", b.o.clusters, b.o.perNamespace, b.factsOf(all...), false)
	if err != nil {
		b.fail("stopped member", err)
		return
	}
	if !b.reference(ctx, "stopped", "xr", all, dead, out) {
		return
	}
	b.logf("stopped member: stopping the API server of %s", dead.Name)
	b.obs.unwatch(dead.Name)
	if err := dead.StopAPIServer(); err != nil {
		b.fail("stopped member", err)
		return
	}
	b.outage(ctx, "stopped", g, all, dead, out)
	b.logf("stopped member: restarting the API server of %s", dead.Name)
	if err := dead.StartAPIServer(); err != nil {
		b.fail("restart", err)
		return
	}
	start := time.Now()
	if err := b.obs.watch(ctx, dead.Name, dead.Config); err != nil {
		b.fail("restart", err)
		return
	}
	b.recover(ctx, g, dead, start, out)
}

// partitioned runs another convergence while the manager's connections to the second member are blackholed
// (held open, nothing answered), then heals the partition and times how long the member takes to catch up.
// The member is first registered again through a relay that can drop its traffic; the bench itself keeps
// watching the member directly.
func (b *bench) partitioned(ctx context.Context, all []*testfleet.Cluster) {
	victim := b.members[1]
	out := &b.res.Partitioned
	out.Member, out.How = victim.Name, "traffic from the manager blackholed (connections hang)"
	u, err := url.Parse(victim.Config.Host)
	if err != nil {
		b.fail("partitioned member", err)
		return
	}
	if b.relay, err = testfleet.NewBlackhole(u.Host); err != nil {
		b.fail("partitioned member", err)
		return
	}
	kc, err := testfleet.KubeconfigVia(victim.Kubeconfig, b.relay.Addr())
	if err != nil {
		b.fail("partitioned member", err)
		return
	}
	b.logf("partitioned member: registering %s again through a relay", victim.Name)
	requeued := b.placedOn(ctx, victim.Name)
	passes := b.mgr.counters(ctx)[allReconciles]
	var s corev1.Secret
	if err := b.hub.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: victim.Name}, &s); err != nil {
		b.fail("partitioned member", err)
		return
	}
	s.Data[v1alpha1.KubeconfigKey] = kc
	if err := b.hub.Update(ctx, &s); err != nil {
		b.fail("partitioned member", err)
		return
	}
	deadline := time.Now().Add(time.Minute)
	for b.relay.Connections() == 0 && time.Now().Before(deadline) {
		_ = sleep(ctx, 100*time.Millisecond)
	}
	if err := b.mgr.waitEngaged(ctx, []string{victim.Name}, 2*time.Minute); err != nil {
		b.fail("partitioned member", err)
		return
	}
	// Re-registering requeues every MySQLCluster placed on the member, at low priority, once its new cache has
	// synced; let those passes run first (they write nothing), so that neither run below pays for them.
	waited := time.Now()
	for deadline := waited.Add(3 * time.Minute); time.Now().Before(deadline) &&
		b.mgr.counters(ctx)[allReconciles] < passes+float64(requeued); {
		if sleep(ctx, time.Second) != nil {
			return
		}
	}
	b.quiesce(ctx)
	b.logf("partitioned member: %.0f passes after the re-registration (%d MySQLClusters placed there), %.1fs",
		b.mgr.counters(ctx)[allReconciles]-passes, requeued, time.Since(waited).Seconds())
	g, err := newGroup(ctx, b.hub, "y", b.o.clusters, b.o.perNamespace, b.factsOf(all...), false)
	if err != nil {
		b.fail("partitioned member", err)
		return
	}
	if !b.reference(ctx, "partitioned", "yr", all, victim, out) {
		return
	}
	b.logf("partitioned member: blackholing %s", victim.Name)
	b.relay.Drop(true)
	b.outage(ctx, "partitioned", g, all, victim, out)
	b.logf("partitioned member: healing %s", victim.Name)
	b.relay.Drop(false)
	b.recover(ctx, g, victim, time.Now(), out)
}

// allReconciles is the manager counter of the passes of all its controllers.
const allReconciles = "@reconciles of all controllers"

// placedOn counts the MySQLClusters on the hub whose status has a row for the member.
func (b *bench) placedOn(ctx context.Context, member string) int {
	var list v1alpha1.MySQLClusterList
	if err := b.hub.List(ctx, &list); err != nil {
		b.fail("listing MySQLClusters", err)
		return 0
	}
	n := 0
	for _, c := range list.Items {
		for _, m := range c.Status.Members {
			if m.Name == member {
				n++
				break
			}
		}
	}
	return n
}

// outage runs a convergence of g on every member but down, and compares it with the healthy run.
func (b *bench) outage(ctx context.Context, name string, g *group, all []*testfleet.Cluster, down *testfleet.Cluster, out *Outage) {
	var live []*testfleet.Cluster
	for _, m := range all {
		if m != down {
			live = append(live, m)
		}
	}
	b.profileHub(ctx, name)
	r := b.mysqlfleetRun(ctx, name, g, live)
	out.Run = r
	out.Ratio = ratio(r.TotalSeconds, out.Reference.TotalSeconds)
	out.RatioToMedian = ratio(r.TotalSeconds, b.res.Convergence.HealthySeconds)
	b.cached += r.Objects - r.Missing
	b.logf("%s member: %.2fs on %d live members (P99 %.2fs), %.2fx the run just before (%.2fx the median healthy run)",
		name, r.TotalSeconds, len(live), r.P99Seconds, out.Ratio, out.RatioToMedian)
}

// reference runs, just before an outage, the convergence the outage run will repeat: as many MySQLClusters, on
// the members that stay up, every member up; the member that will go down is left out of their placement, so
// that the run does the same work as the outage run, on a fleet of the same size. The earlier healthy runs
// are no fair reference: the outages come after the join, when the members hold several runs more, and they
// get slower as they fill. It reports whether the phase may go on.
func (b *bench) reference(ctx context.Context, name, prefix string, all []*testfleet.Cluster, down *testfleet.Cluster, out *Outage) bool {
	var live []*testfleet.Cluster
	for _, m := range all {
		if m != down {
			live = append(live, m)
		}
	}
	g, err := newGroup(ctx, b.hub, prefix, b.o.clusters, b.o.perNamespace, b.factsOf(live...), false)
	if err != nil {
		b.fail(name+" member reference", err)
		return false
	}
	for _, c := range g.clusters {
		c.Spec.Placement = v1alpha1.Placement{Members: names(live)}
	}
	b.logf("%s member: a reference run on the %d members that stay up, all up", name, len(live))
	b.profileHub(ctx, name+"-reference")
	r := b.mysqlfleetRun(ctx, name+"-reference", g, live)
	out.Reference = r
	b.cached += r.Objects - r.Missing
	b.quiesce(ctx)
	b.logf("%s member reference: %.2fs (P99 %.2fs)", name, r.TotalSeconds, r.P99Seconds)
	return true
}

// recover waits for g's objects in the member that was down.
func (b *bench) recover(ctx context.Context, g *group, m *testfleet.Cluster, start time.Time, out *Outage) {
	keys := g.keysIn(m.Name)
	out.RecoveryMissing = b.obs.wait(ctx, keys, b.o.timeout)
	if last, ok := b.obs.last(keys); ok {
		out.RecoverySeconds = seconds(last.Sub(start))
	}
	b.cached += len(keysSet(keys)) - out.RecoveryMissing
	b.logf("%s caught up in %.2fs", m.Name, out.RecoverySeconds)
}

// unrelated creates ConfigMaps without mysqlfleet's labels in every member and compares the manager's memory.
func (b *bench) unrelated(ctx context.Context, all []*testfleet.Cluster) {
	m := &b.res.Memory
	var err error
	if m.BeforeUnrelated, err = b.mgr.settledMem(ctx); err != nil {
		b.fail("unrelated", err)
		return
	}
	b.logf("unrelated: creating %d ConfigMaps in each of %d members", b.o.unrelated, len(all))
	if err := createUnrelated(ctx, all, b.o.unrelated, b.o.workers); err != nil {
		b.fail("unrelated", err)
	}
	m.UnrelatedObjects = b.o.unrelated * len(all)
	_ = sleep(ctx, b.o.settle)
	if m.AfterUnrelated, err = b.mgr.settledMem(ctx); err != nil {
		b.fail("unrelated", err)
		return
	}
	m.UnrelatedHeapDeltaMiB = round((float64(m.AfterUnrelated.HeapInuseBytes)-float64(m.BeforeUnrelated.HeapInuseBytes))/mib, 2)
	m.UnrelatedRSSDeltaMiB = round((float64(m.AfterUnrelated.RSSBytes)-float64(m.BeforeUnrelated.RSSBytes))/mib, 2)
	if err := b.mgr.heapProfile(ctx, filepath.Join(b.profDir, "manager-unrelated.heap.pprof")); err != nil {
		b.fail("heap profile", err)
	}
	b.logf("unrelated: heap %+.2f MiB, RSS %+.2f MiB", m.UnrelatedHeapDeltaMiB, m.UnrelatedRSSDeltaMiB)
}
