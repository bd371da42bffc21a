package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
)

// Results is what a run measured; it is written as JSON to <out>/<timestamp>.json and <out>/latest.json.
type Results struct {
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Host     machine.Host `json:"host"`
	Params   Params       `json:"params"`

	Convergence Convergence `json:"convergence"`
	Status      Latencies   `json:"statusReflection"`
	Idle        Idle        `json:"idleWrites"`
	Join        Join        `json:"join"`
	Stopped     Outage      `json:"memberStopped"`
	Partitioned Outage      `json:"memberPartitioned"`
	Memory      Memory      `json:"memory"`

	Targets  []Target `json:"targets"`
	Profiles string   `json:"profiles"`
	Errors   []string `json:"errors,omitempty"`
}

type Params struct {
	Members       int     `json:"members"`
	Clusters      int     `json:"clusters"`
	PerNamespace  int     `json:"clustersPerNamespace"`
	StatusSamples int     `json:"statusSamples"`
	Unrelated     int     `json:"unrelatedPerMember"`
	IdleSeconds   float64 `json:"idleSeconds"`
	Workers       int     `json:"floorWorkersPerMember"`
	MemberQPS     float64 `json:"memberQPS"`
	MemberBurst   int     `json:"memberBurst"`
	// MemberTimeoutSeconds and MemberMaxInFlight are the manager's --member-timeout and --member-max-in-flight.
	MemberTimeoutSeconds float64 `json:"memberTimeoutSeconds"`
	MemberMaxInFlight    int     `json:"memberMaxInFlight"`
	// ManagerWorkers is the manager's --workers.
	ManagerWorkers int `json:"managerWorkers"`
	// Repeat is how many times the convergence phase ran.
	Repeat int `json:"repeat"`
	// Prefill is how many runs' worth of objects were written into the members before the first measured run.
	Prefill int `json:"prefill"`
}

// Run is one push of a group's objects into members, by mysqlfleet or a baseline.
type Run struct {
	// Objects are the distinct objects expected (Namespaces included); Missing those never seen.
	Objects int `json:"objects"`
	Missing int `json:"missing"`
	// TotalSeconds is from the first create (or the start of the push) to the last object seen.
	TotalSeconds float64 `json:"totalSeconds"`
	// P50Seconds and P99Seconds are per MySQLCluster: from its create (baselines: the start of the push) to
	// the last of its objects seen in every member.
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
	// MemberWrites and HubWrites are write requests the API servers served during the run (leases excluded).
	MemberWrites    float64            `json:"memberWrites"`
	HubWrites       float64            `json:"hubWrites"`
	WritesPerObject float64            `json:"memberWritesPerObject"`
	MemberRequests  map[string]float64 `json:"memberRequestsByVerb"`
	// MemberWritesBy sums the members' write requests by "resource[/subresource] VERB"; MemberWritesIn by
	// member.
	MemberWritesBy map[string]float64 `json:"memberWritesByResource"`
	MemberWritesIn map[string]float64 `json:"memberWritesByMember"`
	// MemberDoneSeconds is, per member, from the run's start to the last of the run's objects seen there: which
	// members the total waited for.
	MemberDoneSeconds map[string]float64 `json:"memberDoneSeconds,omitempty"`
	HubRequests       map[string]float64 `json:"hubRequestsByVerb,omitempty"`
	// HubWritesBy counts the hub's writes by resource and verb: what the manager writes there.
	HubWritesBy map[string]float64 `json:"hubWritesByResource,omitempty"`
	// ManagerCPUSeconds and FleetCPUSeconds are the CPU the manager process and all etcd and kube-apiserver
	// processes used during the run.
	ManagerCPUSeconds float64 `json:"managerCPUSeconds"`
	FleetCPUSeconds   float64 `json:"fleetCPUSeconds"`
	// HubCPUSeconds is the hub's share of FleetCPUSeconds.
	HubCPUSeconds float64            `json:"hubCPUSeconds"`
	Manager       map[string]float64 `json:"managerCounters,omitempty"`
	// MemberApplyMillis is the mean time member API servers took to serve a write that makes or applies an object
	// (verbs APPLY and POST; server side).
	MemberApplyMillis float64 `json:"memberApplyMeanMillis"`
	// Engine figures (mysqlfleet runs): mean reconcile and queue wait of the MySQLCluster controller, and how
	// busy its workers were: reconcile time over workers x the time from the run's start until its figures
	// were read, about a second after the last object (1.0: every worker busy throughout).
	MeanReconcileSeconds float64 `json:"meanReconcileSeconds,omitempty"`
	MeanQueueWaitSeconds float64 `json:"meanQueueWaitSeconds,omitempty"`
	WorkerBusy           float64 `json:"workerBusy,omitempty"`
	// ApplyErrors are the manager's failed member applies by cause (deadline, canceled, conflict, invalid,
	// forbidden, throttled, unreachable, other), from mysqlfleet_member_apply_errors_total. Each is a pass that
	// will be redone; a healthy fleet has none.
	ApplyErrors map[string]float64 `json:"applyErrorsByCause,omitempty"`
}

