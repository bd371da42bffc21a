package fleet

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server answers every request after release is closed (watches at once), and records the most requests it
// held at the same time.
type slowServer struct {
	now, peak atomic.Int64
	release   chan struct{}
}

func (s *slowServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if r.URL.Query().Get("watch") != "true" {
		select {
		case <-s.release:
		case <-r.Context().Done():
			return
		}
	}
	_, _ = io.WriteString(w, "ok")
}

func limitedClient(l *inflight) *http.Client {
	return &http.Client{Transport: l.wrap(http.DefaultTransport)}
}

func fetch(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, err = io.ReadAll(resp.Body)
	return errors.Join(err, resp.Body.Close())
}

// Many requests at once reach the server at most limit at a time; watches take no slot.
func TestInflightBoundsRequestsButNotWatches(t *testing.T) {
	s := &slowServer{release: make(chan struct{})}
	srv := httptest.NewServer(s)
	defer srv.Close()
	const limit = 3
	c := limitedClient(newInflight("bound", limit, 0))

	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 20 {
		wg.Go(func() { errs <- fetch(context.Background(), c, srv.URL) })
	}
	// Give every request the chance to be sent; only limit may be.
	deadline := time.Now().Add(5 * time.Second)
	for s.now.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got := s.now.Load(); got != limit {
		t.Fatalf("server holds %d requests, want the bound %d", got, limit)
	}
	// A watch is not held back by the full slots.
	if err := fetch(context.Background(), c, srv.URL+"?watch=true"); err != nil {
		t.Fatalf("watch while the slots are taken: %v", err)
	}
	close(s.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := s.peak.Load(); p > limit+1 { // +1: the watch
		t.Fatalf("server held %d requests at once, bound %d plus one watch", p, limit)
	}
}

// A request's deadline starts when it has a slot: one that waits longer than the timeout behind another still
// gets its full time once sent, and one whose server does not answer is ended by the timeout and gives its slot
// back.
func TestInflightTimeoutStartsWithTheSlot(t *testing.T) {
	s := &slowServer{release: make(chan struct{})}
	srv := httptest.NewServer(s)
	defer srv.Close()
	const timeout = 300 * time.Millisecond
	c := limitedClient(newInflight("timeout", 1, timeout))

	// The first request holds the only slot until the server gives up on it: the timeout ends it.
	first := make(chan error, 1)
	go func() { first <- fetch(context.Background(), c, srv.URL) }()
	for s.now.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	// The second waits for the slot (about the timeout), then is sent; the server answers it after a further
	// half timeout, which must still be within its own time.
	second := make(chan error, 1)
	go func() { second <- fetch(context.Background(), c, srv.URL) }()
	if err := <-first; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first request: %v, want its deadline exceeded", err)
	}
	time.Sleep(timeout / 2)
	close(s.release)
	if err := <-second; err != nil {
		t.Fatalf("second request, which waited for its slot longer than the timeout: %v", err)
	}
}

// A request given up while it waits for a slot returns the caller's error and takes no slot.
func TestInflightWaitEndsWithTheCaller(t *testing.T) {
	s := &slowServer{release: make(chan struct{})}
	srv := httptest.NewServer(s)
	defer srv.Close()
	l := newInflight("cancel", 1, 0)
	c := limitedClient(l)
	go func() { _ = fetch(context.Background(), c, srv.URL) }()
	for s.now.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := fetch(ctx, c, srv.URL); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting request: %v, want the caller's deadline", err)
	}
	close(s.release)
	// Both slots' holders are gone: a new request goes through at once.
	for l.now.Load() != 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := fetch(context.Background(), c, srv.URL); err != nil {
		t.Fatal(err)
	}
}

// bodyServer sends its headers at once and holds the body open until the client goes away.
func bodyServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
}

// waitFree waits until no request holds a slot of l, and fails the test if one still does after a while.
func waitFree(t *testing.T, l *inflight) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for l.now.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held", l.now.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A slot is given back on every path, even when the caller never closes the body: when the request's own
// deadline passes, when the caller gives up, and when the request fails before any answer.
func TestInflightSlotReturnsOnEveryPath(t *testing.T) {
	srv := bodyServer()
	defer srv.Close()
	get := func(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		return c.Do(req)
	}

	t.Run("deadline, body never closed", func(t *testing.T) {
		l := newInflight("deadline", 1, 100*time.Millisecond)
		resp, err := get(context.Background(), limitedClient(l), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp // its body is never closed
		waitFree(t, l)
	})

	t.Run("caller gives up, body never closed", func(t *testing.T) {
		l := newInflight("caller", 1, 0)
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := get(ctx, limitedClient(l), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp
		if got := l.now.Load(); got != 1 {
			t.Fatalf("%d slots held while the body is open, want 1", got)
		}
		cancel()
		waitFree(t, l)
	})

	t.Run("no answer", func(t *testing.T) {
		gone := httptest.NewServer(http.NotFoundHandler())
		url := gone.URL
		gone.Close() // connections are refused
		l := newInflight("refused", 1, 0)
		c := limitedClient(l)
		// One context for all: with the slot kept by the first, the second would wait until it ends.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for range 3 {
			if _, err := get(ctx, c, url); err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("request to a closed port: %v, want the connection refused", err)
			}
		}
		waitFree(t, l)
	})
}
