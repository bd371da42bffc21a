package fleet

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// memberReachable is the registry's own verdict on each registered member, the one placement and status act on.
var memberReachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mysqlfleet_member_reachable",
	Help: "1 while the member is engaged and answers; 0 while it is registered but refused, unreachable or not engaged.",
}, []string{"member"})

// memberTokenExpiration is when each member's registration token expires, from the annotation `mysqlfleet join`
// writes. An expired token makes the member answer 401, which still counts as reachable: only this tells in
// advance that its applies are about to fail.
var memberTokenExpiration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mysqlfleet_member_token_expiration_timestamp_seconds",
	Help: "When the token of the member's registration expires, in seconds since the Unix epoch, from its mysqlfleet.io/token-expiration annotation.",
}, []string{"member"})

// requestConcurrency is how many requests the manager had outstanding against the member, this one included,
// each time it sent one: it never goes past the member's bound (--member-max-in-flight).
var requestConcurrency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "mysqlfleet_member_request_concurrency",
	Help:    "Requests the manager had outstanding against the member, this one included, when it sent a request (watches excluded).",
	Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
}, []string{"member"})

// requestWait is how long requests waited for one of the member's slots before they were sent.
var requestWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "mysqlfleet_member_request_wait_seconds",
	Help:    "How long a request to the member waited for one of its in-flight slots before it was sent.",
	Buckets: []float64{0.001, 0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30},
}, []string{"member"})

// memberRequests counts the requests the manager sent to each member by what they do, so that a reader can
// tell the reads of single objects from the lists and watches of the member's cache.
var memberRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mysqlfleet_member_requests_total",
	Help: "Requests sent to the member, by verb: get (one object), list, watch, create, update, patch, apply, delete, discovery (no resource).",
}, []string{"member", "verb"})

func init() {
	metrics.Registry.MustRegister(memberReachable, memberTokenExpiration, requestConcurrency, requestWait, memberRequests)
}

// countRequests wraps a member's transport to count its requests by verb.
func countRequests(member string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			memberRequests.WithLabelValues(member, requestVerb(req)).Inc()
			return rt.RoundTrip(req)
		})
	}
}

// requestVerb names what a request to a resource path does, as the API server's own verbs do: a GET of a path
// that names an object is a get, of a collection a list or a watch.
func requestVerb(req *http.Request) string {
	switch req.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodDelete:
		return "delete"
	case http.MethodPatch:
		if strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
			return "apply"
		}
		return "patch"
	case http.MethodGet:
	default:
		return strings.ToLower(req.Method)
	}
	if isWatch(req) {
		return "watch"
	}
	// /api/v1/<rest> or /apis/<group>/<version>/<rest>; <rest> is [namespaces/<ns>/]<resource>[/<name>[/<sub>]],
	// or namespaces/<name> for a Namespace.
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "discovery" // /api, /apis/<group>/<version>, /version and the like: no resource
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) >= 2 {
		return "get"
	}
	return "list"
}

// reportToken sets the member's token expiry from its registration Secret, or drops it when the Secret has no
// valid annotation (a token that does not expire, such as a client certificate's).
func reportToken(name string, secret *corev1.Secret) {
	exp, err := time.Parse(time.RFC3339, secret.Annotations[v1alpha1.TokenExpirationAnnotation])
	if err != nil {
		memberTokenExpiration.DeleteLabelValues(name)
		return
	}
	memberTokenExpiration.WithLabelValues(name).Set(float64(exp.Unix()))
}

// usable is the verdict: engaged, answering, and registered with valid facts. Callers hold p.mu.
func (m *member) usable() bool {
	return m.cl != nil && m.err == nil && m.factErr == nil
}

// report sets a member's gauge from its verdict; every change of cl, err or factErr is followed by a report.
// Callers hold p.mu, so that two changes cannot report in the opposite order.
func (p *Provider) report(name string, m *member) {
	v := 0.0
	if m.usable() {
		v = 1
	}
	memberReachable.WithLabelValues(name).Set(v)
}

// forget drops the gauge of a member whose registration was removed: a member that no longer exists is
// neither reachable nor unreachable.
func forget(name string) {
	memberReachable.DeleteLabelValues(name)
	memberTokenExpiration.DeleteLabelValues(name)
	requestConcurrency.DeleteLabelValues(name)
	requestWait.DeleteLabelValues(name)
	memberRequests.DeletePartialMatch(prometheus.Labels{"member": name})
}
