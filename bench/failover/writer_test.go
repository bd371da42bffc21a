package failover

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// endpoints follows the Pods a Service's ready EndpointSlice endpoints name, as kube-proxy follows them to
// program where the Service's address leads: listed every pollEvery, and at once when the writer asks after a
// failed write.
type endpoints struct {
	c       client.Client
	ns, svc string
	poke    chan struct{}

	mu   sync.Mutex
	pods []string
}

const pollEvery = 50 * time.Millisecond

func newEndpoints(c client.Client, ns, svc string) *endpoints {
	return &endpoints{c: c, ns: ns, svc: svc, poke: make(chan struct{}, 1)}
}

// run lists the EndpointSlices until ctx ends. A failed list keeps the last answer, as kube-proxy keeps its
// rules while it cannot reach the API server.
func (e *endpoints) run(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		if pods, err := endpointPods(ctx, e.c, e.ns, e.svc); err == nil {
			e.mu.Lock()
			e.pods = pods
			e.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.poke:
		}
	}
}

func (e *endpoints) current() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.pods)
}

// refresh asks for a list now (re-resolve after an error).
func (e *endpoints) refresh() {
	select {
	case e.poke <- struct{}{}:
	default:
	}
}

// ack is a write whose INSERT returned success: semi-sync acknowledged it, so it must survive any failover.
type ack struct {
	id  int64
	pod string
	at  time.Time
}

// writer writes rows of increasing ids, one autocommit INSERT at a time, to the Pod the Service reaches: a
// client of <name>-primary behind kube-proxy. With several ready endpoints it picks one at random, as
// kube-proxy does per connection. Every id gets one attempt; only ids whose INSERT returned success are
// recorded, so a write cut off by a crash is never counted as acknowledged.
type writer struct {
	ep      *endpoints
	dsn     func(pod string) (string, error)
	timeout time.Duration

	mu       sync.Mutex
	acks     []ack
	failures []time.Time
	pools    map[string]*sql.DB
}

func newWriter(ep *endpoints, dsn func(string) (string, error), timeout time.Duration) *writer {
	return &writer{ep: ep, dsn: dsn, timeout: timeout, pools: map[string]*sql.DB{}}
}

// run writes until ctx ends.
func (w *writer) run(ctx context.Context) {
	defer w.close()
	var id int64
	for ctx.Err() == nil {
		pods := w.ep.current()
		if len(pods) == 0 {
			// The Service reaches nothing: a client's connection attempt would be refused.
			sleep(ctx, 5*time.Millisecond)
			continue
		}
		pod := pods[rand.IntN(len(pods))]
		db, err := w.pool(pod)
		if err == nil {
			id++
			wctx, cancel := context.WithTimeout(ctx, w.timeout)
			_, err = db.ExecContext(wctx, "INSERT INTO writes (id) VALUES (?)", id)
			cancel()
		}
		now := time.Now()
		if err == nil {
			w.mu.Lock()
			w.acks = append(w.acks, ack{id: id, pod: pod, at: now})
			w.mu.Unlock()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.failures = append(w.failures, now)
		w.mu.Unlock()
		w.ep.refresh()
		sleep(ctx, 10*time.Millisecond)
	}
}

// pool is the connection pool to a Pod's server. database/sql replaces broken connections.
func (w *writer) pool(pod string) (*sql.DB, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if db, ok := w.pools[pod]; ok {
		return db, nil
	}
	dsn, err := w.dsn(pod)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	w.pools[pod] = db
	return db, nil
}

func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, db := range w.pools {
		_ = db.Close()
	}
}

// firstAck is the first write acknowledged after t by a Pod that ok accepts.
func (w *writer) firstAck(t time.Time, ok func(pod string) bool) (ack, bool) {
	for _, a := range w.acked() {
		if a.at.After(t) && ok(a.pod) {
			return a, true
		}
	}
	return ack{}, false
}

// lastAckBefore is the last write acknowledged before t.
func (w *writer) lastAckBefore(t time.Time) (ack, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.acks) - 1; i >= 0; i-- {
		if w.acks[i].at.Before(t) {
			return w.acks[i], true
		}
	}
	return ack{}, false
}

// firstFailureAfter is the first failed write after t.
func (w *writer) firstFailureAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.failures {
		if f.After(t) {
			return f, true
		}
	}
	return time.Time{}, false
}

func (w *writer) acked() []ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acks)
}

func (w *writer) failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.failures)
}
