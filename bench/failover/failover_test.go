package failover

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

var (
	flagRuns         = flag.Int("runs", 5, "runs of each kind (failover, switchover), each on a fresh set of fresh servers")
	flagOnly         = flag.String("only", "", "run one kind only: failover, frozen or switchover")
	flagWarmup       = flag.Duration("warmup", 3*time.Second, "how long the writer writes before the fault or the request, at least")
	flagSpread       = flag.Duration("spread", 0, "a random wait of up to this much is added to the warmup, so that faults land anywhere in the member controller's poll cycle; 0 means the poll interval, a negative value none")
	flagAfter        = flag.Duration("after", time.Second, "how long the writer goes on after its first write on the new primary")
	flagWithin       = flag.Duration("within", 2*time.Minute, "how long to wait for the first write on the new primary before the run counts as failed")
	flagWriteTimeout = flag.Duration("write-timeout", 2*time.Second, "the writer's bound on one INSERT")
	// The member controller's --poll-interval and --status-timeout, for trying other values; the figures of
	// record use cmd/member's defaults.
	flagPollInterval  = flag.Duration("poll-interval", productionTiming.PollInterval, "the member controller's --poll-interval")
	flagStatusTimeout = flag.Duration("status-timeout", productionTiming.StatusTimeout, "the member controller's --status-timeout")
	flagOut           = flag.String("out", "", "directory of the JSON results; default bench/results of the module")
)

const (
	kindFailover = "failover"
	// kindFrozen is a failover of a primary that stops answering without going away (SIGSTOP): its port still
	// accepts connections but nothing answers, as with a hung server or a host cut off by a partition, where a
	// killed process on a live host refuses connections at once.
	kindFrozen     = "frozen"
	kindSwitchover = "switchover"
	// Targets of issue 14, medians on this machine.
	failoverTarget   = 10 * time.Second
	switchoverTarget = 2 * time.Second
)

// BenchmarkFailover measures failover and switchover on real servers; see the package documentation. Run it once
// (-benchtime 1x): each run is a sub-benchmark of its own so that its servers stop when it ends.
func BenchmarkFailover(b *testing.B) {
	kinds := []string{kindFailover, kindFrozen, kindSwitchover}
	if *flagOnly != "" {
		if !slices.Contains(kinds, *flagOnly) {
			b.Fatalf("-only must be one of %v", kinds)
		}
		kinds = []string{*flagOnly}
	}
	out := *flagOut
	if out == "" {
		root, err := testfleet.ModuleRoot()
		if err != nil {
			b.Fatal(err)
		}
		out = filepath.Join(root, "bench", "results")
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	logs, err := logDir(out, stamp)
	if err != nil {
		b.Fatal(err)
	}
	res := newResults(stamp)
	if res.Host.LoadStart[0] > float64(res.Host.Cores) {
		b.Logf("warning: load average %.2f on %d cores: the machine is busy, figures will be slow and noisy",
			res.Host.LoadStart[0], res.Host.Cores)
	}
	e := startEnv(b, logs)
	res.Controller = controllerOf(e)

	// Kinds alternate, so that a change in the machine's load weighs on all alike.
	figures := map[string]*Figure{
		kindFailover: {What: "kill -9 of the primary's server → first write acknowledged by the new primary",
			TargetSeconds: failoverTarget.Seconds()},
		kindFrozen: {What: "primary's server frozen (SIGSTOP) → first write acknowledged by the new primary",
			TargetSeconds: failoverTarget.Seconds()},
		kindSwitchover: {What: "switchover requested (StatefulSet annotation written) → first write acknowledged by the target",
			TargetSeconds: switchoverTarget.Seconds()},
	}
	for i := 1; i <= *flagRuns; i++ {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("%s-%d", kind, i), func(b *testing.B) {
				r := &Run{Kind: kind, Index: i, Load1: machine.LoadAverage()[0]}
				defer func() {
					if b.Failed() && r.Error == "" {
						r.Error = "failed: see the benchmark's output"
					}
					figures[kind].Runs = append(figures[kind].Runs, *r)
				}()
				e.measure(b, r, &res.Host)
				if r.Lost > 0 {
					b.Errorf("LOST %d ACKNOWLEDGED WRITES in %s run %d (ids %v): the new primary %s does not have them",
						r.Lost, kind, i, r.LostIDs, r.To)
				}
			})
		}
	}
	res.Host.LoadEnd = machine.LoadAverage()
	for _, kind := range kinds {
		f := figures[kind]
		f.Summarize()
		switch kind {
		case kindFailover:
			res.Failover = f
		case kindFrozen:
			res.Frozen = f
		case kindSwitchover:
			res.Switchover = f
		}
	}
	res.print(os.Stdout)
	if err := res.write(out); err != nil {
		b.Error(err)
	}
	if lost := res.lost(); lost > 0 {
		b.Errorf("LOST %d ACKNOWLEDGED WRITES: see the runs above", lost)
	}
}