// applyErrorPrefix marks the manager counters of failed applies, by cause.
const applyErrorPrefix = "@apply errors "

// Convergence is the convergence phase: each run, and the spread of the runs' ratios.
type Convergence struct {
	Runs            []ConvergenceRun `json:"runs"`
	RatioFloor      Spread           `json:"ratioToFloor"`
	RatioKubectl    Spread           `json:"ratioToKubectl"`
	ApplyRatioFloor Spread           `json:"memberApplyRatioToFloor"`
	// HealthySeconds is the median of mysqlfleet's totals, shown beside the runs with a member down (which are
	// judged against a reference run of their own; see Outage).
	HealthySeconds float64 `json:"healthySeconds"`
}

// ConvergenceRun is one run of the convergence phase, on namespaces of its own.
type ConvergenceRun struct {
	// Order names the approaches in the order they ran (see approachOrder); earlier runs lack it.
	Order        []string `json:"order,omitempty"`
	MySQLFleet   Run      `json:"mysqlfleet"`
	Kubectl      Run      `json:"kubectl"`
	Floor        Run      `json:"floor"`
	RatioKubectl float64  `json:"ratioToKubectl"`
	RatioFloor   float64  `json:"ratioToFloor"`
	// ApplyRatioFloor is the member API servers' mean apply latency in mysqlfleet's run over the floor's.
	ApplyRatioFloor float64 `json:"memberApplyRatioToFloor"`
}

