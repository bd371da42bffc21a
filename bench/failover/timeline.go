package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
)

// event is one change seen in the member, with the time its watch event arrived.
type event struct {
	at   time.Time
	what string
}

// Timeline records, from watches on a run's namespace, where the time of a change of primary goes: the member
// controller's report and record (each pass that decided something writes them), the Pods' role labels and the
// EndpointSlices of <name>-primary; the local tier adds, from its Resolver, when each of the controller's passes
// starts. Times are those of the watch events' arrival, so each is a little late, by the same small amount.
type Timeline struct {
	mu     sync.Mutex
	events []event
}

func (tl *Timeline) add(what string) { tl.addAt(time.Now(), what) }

// addAt records an event at a time read elsewhere (a log line's) rather than at its arrival.
func (tl *Timeline) addAt(at time.Time, what string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, event{at: at, what: what})
}

// snapshot is the events so far, by time.
func (tl *Timeline) snapshot() []event {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := slices.Clone(tl.events)
	slices.SortStableFunc(out, func(a, b event) int { return a.at.Compare(b.at) })
	return out
}

// first is the first event at or after t whose description is what.
func (tl *Timeline) first(t time.Time, what string) (time.Time, bool) {
	for _, e := range tl.snapshot() {
		if !e.at.Before(t) && e.what == what {
			return e.at, true
		}
	}
	return time.Time{}, false
}

// WatchMember follows, until ctx ends, the report ConfigMap of the set cluster in namespace ns, the namespace's
// Pods and the EndpointSlices of the set's primary Service, on tl. With everySlice, it also records each
// change of any other EndpointSlice in the member that kube-proxy programs (every Service's but a headless
// one's): kube-proxy syncs all Services at once, at most once per minSyncPeriod, so a change to any of them
// just before the primary's can hold the primary's back.
func (tl *Timeline) WatchMember(ctx context.Context, c client.WithWatch, ns string, cluster *v1alpha1.MySQLCluster,
	everySlice bool) {
	report := v1alpha1.ReplicationReportName(cluster.Name)
	go follow(ctx, c, &corev1.ConfigMapList{}, []client.ListOption{client.InNamespace(ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", report)}},
		reportChanges(tl))
	go follow(ctx, c, &corev1.PodList{}, []client.ListOption{client.InNamespace(ns)}, roleChanges(tl))
	go follow(ctx, c, &discoveryv1.EndpointSliceList{}, []client.ListOption{client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: cluster.PrimaryServiceName()}}, endpointChanges(tl))
	if everySlice {
		proxied, err := labels.Parse("!" + corev1.IsHeadlessService)
		if err != nil {
			panic(err) // a constant selector
		}
		primary := ns + "/" + cluster.PrimaryServiceName()
		go follow(ctx, c, &discoveryv1.EndpointSliceList{},
			[]client.ListOption{client.MatchingLabelsSelector{Selector: proxied}}, sliceChanges(tl, primary))
	}
}

// Phases are the moments of a change of primary to the Pod to, after t0 (the fault or the request): the failover
// started, or for a switchover the first write refused (refused, when ok: the old primary fenced); the new primary
// recorded, labelled, named by the endpoints; the first write on it, seconds after t0. A phase not seen is -1.
func (tl *Timeline) Phases(t0 time.Time, to string, switchover bool, refused time.Time, ok bool, seconds float64) []Phase {
	var ps []Phase
	// add(name)(at, ok) records a phase; it takes the two results of a lookup as they come.
	add := func(name string) func(time.Time, bool) {
		return func(at time.Time, ok bool) {
			p := Phase{Name: name, Seconds: -1}
			if ok {
				p.Seconds = at.Sub(t0).Seconds()
			}
			ps = append(ps, p)
		}
	}
	if !switchover {
		add("failover started")(tl.first(t0, "decision FailoverStarted"))
	} else {
		// The old primary fenced: read-only, its connections ended.
		add("first write refused")(refused, ok)
	}
	add("new primary recorded")(tl.first(t0, "record primary="+to[strings.LastIndex(to, "-")+1:]))
	add("labelled primary")(tl.first(t0, to+" role primary"))
	add("endpoints name it")(tl.first(t0, "endpoints "+to))
	add("first write on it")(t0.Add(time.Duration(seconds*float64(time.Second))), true)
	return ps
}

// follow watches a list until ctx ends, watching again when the server ends a watch.
func follow(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption,
	on func(watch.Event)) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, opts...)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			on(ev)
		}
		w.Stop()
	}
}

