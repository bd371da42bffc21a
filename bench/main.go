// Command bench is the fleet benchmark (`make bench`, flags through BENCH_FLAGS). It starts a hub and bare
// members (etcd and kube-apiserver only, through test/testfleet), runs the hub manager as a process of its
// own, and measures:
//
//  1. convergence of N MySQLClusters placed on every member, against the same rendered objects pushed with
//     kubectl apply --server-side (one per member) and with a full-speed Go server-side apply client (the floor),
//     -repeat times with namespaces of their own, to show the spread of the ratios;
//  2. how fast a member's StatefulSet status shows on the hub;
//  3. write requests while the converged fleet is idle;
//  4. how fast a newly registered member receives everything, against kubectl into that member alone;
//  5. convergence while one member's API server is stopped, and while one member is cut off from the manager
//     by a blackholing relay, against the healthy run;
//  6. the manager's memory per member, per 1,000 member objects, and after unrelated objects appear in members.
//
// It prints a legend and a table, and writes the figures as JSON to <out>/<timestamp>.json and
// <out>/latest.json; CPU and heap profiles of the manager and the logs go to <out>/profiles/<timestamp>/.
// Nothing is asserted: targets are reported as met or missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

type options struct {
	members, clusters, perNamespace, statusSamples, unrelated, workers, repeat, prefill int
	idle, settle, timeout                                                               time.Duration
	managerProcs                                                                        int
	out                                                                                 string
	memberQPS                                                                           float64
	memberBurst, memberMaxInFlight, managerWorkers                                      int
	memberTimeout                                                                       time.Duration
	partition                                                                           bool
	pinTiers                                                                            bool
	// scale, when set, runs the scale profile at these numbers of members instead of the phases (see scale.go).
	scale []int
}

