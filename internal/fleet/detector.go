package fleet

import (
	"context"
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

// answered records an answer the member gave outside the counted requests: a health probe's.
func (t *traffic) answered() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastAnswer = time.Now()
}

// answeredSince tells whether the member answered a counted request after t.
func (t *traffic) answeredSince(at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastAnswer.After(at)
}

// probeVerdict is the outcome of a probe of the member that began at began: its error, unless the member
// answered other requests while the probe waited. Behind a partition nothing answers; an API server starved of
// CPU (issue 19 saw it on a machine at load 37) can leave /readyz unanswered past suspectProbeTimeout while it
// still serves the requests it has, and calling it unreachable would stop every pass working there and have
// each redone.
func probeVerdict(err error, t *traffic, began time.Time) error {
	switch {
	case err == nil:
		t.answered()
	case t.answeredSince(began):
		return nil
	}
	return err
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

const (
	// suspectAfter is how long requests to a member may wait with no answer at all before the member is probed
	// at once, rather than at the next health interval.
	suspectAfter = time.Second
	// suspectProbeTimeout bounds that probe; a member that does not answer it is unreachable. /readyz is exempt
	// from API Priority and Fairness, so a member that is only busy answers it quickly.
	suspectProbeTimeout = 3 * time.Second
	// recheckEvery is how often a member found unreachable is probed until it answers again.
	recheckEvery = 2 * time.Second
)

// detect runs every suspectAfter/2. It probes at once every reachable member whose requests have waited
// suspectAfter with no answer, and re-probes every member found unreachable once its last probe is
// recheckEvery old, so that a member is used again within seconds of answering, whatever the health interval.
func (p *Provider) detect(now time.Time) {
	p.mu.RLock()
	var due []string
	for name, m := range p.members {
		if m.cl == nil || m.traffic == nil || m.probing {
			continue
		}
		if m.err == nil && m.traffic.silence(now) > suspectAfter || m.err != nil && now.Sub(m.probedAt) >= recheckEvery {
			due = append(due, name)
		}
	}
	p.mu.RUnlock()
	for _, name := range due {
		p.probeNow(name)
	}
}

// Suspect probes an engaged member at once, unless a probe of it is under way: a request to it went
// unanswered. The probe, not the request, decides: a request may also time out on a member that is only busy
// (queued by its API Priority and Fairness, or by the manager's own rate limit), and calling such a member
// unreachable would stop all work there. A member that fails the probe is unreachable until a probe sees it
// answer again.
func (p *Provider) Suspect(name string) {
	p.probeNow(name)
}

// probeNow probes an engaged member's /readyz unless a probe of it is under way, and records the verdict.
func (p *Provider) probeNow(name string) {
	p.mu.Lock()
	m := p.members[name]
	if m == nil || m.cl == nil || m.health == nil || m.probing || p.ctx == nil {
		p.mu.Unlock()
		return
	}
	m.probing = true
	cl, hc, tr, ctx := m.cl, m.health, m.traffic, p.ctx
	p.mu.Unlock()
	go func() {
		pctx, cancel := context.WithTimeout(ctx, suspectProbeTimeout)
		began := time.Now()
		err := probeVerdict(readyz(pctx, hc), tr, began)
		cancel()
		p.mu.Lock()
		m.probing, m.probedAt = false, time.Now()
		p.mu.Unlock()
		p.setHealth(name, cl, err)
	}()
}
