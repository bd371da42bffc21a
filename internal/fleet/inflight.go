package fleet

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// inflight bounds the requests the manager has outstanding against one member API server, whatever the number of
// reconciles in flight. Without a bound, every reconcile pass fans its applies out at once, the member's API
// server queues them (API Priority and Fairness), each request's latency grows with the queue, and passes run out
// of time and are redone: more load for the same work. With it, a request waits here for a slot instead, in
// order of arrival, and the member's queue stays short.
//
// A request's deadline (timeout) starts when it gets its slot, so that time spent waiting behind other passes
// never counts against it: the wait is bounded by the caller's context, which ends when the member is found
// unreachable (State.Alive). Watches are long-running and take no slot; the informers' lists do.
type inflight struct {
	member  string
	slots   chan struct{}
	timeout time.Duration
	// now counts the requests holding a slot, for the concurrency histogram.
	now atomic.Int64
}

func newInflight(member string, limit int, timeout time.Duration) *inflight {
	return &inflight{member: member, slots: make(chan struct{}, limit), timeout: timeout}
}

// wrap bounds the requests of a member's transport. It must wrap outside the failure detector, so that a request
// waiting for a slot does not count as one the member leaves unanswered.
func (l *inflight) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if isWatch(req) {
			return rt.RoundTrip(req)
		}
		began := time.Now()
		select {
		case l.slots <- struct{}{}:
		case <-req.Context().Done():
			return nil, context.Cause(req.Context())
		}
		requestWait.WithLabelValues(l.member).Observe(time.Since(began).Seconds())
		requestConcurrency.WithLabelValues(l.member).Observe(float64(l.now.Add(1)))

		ctx, cancel := req.Context(), context.CancelFunc(func() {})
		if l.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, l.timeout)
		}
		// The slot is given back once: when the body is closed (the answer is read), when the request fails, or
		// when its context ends (its deadline, or the caller giving up), so that a body never closed cannot
		// hold a slot for ever.
		release := sync.OnceFunc(func() {
			l.now.Add(-1)
			<-l.slots
		})
		stop := context.AfterFunc(ctx, release)
		done := func() { stop(); cancel(); release() }
		resp, err := rt.RoundTrip(req.WithContext(ctx))
		if err != nil {
			done()
			return nil, err
		}
		resp.Body = &releasingBody{ReadCloser: resp.Body, done: sync.OnceFunc(done)}
		return resp, nil
	})
}

// isWatch tells a watch, which stays open as long as the informer runs, from a request that ends.
func isWatch(req *http.Request) bool {
	switch req.URL.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return false
}

// releasingBody gives the request's slot back when the body is closed.
type releasingBody struct {
	io.ReadCloser
	done func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}