func main() {
	if os.Getenv(managerEnv) != "" {
		os.Exit(runManager())
	}
	var o options
	// A flag set of its own: controller-runtime registers --kubeconfig on the global one.
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.IntVar(&o.members, "members", 10, "bare member clusters registered at the start (one more joins later); at least 2")
	fs.IntVar(&o.clusters, "clusters", 100, "MySQLClusters per run, each placed on every member")
	fs.IntVar(&o.perNamespace, "per-namespace", 10, "MySQLClusters per namespace")
	fs.IntVar(&o.prefill, "prefill", 8, "runs' worth of objects written into the members by the floor's method before the first measured run, unmeasured: the member API servers slow down as they fill from empty and level off after about 8 runs' worth, so that no approach is measured on a fleet emptier than the others'")
	fs.IntVar(&o.repeat, "repeat", 1, "runs of the convergence phase (floor, kubectl, mysqlfleet), each with namespaces of its own; ratios are shown as min / median / max and targets judged on the median")
	fs.DurationVar(&o.idle, "idle", 2*time.Minute, "idle window in which write requests are counted")
	fs.StringVar(&o.out, "out", filepath.Join("bench", "results"), "directory of the JSON results (profiles and logs go to <out>/profiles/<timestamp>)")
	fs.IntVar(&o.statusSamples, "status-samples", 20, "MySQLClusters whose status reflection is timed")
	fs.IntVar(&o.unrelated, "unrelated", 10000, "unrelated ConfigMaps created in every member for the memory check; 0 skips it")
	fs.IntVar(&o.workers, "workers", 8, "concurrent applies per member of the Go floor")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "pause before the idle window and before memory samples")
	// A deployed replica runs under the chart's CPU limit of 1, and Go sets GOMAXPROCS from a container's CPU
	// limit; here every process shares the machine's cores.
	fs.IntVar(&o.managerProcs, "manager-procs", 1, "GOMAXPROCS of the manager: 1, as the chart's CPU limit of 1 gives a deployed replica")
	fs.BoolVar(&o.pinTiers, "pin-tiers", false, "scale profile: the hub and the manager on CPU 0, the members and the bench on CPU 1 (bench/pin.go)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long a convergence may take before it is reported incomplete")
	fs.BoolVar(&o.partition, "partition", true, "also run a convergence while one member is blackholed from the manager (connections hang rather than fail)")
	fs.Float64Var(&o.memberQPS, "member-qps", kubeconfig.DefaultQPS, "the manager's --member-qps (cmd/manager's default unless changed here)")
	fs.IntVar(&o.memberBurst, "member-burst", kubeconfig.DefaultBurst, "the manager's --member-burst")
	fs.DurationVar(&o.memberTimeout, "member-timeout", fleet.DefaultRequestTimeout, "the manager's --member-timeout")
	fs.IntVar(&o.memberMaxInFlight, "member-max-in-flight", fleet.DefaultMaxInFlight, "the manager's --member-max-in-flight")
	fs.IntVar(&o.managerWorkers, "manager-workers", mysqlcluster.DefaultWorkers, "the manager's --workers")
	scale := fs.String("scale", "", "run the scale profile instead of the phases: a fleet of each of these numbers of members (e.g. 10,20,30), each converged by the manager, with its memory, idle writes and a PNG plot")
	docs := fs.String("docs", "", "only rewrite the generated tables of this Markdown page (docs/benchmarks.md) from the JSON in -out, and run nothing")
	readme := fs.String("readme", "", "only rewrite the generated sections of this README (the demo's times) from the JSON in -out, and run nothing")
	demo := fs.String("demo-record", "", "only record a timed make demo: KIND=FILE, KIND cold or warm, FILE what /usr/bin/time -v printed (make demo-time)")
	demoNote := fs.String("demo-note", "", "with -demo-record: what else the machine did during the run, when it was not idle")
	_ = fs.Parse(os.Args[1:])
	if *docs != "" || *readme != "" {
		for page, sections := range map[string][]string{*docs: docSections, *readme: readmeSections} {
			if page == "" {
				continue
			}
			if err := writeDocs(page, o.out, sections); err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s: %v\n", page, err)
				os.Exit(1)
			}
		}
		return
	}
	if *demo != "" {
		kind, file, _ := strings.Cut(*demo, "=")
		if err := recordDemo(kind, file, *demoNote, o.out); err != nil {
			fmt.Fprintf(os.Stderr, "bench: -demo-record: %v\n", err)
			os.Exit(1)
		}
		return
	}
	for _, f := range strings.Split(*scale, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 2 {
			o.scale = append(o.scale, n)
		} else if strings.TrimSpace(f) != "" {
			fmt.Fprintf(os.Stderr, "bench: -scale: %q is not a number of members (at least 2)\n", f)
			os.Exit(2)
		}
	}
	if o.members < 2 || o.clusters < 1 || o.perNamespace < 1 || o.workers < 1 || o.repeat < 1 || o.memberMaxInFlight < 1 || o.managerWorkers < 1 || o.prefill < 0 {
		fmt.Fprintln(os.Stderr, "bench: -members must be at least 2; -clusters, -per-namespace, -workers, -repeat, -member-max-in-flight and -manager-workers at least 1")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the bench stops the manager and the fleet; a second one kills it at once, and the
	// fleet's guardian removes what is left.
	go func() { <-ctx.Done(); stop() }()
	os.Exit(run(ctx, o))
}

// bench holds what the phases share.
type bench struct {
	o       options
	began   time.Time
	f       *testfleet.Fleet
	hub     client.WithWatch
	mgr     *managerProc
	obs     *observer
	clients map[string]kubernetes.Interface
	// members are registered at the start; join registers later.
	members []*testfleet.Cluster
	join    *testfleet.Cluster
	facts   map[string]placement.Member
	kubectl string
	// cached counts the member objects mysqlfleet has written so far (Namespaces included): what the
	// manager's member caches hold.
	cached int
	// relay sits between the manager and the partitioned member once that phase began.
	relay   *testfleet.Blackhole
	res     *Results
	profDir string
	// profiling holds, per API server, a channel closed when its profile in progress has ended.
	profiling map[string]chan struct{}
	tmpDir    string
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(b.began).Seconds(), fmt.Sprintf(format, args...))
}

