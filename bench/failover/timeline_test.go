package failover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// event is one change seen in the member, with the time its watch event arrived.
type event struct {
	at   time.Time
	what string
}

// timeline records, from watches on the run's namespace, where the time of a change of primary goes: the
// member controller's report and record (each pass that decided something writes them), the Pods' role labels
// and the EndpointSlices of <name>-primary; and, from the Resolver, when each of the controller's passes starts. Times are those of the watch events' arrival, so each is a little
// late, by the same small amount.
type timeline struct {
	mu     sync.Mutex
	events []event
}

func (tl *timeline) add(what string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, event{at: time.Now(), what: what})
}

func (tl *timeline) snapshot() []event {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.events)
}

// first is the first event at or after t whose description is what.
func (tl *timeline) first(t time.Time, what string) (time.Time, bool) {
	for _, e := range tl.snapshot() {
		if !e.at.Before(t) && e.what == what {
			return e.at, true
		}
	}
	return time.Time{}, false
}

// watchSet follows the set's report ConfigMap, Pods and primary Service's EndpointSlices until ctx ends.
func watchSet(ctx context.Context, c client.WithWatch, s *set) *timeline {
	tl := &timeline{}
	recordPasses(s.ns, tl)
	go func() {
		<-ctx.Done()
		recordPasses(s.ns, nil)
	}()
	report := v1alpha1.ReplicationReportName(setName)
	go follow(ctx, c, &corev1.ConfigMapList{}, []client.ListOption{client.InNamespace(s.ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", report)}},
		reportChanges(tl))
	go follow(ctx, c, &corev1.PodList{}, []client.ListOption{client.InNamespace(s.ns)}, roleChanges(tl))
	go follow(ctx, c, &discoveryv1.EndpointSliceList{}, []client.ListOption{client.InNamespace(s.ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: s.cluster.PrimaryServiceName()}}, endpointChanges(tl))
	return tl
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
func reportChanges(tl *timeline) func(watch.Event) {
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
func roleChanges(tl *timeline) func(watch.Event) {
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
func endpointChanges(tl *timeline) func(watch.Event) {
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