// Spread is the smallest, the median and the largest value of a ratio over the runs that measured it.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// spreadOf summarises vs, leaving out zeros (a ratio with nothing to divide by: not measured).
func spreadOf(vs []float64) Spread {
	var s []float64
	for _, v := range vs {
		if v != 0 {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return Spread{}
	}
	sort.Float64s(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = round((s[len(s)/2-1]+median)/2, 3)
	}
	return Spread{Min: s[0], Median: median, Max: s[len(s)-1]}
}

// summarize computes the spreads of the runs' ratios and the healthy total.
func (c *Convergence) summarize() {
	var floor, kubectl, apply, totals []float64
	for _, r := range c.Runs {
		floor = append(floor, r.RatioFloor)
		kubectl = append(kubectl, r.RatioKubectl)
		apply = append(apply, r.ApplyRatioFloor)
		totals = append(totals, r.MySQLFleet.TotalSeconds)
	}
	c.RatioFloor, c.RatioKubectl, c.ApplyRatioFloor = spreadOf(floor), spreadOf(kubectl), spreadOf(apply)
	c.HealthySeconds = spreadOf(totals).Median
}

type Latencies struct {
	Samples    int     `json:"samples"`
	Failed     int     `json:"failed"`
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
}

type Idle struct {
	WindowSeconds float64 `json:"windowSeconds"`
	HubWrites     float64 `json:"hubWrites"`
	MemberWrites  float64 `json:"memberWrites"`
	// ManagerCPUSeconds and FleetCPUSeconds are what the manager and the API servers (hub and members, etcd
	// included) spent over the window: what an idle fleet costs.
	ManagerCPUSeconds float64 `json:"managerCPUSeconds"`
	FleetCPUSeconds   float64 `json:"fleetCPUSeconds"`
	// PerCluster lists the clusters with writes, by "resource[/subresource] VERB".
	PerCluster map[string]map[string]float64 `json:"perCluster,omitempty"`
}

type Join struct {
	Member         string  `json:"member"`
	EngagedSeconds float64 `json:"engagedSeconds"`
	MySQLFleet     Run     `json:"mysqlfleet"`
	Kubectl        Run     `json:"kubectl"`
	RatioKubectl   float64 `json:"ratioToKubectl"`
}

// Outage is a convergence run while one member is down, measured on the other members.
type Outage struct {
	Member string `json:"member"`
	How    string `json:"how"`
	// Reference is the same convergence, on the same live members and a fleet of the same size, run just before
	// the outage with every member up and the member that goes down left out of the placement.
	Reference Run `json:"reference"`
	Run       Run `json:"run"`
	// Ratio is Run's total to Reference's: what the outage costs the other members.
	Ratio float64 `json:"ratioToHealthy"`
	// RatioToMedian is Run's total to the median healthy convergence's, measured earlier on a smaller fleet.
	RatioToMedian float64 `json:"ratioToMedianHealthy"`
	// RecoverySeconds is from the member's return to the last of the run's objects present in it.
	RecoverySeconds float64 `json:"recoverySeconds"`
	RecoveryMissing int     `json:"recoveryMissing"`
}

type Memory struct {
	// Empty: no member registered; Members: all members engaged, no MySQLCluster; Converged: after the first
	// convergence and the idle window; BeforeUnrelated and AfterUnrelated: around the unrelated ConfigMaps.
	Empty           memStats `json:"empty"`
	Members         memStats `json:"members"`
	Converged       memStats `json:"converged"`
	BeforeUnrelated memStats `json:"beforeUnrelated"`
	AfterUnrelated  memStats `json:"afterUnrelated"`
	// ChildObjects are the member objects in the manager's caches at Converged (Namespaces included).
	ChildObjects           int     `json:"childObjects"`
	HeapPerMemberMiB       float64 `json:"heapPerMemberMiB"`
	RSSPerMemberMiB        float64 `json:"rssPerMemberMiB"`
	HeapPer1000ChildrenMiB float64 `json:"heapPer1000ChildrenMiB"`
	RSSPer1000ChildrenMiB  float64 `json:"rssPer1000ChildrenMiB"`
	// LivePer1000ChildrenMiB is the same as HeapPer1000ChildrenMiB with HeapAlloc (reachable objects only)
	// instead of HeapInuse (which also counts free space in spans that hold a reachable object).
	LivePer1000ChildrenMiB float64 `json:"livePer1000ChildrenMiB"`
	UnrelatedObjects       int     `json:"unrelatedObjects"`
	UnrelatedHeapDeltaMiB  float64 `json:"unrelatedHeapDeltaMiB"`
	UnrelatedRSSDeltaMiB   float64 `json:"unrelatedRSSDeltaMiB"`
}

type Target struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    bool   `json:"met"`
	Skip   bool   `json:"skipped,omitempty"`
}