func (b *bench) fail(phase string, err error) {
	b.logf("%s: %v", phase, err)
	b.res.Errors = append(b.res.Errors, phase+": "+err.Error())
}

func run(ctx context.Context, o options) int {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	b := &bench{o: o, began: time.Now(), obs: newObserver(), facts: map[string]placement.Member{},
		clients: map[string]kubernetes.Interface{}}
	b.profDir = filepath.Join(o.out, "profiles", stamp)
	if err := os.MkdirAll(b.profDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if abs, err := filepath.Abs(b.profDir); err == nil {
		b.profDir = abs
	}
	logFile, err := os.Create(filepath.Join(b.profDir, "bench.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer func() { _ = logFile.Close() }()
	// client-go and controller-runtime log to the file: a stopped member makes the watches complain.
	klog.LogToStderr(false)
	klog.SetOutput(logFile)
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))

	b.res = &Results{Started: time.Now(), Profiles: b.profDir, Host: host(), Params: Params{
		Members: o.members, Clusters: o.clusters, PerNamespace: o.perNamespace, StatusSamples: o.statusSamples,
		Unrelated: o.unrelated, IdleSeconds: o.idle.Seconds(), Workers: o.workers, MemberQPS: o.memberQPS,
		MemberBurst: o.memberBurst, MemberTimeoutSeconds: o.memberTimeout.Seconds(), MemberMaxInFlight: o.memberMaxInFlight,
		Repeat: o.repeat, Prefill: o.prefill, ManagerWorkers: o.managerWorkers,
	}}
	if b.res.Host.Load1Start > 1.5 {
		b.logf("warning: load average %.2f: the machine is busy, figures will be noisy", b.res.Host.Load1Start)
	}

	if len(o.scale) > 0 {
		return b.runScale(ctx, stamp)
	}
	code := 0
	if err := b.setup(ctx); err != nil {
		b.fail("setup", err)
		code = 1
	} else {
		b.phases(ctx)
	}
	b.mgr.stop()
	b.obs.stop()
	if b.relay != nil {
		b.relay.Close()
	}
	if b.f != nil {
		b.logf("stopping the fleet")
		if err := b.f.Stop(); err != nil {
			b.logf("stopping the fleet: %v", err)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted; no results written")
		return 130
	}
	if code != 0 {
		return code
	}

	b.res.Finished = time.Now()
	b.res.Host.Load1End = load1()
	b.res.evaluate()
	fmt.Println(legend)
	fmt.Println()
	printTable(os.Stdout, b.res)
	path, err := writeJSON(o.out, stamp, b.res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing results:", err)
		return 1
	}
	fmt.Printf("results: %s (and %s)\n", path, filepath.Join(o.out, "latest.json"))
	return 0
}

// clouds are given to members in turn.
var clouds = []struct{ cloud, region, class string }{
	{"aws", "eu-west-1", "gp3"}, {"azure", "westeurope", "managed-csi"}, {"gcp", "us-central1", "pd-ssd"},
}

func memberDefinitions(n int) []clusters.Definition {
	defs := make([]clusters.Definition, 0, n+1)
	for i := range n {
		c := clouds[i%len(clouds)]
		defs = append(defs, clusters.Definition{Name: fmt.Sprintf("%s-%02d", c.cloud, i), Role: clusters.RoleMember,
			Cloud: c.cloud, Region: c.region, StorageClasses: []clusters.StorageClass{{Name: c.class, Default: true}}})
	}
	return append(defs, clusters.Definition{Name: "join-gcp", Role: clusters.RoleMember, Cloud: "gcp",
		Region: "europe-west4", StorageClasses: []clusters.StorageClass{{Name: "pd-ssd", Default: true}}})
}

// registrationSecret is a member's registration on the hub, as `mysqlfleet join` writes it.
func registrationSecret(m *testfleet.Cluster) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: managerNamespace, Labels: map[string]string{
			v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: m.Cloud, v1alpha1.RegionLabel: m.Region,
		}},
		Data: map[string][]byte{v1alpha1.KubeconfigKey: m.Kubeconfig},
	}
}

