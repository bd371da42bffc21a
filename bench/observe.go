package main

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// watchedResources are the kinds render produces.
var watchedResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Group: "batch", Version: "v1", Resource: "cronjobs"},
}

// observedSelector matches what mysqlfleet writes and what the baselines write, nothing else.
var observedSelector = v1alpha1.ManagedByLabel + " in (" + v1alpha1.ManagedByValue + "," + baselineManagedBy + ")"

// observer records when each object was first seen in each member. It watches (metadata only, server-side
// label selection) rather than polls: one watch per kind and member costs the API servers far less than
// repeated lists, and the time of an object is when its watch event arrives, not the next poll.
type observer struct {
	mu      sync.Mutex
	seen    map[key]time.Time
	cancels map[string]context.CancelFunc
}

func newObserver() *observer {
	return &observer{seen: map[key]time.Time{}, cancels: map[string]context.CancelFunc{}}
}

// watch starts watching a member; unwatch stops. A member whose API server goes away is unwatched and
// watched again when it is back, so that the reflectors' backoff does not delay what the bench observes.
func (o *observer) watch(ctx context.Context, member string, cfg *rest.Config) error {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	o.mu.Lock()
	if old := o.cancels[member]; old != nil {
		old()
	}
	o.cancels[member] = cancel
	o.mu.Unlock()
	for _, gvr := range watchedResources {
		inf := metadatainformer.NewFilteredMetadataInformer(mc, gvr, metav1.NamespaceAll, 0, cache.Indexers{},
			func(lo *metav1.ListOptions) { lo.LabelSelector = observedSelector }).Informer()
		record := func(obj any) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				o.record(key{member: member, resource: gvr.Resource, namespace: m.Namespace, name: m.Name})
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
		}); err != nil {
			cancel()
			return err
		}
		go inf.RunWithContext(wctx)
	}
	return nil
}

func (o *observer) unwatch(member string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.cancels[member]; c != nil {
		c()
		delete(o.cancels, member)
	}
}

// stop ends every watch: an API server with open watches can take longer to stop than the fleet waits.
func (o *observer) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for m, c := range o.cancels {
		c()
		delete(o.cancels, m)
	}
}

func (o *observer) record(k key) {
	now := time.Now()
	o.mu.Lock()
	if _, ok := o.seen[k]; !ok {
		o.seen[k] = now
	}
	o.mu.Unlock()
}

// wait returns when every key has been seen, the timeout passed or ctx ended, with the number still missing.
func (o *observer) wait(ctx context.Context, keys []key, timeout time.Duration) (missing int) {
	deadline := time.Now().Add(timeout)
	for {
		missing = 0
		o.mu.Lock()
		for _, k := range keys {
			if _, ok := o.seen[k]; !ok {
				missing++
			}
		}
		o.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return missing
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// last returns when the last of keys was first seen, and whether all were.
func (o *observer) last(keys []key) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var last time.Time
	for _, k := range keys {
		t, ok := o.seen[k]
		if !ok {
			return time.Time{}, false
		}
		if t.After(last) {
			last = t
		}
	}
	return last, true
}