const mib = 1 << 20

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// percentile is the nearest-rank percentile of ds, in seconds.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return seconds(s[max(i, 0)])
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// legend tells how to read the output.
const legend = `How to read this:
  convergence   time from the first create (mysqlfleet: MySQLCluster on the hub; baselines: start of the push) until
                every child object exists in every member, seen through watches in each member. P50/P99 are per
                MySQLCluster: from its own create to the last of its objects present in every member.
                (a) kubectl: the same rendered objects as YAML, one 'kubectl apply --server-side' per member at once.
                (b) floor: the same objects by one Go client per member, 8 concurrent server-side applies, no QPS limit.
                ratios are mysqlfleet total / baseline total: below 1 is faster than the baseline.
                With -repeat N the three run N times, each on namespaces of their own, in an order that rotates
                from run to run (the members slow down as they fill); SPREAD gives min / median / max of each
                ratio, targets are judged on the median with the worst run beside it, and the member-down runs
                are compared with the median mysqlfleet total.
  mean apply    the time member API servers took to serve a write that makes or applies an object, on average
                (apiserver_request_duration_seconds, verbs APPLY and POST: mysqlfleet creates with a POST what its
                cache lacks, and each ClusterIP Service's IPAddress is a POST in every method); mysqlfleet/(b)
                above 1 means the manager kept more in the members' queues than the floor's 8 workers per member do.
  apply errors  the manager's member applies that failed, by cause (deadline: the request's own --member-timeout
                passed; canceled: given up, as when its member was found unreachable; conflict, invalid,
                forbidden, throttled, unreachable, other). Each is a pass to be redone; a healthy run has none, and
                one reconcile per MySQLCluster.
  writes/object write requests the member API servers served during the run, per object created; 1.00 means
                every object was written exactly once (the baselines show more too: each ClusterIP Service also makes
                the API server write an IPAddress). CPU-s: CPU seconds used by the manager process and by all
                etcd + kube-apiserver processes (the hub's share in brackets) during the run; everything shares
                the same cores. manager: the MySQLCluster controller's reconciles, their mean time and queue
                wait, and how busy its workers were.
  status        a StatefulSet's status.readyReplicas written in a member until the hub MySQLCluster shows it in
                status.members[].readyReplicas.
  idle writes   write requests (POST PUT PATCH APPLY DELETE) per API server over the idle window after
                convergence, from apiserver_request_total; Leases everywhere and Events in members excluded.
  join          a new member's registration Secret created until all its objects (every MySQLCluster) exist
                there; (a') kubectl apply --server-side of the same objects into that member alone.
  member down   another convergence run while one member is down, measured on the other members, as a ratio to
                a reference run just before it: as many MySQLClusters on the same live members, all up. STOPPED: its kube-apiserver is stopped (Cluster.StopAPIServer; on loopback every
                connection is refused at once). PARTITIONED: the manager reaches it through a relay that stops
                moving bytes (connections hang, as behind a network partition). "caught up": from the restart or
                heal until the member has every object of that run.
  memory        the manager runs as its own process; heap is HeapInuse after runtime.GC(), live is
                HeapAlloc then (reachable objects only), RSS is VmRSS.
                per member = (all members engaged - none registered) / members; per 1,000 children =
                (converged - members engaged) / (member objects / 1,000), which small runs inflate with what the
                manager allocates once, whatever the size; unrelated = change after creating
                ConfigMaps without mysqlfleet's labels in every member (they must not be cached).
  targets       met / MISSED against the issue's targets; nothing is asserted, the run always completes.`

func fmtSec(v float64) string { return fmt.Sprintf("%.2fs", v) }

func runRow(w io.Writer, name string, r Run) {
	missing := ""
	if r.Missing > 0 {
		missing = fmt.Sprintf("  (%d of %d MISSING)", r.Missing, r.Objects)
	}
	_, _ = fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%d\t%.0f\t%.2f\t%.1f\t%.1f (hub %.1f)%s\n", name, fmtSec(r.TotalSeconds),
		fmtSec(r.P50Seconds), fmtSec(r.P99Seconds), r.Objects, r.MemberWrites, r.WritesPerObject,
		r.ManagerCPUSeconds, r.FleetCPUSeconds, r.HubCPUSeconds, missing)
}

// fmtApplyErrors is "none", or the count and its causes.
func fmtApplyErrors(byCause map[string]float64) string {
	var total float64
	var parts []string
	for _, cause := range sortedKeys(byCause) {
		total += byCause[cause]
		parts = append(parts, fmt.Sprintf("%s %.0f", cause, byCause[cause]))
	}
	if total == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}

func spreadRow(w io.Writer, name string, s Spread) {
	_, _ = fmt.Fprintf(w, "  %s\t%.2f\t%.2f\t%.2f\n", name, s.Min, s.Median, s.Max)
}