// setup starts the fleet and the manager and registers the members.
func (b *bench) setup(ctx context.Context) error {
	o := b.o
	root, err := testfleet.ModuleRoot()
	if err != nil {
		return fmt.Errorf("finding the module root: %w", err)
	}
	if b.kubectl, err = kubectlPath(root); err != nil {
		return err
	}
	b.logf("starting the hub and %d bare members (+1 to join later)", o.members)
	f, err := testfleet.Start(ctx, testfleet.Options{
		Members:              memberDefinitions(o.members),
		HubCRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
	})
	if err != nil {
		return err
	}
	b.f = f
	b.tmpDir = filepath.Join(f.Dir, "bench")
	b.members, b.join = f.Members[:o.members], f.Members[o.members]
	b.logf("fleet up in %s", f.Dir)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	if b.hub, err = client.NewWithWatch(f.Hub.Config, client.Options{Scheme: mysqlcluster.Scheme()}); err != nil {
		return err
	}
	b.clients[f.Hub.Name] = f.Hub.Clientset()
	for _, m := range f.Members {
		b.clients[m.Name] = m.Clientset()
		facts, err := placement.MemberFromSecret(registrationSecret(m))
		if err != nil {
			return err
		}
		b.facts[m.Name] = facts
		if err := b.obs.watch(ctx, m.Name, m.Config); err != nil {
			return err
		}
	}
	if err := b.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}); err != nil {
		return err
	}

	b.logf("starting the manager")
	if b.mgr, err = startManager(ctx, f.Hub.KubeconfigPath, filepath.Join(b.profDir, "manager.log"), o); err != nil {
		return err
	}
	_ = sleep(ctx, b.o.settle)
	if b.res.Memory.Empty, err = b.mgr.settledMem(ctx); err != nil {
		return err
	}
	b.logf("registering %d members", o.members)
	for _, m := range b.members {
		if err := b.hub.Create(ctx, registrationSecret(m)); err != nil {
			return err
		}
	}
	if err := b.mgr.waitEngaged(ctx, names(b.members), 2*time.Minute); err != nil {
		return err
	}
	_ = sleep(ctx, b.o.settle)
	mem := &b.res.Memory
	if mem.Members, err = b.mgr.settledMem(ctx); err != nil {
		return err
	}
	mem.HeapPerMemberMiB = round(float64(int64(mem.Members.HeapInuseBytes)-int64(mem.Empty.HeapInuseBytes))/mib/float64(o.members), 2)
	mem.RSSPerMemberMiB = round(float64(int64(mem.Members.RSSBytes)-int64(mem.Empty.RSSBytes))/mib/float64(o.members), 2)
	b.logf("members engaged: heap %.1f MiB (%.2f per member), RSS %.1f MiB", float64(mem.Members.HeapInuseBytes)/mib,
		mem.HeapPerMemberMiB, float64(mem.Members.RSSBytes)/mib)
	return nil
}

func (b *bench) factsOf(ms ...*testfleet.Cluster) []placement.Member {
	out := make([]placement.Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, b.facts[m.Name])
	}
	return out
}

// kubectl finds the kubectl binary where the fleet finds its binaries.
func kubectlPath(root string) (string, error) {
	for _, dir := range []string{os.Getenv("MYSQLFLEET_BIN"), os.Getenv("KUBEBUILDER_ASSETS"), filepath.Join(root, "bin")} {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, "kubectl"); isFile(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("kubectl not found in $MYSQLFLEET_BIN, $KUBEBUILDER_ASSETS or ./bin: run hack/tools.sh kubectl")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func keysSet(keys []key) map[key]bool {
	out := make(map[key]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}

func names(ms []*testfleet.Cluster) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// host is the machine as a fleet or scale run starts; those runs record the 1-minute load average only.
func host() machine.Host {
	h := machine.Now()
	h.Load1Start, h.LoadStart = h.LoadStart[0], [3]float64{}
	return h
}

func load1() float64 { return machine.LoadAverage()[0] }
