package fleet

import (
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestTrafficSilenceIsWaitingWithoutAnswers(t *testing.T) {
	g := NewWithT(t)
	var tr traffic
	now := time.Now()
	g.Expect(tr.silence(now)).To(BeZero(), "nothing waits")

	tr.start()
	g.Expect(tr.silence(time.Now().Add(2*time.Second))).To(BeNumerically(">=", 2*time.Second), "one request waits, no answer yet")
	tr.start()
	tr.done(true)
	// A busy member: one request still waits, but another was answered just now.
	g.Expect(tr.silence(time.Now())).To(BeNumerically("<", 100*time.Millisecond))
	tr.done(false)
	g.Expect(tr.silence(time.Now().Add(time.Hour))).To(BeZero(), "nothing waits any more")
}

func TestTrafficWrapCountsAnswersNotFailures(t *testing.T) {
	g := NewWithT(t)
	var tr traffic
	block := make(chan struct{})
	rt := tr.wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		<-block
		if req.URL.Path == "/fail" {
			return nil, errors.New("connection refused")
		}
		return &http.Response{StatusCode: http.StatusInternalServerError}, nil
	}))
	req := func(path string) {
		r, _ := http.NewRequest(http.MethodGet, "https://member"+path, nil)
		_, _ = rt.RoundTrip(r)
	}
	go req("/fail")
	g.Eventually(func() time.Duration { return tr.silence(time.Now().Add(time.Minute)) }).Should(BeNumerically(">", 0))
	close(block)
	g.Eventually(func() time.Duration { return tr.silence(time.Now()) }).Should(BeZero())
	g.Expect(tr.lastAnswer.IsZero()).To(BeTrue(), "a failed connection is no answer")
	req("/ok")
	g.Expect(tr.lastAnswer.IsZero()).To(BeFalse(), "an error status is an answer")
}

// A failed probe makes a member unreachable only if nothing else it was asked was answered meanwhile: behind a
// partition nothing is, while a CPU-starved API server may miss its probe and still serve.
func TestProbeVerdictWeighsOtherAnswers(t *testing.T) {
	g := NewWithT(t)
	probeErr := errors.New("member unreachable: /readyz: context deadline exceeded")

	var silent traffic
	silent.start() // a request waits, unanswered, before and during the probe
	began := time.Now()
	g.Expect(probeVerdict(probeErr, &silent, began)).To(MatchError(probeErr), "nothing answered: unreachable")

	var busy traffic
	busy.start()
	busy.done(true) // answered before the probe: says nothing about now
	began = time.Now()
	g.Expect(probeVerdict(probeErr, &busy, began)).To(MatchError(probeErr), "an answer from before the probe does not count")
	g.Eventually(func() bool {
		busy.start()
		busy.done(true) // answered while the probe waited
		return probeVerdict(probeErr, &busy, began) == nil
	}).Should(BeTrue(), "an answer while the probe waited: reachable")

	var ok traffic
	g.Expect(probeVerdict(nil, &ok, time.Now())).To(Succeed())
	g.Expect(ok.lastAnswer.IsZero()).To(BeFalse(), "a probe's answer is an answer of the member")
}