// reportChanges records each new decision of the report ("decision FailoverStarted") and each new recorded
// primary ("record primary=1"), the record being saved before a new primary is made writable.
func reportChanges(tl *Timeline) func(watch.Event) {
	var decision, record string
	return func(ev watch.Event) {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			return
		}
		rep, rec := parseReport(cm)
		if r := fmt.Sprintf("record primary=%d", rec.PrimaryIndex()); r != record {
			record = r
			tl.add(r)
		}
		if rep == nil {
			return
		}
		d := "decision " + rep.Decision.Kind
		if d != decision {
			decision = d
			tl.add(d)
		}
	}
}

// roleChanges records each Pod's role label as it changes ("db-1 role primary", "db-0 role none").
func roleChanges(tl *Timeline) func(watch.Event) {
	roles := map[string]string{}
	return func(ev watch.Event) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		role, ok := p.Labels[v1alpha1.RoleLabel]
		if !ok || ev.Type == watch.Deleted {
			role = "none"
		}
		if prev, seen := roles[p.Name]; !seen || prev != role {
			roles[p.Name] = role
			tl.add(p.Name + " role " + role)
		}
	}
}

// endpointChanges records the ready Pods the primary Service's EndpointSlices name as they change
// ("endpoints db-1", "endpoints none").
func endpointChanges(tl *Timeline) func(watch.Event) {
	bySlice := map[string]discoveryv1.EndpointSlice{}
	last := ""
	return func(ev watch.Event) {
		sl, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		if ev.Type == watch.Deleted {
			delete(bySlice, sl.Name)
		} else {
			bySlice[sl.Name] = *sl
		}
		all := make([]discoveryv1.EndpointSlice, 0, len(bySlice))
		for _, s := range bySlice {
			all = append(all, s)
		}
		now := "endpoints " + strings.Join(readyPods(all), ",")
		if now == "endpoints " {
			now = "endpoints none"
		}
		if now != last {
			last = now
			tl.add(now)
		}
	}
}

// sliceChanges records each change of an EndpointSlice other than those of the Service skip (namespace/name),
// with the ready Pods it then names ("slice shop/db-replicas db-1,db-2"); the watch's first listing records
// each slice once, before the fault.
func sliceChanges(tl *Timeline, skip string) func(watch.Event) {
	seen := map[string]string{}
	return func(ev watch.Event) {
		sl, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		svc := sl.Namespace + "/" + sl.Labels[discoveryv1.LabelServiceName]
		key := sl.Namespace + "/" + sl.Name
		last := seen[key]
		seen[key] = sl.ResourceVersion
		if svc == skip || last == sl.ResourceVersion {
			return
		}
		pods := strings.Join(readyPods([]discoveryv1.EndpointSlice{*sl}), ",")
		if ev.Type == watch.Deleted {
			pods = "deleted"
		}
		tl.add(fmt.Sprintf("slice %s %s", svc, pods))
	}
}

func parseReport(cm *corev1.ConfigMap) (*v1alpha1.ReplicationReport, clustering.Record) {
	var rec clustering.Record
	_ = json.Unmarshal([]byte(cm.Data[v1alpha1.ReplicationRecordKey]), &rec)
	var rep v1alpha1.ReplicationReport
	if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReplicationReportKey]), &rep); err != nil {
		return nil, rec
	}
	return &rep, rec
}

func readyPods(slices_ []discoveryv1.EndpointSlice) []string {
	var pods []string
	for _, s := range slices_ {
		for _, ep := range s.Endpoints {
			if ep.TargetRef != nil && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
				pods = append(pods, ep.TargetRef.Name)
			}
		}
	}
	slices.Sort(pods)
	return slices.Compact(pods)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Relative renders the timeline in seconds after t0, for the JSON.
func (tl *Timeline) Relative(t0 time.Time) []string {
	events := tl.snapshot()
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, fmt.Sprintf("%+.3fs %s", e.at.Sub(t0).Seconds(), e.what))
	}
	return out
}

// relativeEvent is one line of Relative read back: seconds after t0, and what happened.
type relativeEvent struct {
	at   float64
	what string
}

// parseRelative reads back the lines Relative rendered (a run's JSON timeline), skipping any it cannot read.
func parseRelative(lines []string) []relativeEvent {
	var out []relativeEvent
	for _, line := range lines {
		at, what, ok := strings.Cut(line, "s ")
		if !ok {
			continue
		}
		t, err := strconv.ParseFloat(at, 64)
		if err != nil {
			continue
		}
		out = append(out, relativeEvent{t, what})
	}
	return out
}