// printTable writes the human summary.
func printTable(out io.Writer, r *Results) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	p := r.Params
	_, _ = fmt.Fprintf(w, "mysqlfleet benchmark: hub + %d bare members, %d MySQLClusters (replicas 1, backup CronJob; %d per namespace)\n",
		p.Members, p.Clusters, p.PerNamespace)
	_, _ = fmt.Fprintf(w, "host: %d cores, load %.2f at start, %.2f at end; manager: member QPS %g, burst %d, timeout %gs, max in flight %d; %s\n\n",
		r.Host.Cores, r.Host.Load1Start, r.Host.Load1End, p.MemberQPS, p.MemberBurst, p.MemberTimeoutSeconds,
		p.MemberMaxInFlight, r.Started.Format(time.RFC3339))

	c := r.Convergence
	for i, run := range c.Runs {
		_, _ = fmt.Fprintf(w, "CONVERGENCE, run %d of %d\ttotal\tP50/cluster\tP99/cluster\tobjects\tmember writes\twrites/object\tmanager CPU-s\tfleet CPU-s\n", i+1, len(c.Runs))
		runRow(w, "mysqlfleet", run.MySQLFleet)
		runRow(w, "(a) kubectl apply --server-side", run.Kubectl)
		runRow(w, "(b) Go SSA floor", run.Floor)
		_, _ = fmt.Fprintf(w, "  mysqlfleet/(a) = %.2f   mysqlfleet/(b) = %.2f\n", run.RatioKubectl, run.RatioFloor)
		_, _ = fmt.Fprintf(w, "  member API servers' mean apply: mysqlfleet %.0fms, (a) %.0fms, (b) %.0fms; mysqlfleet/(b) = %.2f\n",
			run.MySQLFleet.MemberApplyMillis, run.Kubectl.MemberApplyMillis, run.Floor.MemberApplyMillis, run.ApplyRatioFloor)
		engineRow(w, run.MySQLFleet)
		_, _ = fmt.Fprintf(w, "  reconciles: %.0f for %d MySQLClusters\n", run.MySQLFleet.Manager["reconciles"], p.Clusters)
		_, _ = fmt.Fprintln(w)
	}
	_, _ = fmt.Fprintf(w, "SPREAD over %d runs\tmin\tmedian\tmax\n", len(c.Runs))
	spreadRow(w, "mysqlfleet/(b)", c.RatioFloor)
	spreadRow(w, "mysqlfleet/(a)", c.RatioKubectl)
	spreadRow(w, "mean apply, mysqlfleet/(b)", c.ApplyRatioFloor)
	_, _ = fmt.Fprintf(w, "  healthy mysqlfleet total (median)\t\t%s\n", fmtSec(c.HealthySeconds))
	_, _ = fmt.Fprintln(w)

	s := r.Status
	_, _ = fmt.Fprintf(w, "STATUS REFLECTION\t%d samples\tP50 %s\tP99 %s\tmax %s", s.Samples, fmtSec(s.P50Seconds), fmtSec(s.P99Seconds), fmtSec(s.MaxSeconds))
	if s.Failed > 0 {
		_, _ = fmt.Fprintf(w, "\t%d not reflected within 60s", s.Failed)
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w)

	i := r.Idle
	_, _ = fmt.Fprintf(w, "IDLE WRITES over %.0fs\thub %.0f\tmembers %.0f\tmanager CPU-s %.1f\tfleet CPU-s %.1f\n", i.WindowSeconds,
		i.HubWrites, i.MemberWrites, i.ManagerCPUSeconds, i.FleetCPUSeconds)
	for _, name := range sortedKeys(i.PerCluster) {
		var parts []string
		for _, k := range sortedKeys(i.PerCluster[name]) {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, i.PerCluster[name][k]))
		}
		_, _ = fmt.Fprintf(w, "  %s\t%s\n", name, strings.Join(parts, ", "))
	}
	_, _ = fmt.Fprintln(w)

	j := r.Join
	_, _ = fmt.Fprintln(w, "JOIN ("+j.Member+")\ttotal\tP50/cluster\tP99/cluster\tobjects\tmember writes\twrites/object\tmanager CPU-s\tfleet CPU-s")
	runRow(w, "mysqlfleet", j.MySQLFleet)
	runRow(w, "(a') kubectl apply --server-side", j.Kubectl)
	_, _ = fmt.Fprintf(w, "  engaged after %s; mysqlfleet/(a') = %.2f\n", fmtSec(j.EngagedSeconds), j.RatioKubectl)
	engineRow(w, j.MySQLFleet)
	_, _ = fmt.Fprintln(w)

	for _, out := range []struct {
		title string
		o     Outage
	}{{"STOPPED", r.Stopped}, {"PARTITIONED", r.Partitioned}} {
		if out.o.Member == "" {
			continue
		}
		b := out.o
		_, _ = fmt.Fprintf(w, "MEMBER %s (%s)\ttotal\tP50/cluster\tP99/cluster\tobjects\tmember writes\twrites/object\tmanager CPU-s\tfleet CPU-s\n", out.title, b.Member)
		runRow(w, "mysqlfleet, just before, all up", b.Reference)
		runRow(w, "mysqlfleet, other members", b.Run)
		_, _ = fmt.Fprintf(w, "  %s\n", b.How)
		recovered := fmtSec(b.RecoverySeconds)
		if b.RecoveryMissing > 0 {
			recovered = fmt.Sprintf("not within the timeout (%d missing)", b.RecoveryMissing)
		}
		_, _ = fmt.Fprintf(w, "  ratio to the run just before = %.2f (to the median healthy convergence %.2f); once back, the member caught up in %s\n",
			b.Ratio, b.RatioToMedian, recovered)
		engineRow(w, b.Run)
		_, _ = fmt.Fprintln(w)
	}

	m := r.Memory
	_, _ = fmt.Fprintln(w, "MEMORY (manager process)\theap MiB\tlive MiB\tRSS MiB\tgoroutines")
	for _, row := range []struct {
		name string
		s    memStats
	}{{"no member registered", m.Empty}, {fmt.Sprintf("%d members engaged", p.Members), m.Members},
		{fmt.Sprintf("converged (%d member objects)", m.ChildObjects), m.Converged},
		{"before unrelated objects", m.BeforeUnrelated},
		{fmt.Sprintf("after %d unrelated ConfigMaps", m.UnrelatedObjects), m.AfterUnrelated}} {
		_, _ = fmt.Fprintf(w, "  %s\t%.1f\t%.1f\t%.1f\t%d\n", row.name, float64(row.s.HeapInuseBytes)/mib,
			float64(row.s.HeapAllocBytes)/mib, float64(row.s.RSSBytes)/mib, row.s.Goroutines)
	}
	_, _ = fmt.Fprintf(w, "  per member\t%.2f\t\t%.2f\n", m.HeapPerMemberMiB, m.RSSPerMemberMiB)
	_, _ = fmt.Fprintf(w, "  per 1,000 children\t%.2f\t%.2f\t%.2f\n", m.HeapPer1000ChildrenMiB, m.LivePer1000ChildrenMiB, m.RSSPer1000ChildrenMiB)
	_, _ = fmt.Fprintf(w, "  unrelated objects added\t%.2f\t\t%.2f\n", m.UnrelatedHeapDeltaMiB, m.UnrelatedRSSDeltaMiB)
	_, _ = fmt.Fprintln(w)

	_, _ = fmt.Fprintln(w, "TARGETS\tvalue\ttarget\t")
	for _, t := range r.Targets {
		verdict := "met"
		switch {
		case t.Skip:
			verdict = "not measured"
		case !t.Met:
			verdict = "MISSED"
		}
		_, _ = fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", t.Name, t.Value, t.Target, verdict)
	}
	if len(r.Errors) > 0 {
		_, _ = fmt.Fprintln(w, "\nERRORS")
		for _, e := range r.Errors {
			_, _ = fmt.Fprintf(w, "  %s\n", e)
		}
	}
	_, _ = fmt.Fprintf(w, "\nprofiles and logs: %s\n", r.Profiles)
	_ = w.Flush()
}

