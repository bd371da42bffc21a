package fleet

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

func TestReadyzCountsAnyAnswerAsReachable(t *testing.T) {
	g := NewWithT(t)
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
	}))
	defer notReady.Close()
	hc, err := healthClient(&rest.Config{Host: notReady.URL})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readyz(context.Background(), hc)).To(Succeed(), "not ready, but it answered")

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	hc, err = healthClient(&rest.Config{Host: gone.URL})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readyz(context.Background(), hc)).To(MatchError(ErrUnreachable), "connection refused")
}