// measure does one run on a fresh set: form it, write through <name>-primary, make the fault (kill -9 of the
// primary's server) or the request (switchover to ordinal 1), time the first write the new primary
// acknowledges, then check that every acknowledged write is on the new primary.
func (e *env) measure(b *testing.B, r *Run, h *machine.Host) {
	fail := func(format string, args ...any) {
		r.Error = fmt.Sprintf(format, args...)
		b.Fatal(r.Error)
	}
	s := e.newSet(b, fmt.Sprintf("%s-%d", r.Kind, r.Index))
	e.waitFormed(b, s, s.pod(0))

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	tl := watchSet(ctx, e.c, s)
	ep := newEndpoints(e.c, s.ns, s.cluster.PrimaryServiceName())
	go ep.run(ctx)
	w := newWriter(ep, s.appDSN, *flagWriteTimeout)
	wctx, stopWriter := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); w.run(wctx) }()
	stop := func() { stopWriter(); <-stopped }
	defer stop()

	// Without the random part every fault would land at the same point of the controller's poll cycle (the set
	// formed on a pass, and the warmup is fixed), and the time to notice it would be the same in every run.
	spread := time.Duration(0)
	switch {
	case *flagSpread == 0:
		spread = time.Duration(rand.Int64N(int64(e.timing.PollInterval)))
	case *flagSpread > 0:
		spread = time.Duration(rand.Int64N(int64(*flagSpread)))
	}
	r.SpreadSeconds = spread.Seconds()
	sleep(ctx, *flagWarmup+spread)
	if len(w.acked()) == 0 {
		fail("no write was acknowledged through %s in %s (%d failed)", s.cluster.PrimaryServiceName(), *flagWarmup,
			w.failed())
	}
	r.From = s.pod(0)
	old := s.servers.Server(r.From)
	before, err := semiSync(old.RootDSN())
	if err != nil {
		fail("reading semi-sync status on %s: %v", r.From, err)
	}
	r.SemiSyncBefore = before
	if h.MariaDB == "" {
		h.MariaDB = before.Version
	}

	retriesBefore := e.endpointSliceRetries(s.ns, s.cluster.PrimaryServiceName())
	var t0 time.Time
	onNewPrimary := func(pod string) bool { return pod != r.From }
	switch r.Kind {
	case kindFailover:
		t0 = time.Now()
		old.Kill()
	case kindFrozen:
		pid, err := serverPID(old.DataDir)
		if err != nil {
			fail("finding the primary's process: %v", err)
		}
		// Killed when the run ends, frozen or not: a stopped process would only take SIGTERM once resumed.
		defer old.Kill()
		t0 = time.Now()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			fail("freezing the primary's server: %v", err)
		}
	case kindSwitchover:
		target := s.pod(1)
		onNewPrimary = func(pod string) bool { return pod == target }
		t0 = time.Now()
		if err := e.requestPrimary(s, 1); err != nil {
			fail("requesting the switchover: %v", err)
		}
	}
	var first ack
	deadline := time.Now().Add(*flagWithin)
	for {
		a, ok := w.firstAck(t0, onNewPrimary)
		if ok {
			first = a
			break
		}
		if time.Now().After(deadline) {
			r.Timeline = tl.Relative(t0)
			fail("no write acknowledged by a new primary within %s of the %s (%d writes failed since)",
				*flagWithin, r.Kind, w.failed())
		}
		sleep(ctx, 10*time.Millisecond)
	}
	r.To = first.pod
	r.Seconds = first.at.Sub(t0).Seconds()
	sleep(ctx, *flagAfter)
	stop()

	if last, ok := w.lastAckBefore(first.at); ok {
		r.GapSeconds = first.at.Sub(last.at).Seconds()
	}
	r.FailedWrites = w.failed()
	acks := w.acked()
	r.Acknowledged = len(acks)
	newPrimary := s.servers.Server(r.To)
	after, err := semiSync(newPrimary.RootDSN())
	if err != nil {
		fail("reading semi-sync status on %s: %v", r.To, err)
	}
	r.SemiSyncAfter = after
	present, err := ids(newPrimary.RootDSN())
	if err != nil {
		fail("reading the rows on %s: %v", r.To, err)
	}
	for _, a := range acks {
		if !present[a.id] {
			r.Lost++
			if len(r.LostIDs) < 20 {
				r.LostIDs = append(r.LostIDs, a.id)
			}
		}
	}
	r.EndpointSliceRetries = e.endpointSliceRetries(s.ns, s.cluster.PrimaryServiceName()) - retriesBefore
	refused, ok := w.firstFailureAfter(t0)
	r.Phases = tl.Phases(t0, r.To, r.Kind == kindSwitchover, refused, ok, r.Seconds)
	r.Timeline = tl.Relative(t0)
	if rep, _, err := e.report(ctx, s); err == nil && rep != nil {
		if rep.Primary != r.To {
			fail("the first write on a new primary went to %s but the member controller reports %q", r.To, rep.Primary)
		}
		if t := rep.LastTransition; t != nil {
			r.Transition = fmt.Sprintf("%s from %s to %s", t.Kind, t.From, t.To)
		}
	}
}

// serverPID is the process id of the mariadbd whose data directory is dataDir, from the pid file mysqltest has it
// write beside the data directory.
func serverPID(dataDir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(dataDir), "mariadbd.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// requestPrimary asks for a switchover as the hub does for spec.primaries: the StatefulSet rendered with the
// member's entry, applied.
func (e *env) requestPrimary(s *set, ordinal int32) error {
	c := s.cluster.DeepCopy()
	c.Spec.Primaries = map[string]int32{s.member.Name: ordinal}
	objs, err := render.Render(c, s.member, creds)
	if err != nil {
		return err
	}
	return e.c.Apply(e.ctx, objs.StatefulSet, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
}
