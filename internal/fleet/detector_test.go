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
