package fleet

import (
	"net/http"
	"sync"
	"time"
)

// traffic watches the requests to one member: how many wait for an answer, since when, and when the member last
// answered anything. It is the member's failure detector: behind a network partition requests wait and nothing
// answers, while a member that is merely busy keeps answering some of them. A silence longer than suspectAfter
// while requests wait makes the provider probe the member at once, and a failed probe marks it unreachable,
// which ends the work in flight there (State.Alive). Behind a partition that takes about suspectAfter plus the
// probe's timeout, instead of every waiting request's own deadline.
type traffic struct {
	mu         sync.Mutex
	waiting    int
	busySince  time.Time
	lastAnswer time.Time
}

// wrap counts the requests a member's transport carries. For a watch, the answer is its response headers.
func (t *traffic) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		t.start()
		resp, err := rt.RoundTrip(req)
		t.done(err == nil) // an HTTP error status is an answer too; a failed connection is not
		return resp, err
	})
}

func (t *traffic) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting == 0 {
		t.busySince = time.Now()
	}
	t.waiting++
}

func (t *traffic) done(answered bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiting--
	if answered {
		t.lastAnswer = time.Now()
	}
}

// silence is how long requests have been waiting with no answer from the member; zero when none waits.
func (t *traffic) silence(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting <= 0 {
		return 0
	}
	since := t.busySince
	if t.lastAnswer.After(since) {
		since = t.lastAnswer
	}
	return now.Sub(since)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