// engineRow prints what the MySQLCluster controller did during a run.
func engineRow(w io.Writer, r Run) {
	if len(r.Manager) == 0 {
		return
	}
	_, _ = fmt.Fprintf(w, "  manager: %s; reconcile mean %.2fs, queue wait mean %.2fs, workers busy %.0f%%\n",
		fmtCounters(r.Manager), r.MeanReconcileSeconds, r.MeanQueueWaitSeconds, r.WorkerBusy*100)
	_, _ = fmt.Fprintf(w, "  apply errors: %s\n", fmtApplyErrors(r.ApplyErrors))
}

func fmtCounters(m map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		if strings.HasPrefix(k, "@") {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// evaluate fills in the targets of the issue.
func (r *Results) evaluate() {
	c, m := r.Convergence, r.Memory
	add := func(name, target, value string, met, skip bool) {
		r.Targets = append(r.Targets, Target{Name: name, Target: target, Value: value, Met: met, Skip: skip})
	}
	median := func(name, target string, s Spread, most float64) {
		add(name+", median", target, fmt.Sprintf("%.2fx (worst run %.2fx)", s.Median, s.Max), s.Median > 0 && s.Median <= most, s.Median == 0)
	}
	median("convergence vs floor (b)", "<= 1.15x", c.RatioFloor, 1.15)
	add("convergence vs floor (b), worst run", "<= 1.30x", fmt.Sprintf("%.2fx", c.RatioFloor.Max), c.RatioFloor.Max > 0 && c.RatioFloor.Max <= 1.3, c.RatioFloor.Max == 0)
	median("convergence vs kubectl (a)", "<= 0.50x", c.RatioKubectl, 0.5)
	median("member mean apply vs floor (b)", "<= 2.00x", c.ApplyRatioFloor, 2)
	errs, reconciles := c.rework(r.Params.Clusters)
	add("apply errors, healthy runs", "0 in every run", errs, errs == "0", len(c.Runs) == 0)
	add("reconciles per MySQLCluster, healthy runs", "1 in every run", reconciles, reconciles == "1", len(c.Runs) == 0)
	idle := r.Idle.HubWrites + r.Idle.MemberWrites
	add("idle writes", "0", fmt.Sprintf("%.0f", idle), idle == 0, r.Idle.WindowSeconds == 0)
	add("member stopped vs healthy", "<= 1.20x", fmt.Sprintf("%.2fx", r.Stopped.Ratio), r.Stopped.Ratio > 0 && r.Stopped.Ratio <= 1.2, r.Stopped.Ratio == 0)
	add("member partitioned vs healthy", "<= 1.20x", fmt.Sprintf("%.2fx", r.Partitioned.Ratio), r.Partitioned.Ratio > 0 && r.Partitioned.Ratio <= 1.2, r.Partitioned.Ratio == 0)
	add("heap per member", "<= 15 MiB", fmt.Sprintf("%.2f MiB", m.HeapPerMemberMiB), m.HeapPerMemberMiB <= 15, m.Members.HeapInuseBytes == 0)
	add("RSS per member", "<= 15 MiB", fmt.Sprintf("%.2f MiB", m.RSSPerMemberMiB), m.RSSPerMemberMiB <= 15, m.Members.RSSBytes == 0)
	add("heap per 1,000 children", "<= 10 MiB", fmt.Sprintf("%.2f MiB", m.HeapPer1000ChildrenMiB), m.HeapPer1000ChildrenMiB <= 10, m.Converged.HeapInuseBytes == 0)
	add("RSS per 1,000 children", "<= 10 MiB", fmt.Sprintf("%.2f MiB", m.RSSPer1000ChildrenMiB), m.RSSPer1000ChildrenMiB <= 10, m.Converged.RSSBytes == 0)
	// A GC'd heap moves by a few hundred KiB between samples; 2 MiB is far below what caching 10,000 ConfigMaps
	// per member would add (their payload alone is 5 MiB per member).
	add("unrelated objects add nothing (heap)", "< 2 MiB", fmt.Sprintf("%.2f MiB", m.UnrelatedHeapDeltaMiB), m.UnrelatedHeapDeltaMiB < 2, m.AfterUnrelated.HeapInuseBytes == 0)
}

// rework tells, for the targets, which runs had apply errors and which more (or fewer) reconciles than
// MySQLClusters: "0" and "1" when none, otherwise each such run with its figures.
func (c Convergence) rework(clusters int) (errs, reconciles string) {
	var errRuns, reconcileRuns []string
	for i, r := range c.Runs {
		if e := fmtApplyErrors(r.MySQLFleet.ApplyErrors); e != "none" {
			errRuns = append(errRuns, fmt.Sprintf("run %d: %s", i+1, e))
		}
		if n := r.MySQLFleet.Manager["reconciles"]; n != float64(clusters) {
			reconcileRuns = append(reconcileRuns, fmt.Sprintf("run %d: %.0f for %d", i+1, n, clusters))
		}
	}
	errs, reconciles = "0", "1"
	if len(errRuns) > 0 {
		errs = strings.Join(errRuns, "; ")
	}
	if len(reconcileRuns) > 0 {
		reconciles = strings.Join(reconcileRuns, "; ")
	}
	return errs, reconciles
}

// writeJSON writes the results as <dir>/<stamp>.json and <dir>/latest.json.
func writeJSON(dir, stamp string, r *Results) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	path := filepath.Join(dir, stamp+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "latest.json"), data, 0o644)
}
