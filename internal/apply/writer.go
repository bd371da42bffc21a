package apply

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Writer sends one member's applies with client-go's typed clients. They ask for the answer in protobuf and
// decode it into the typed object, where the controller-runtime client's Apply asks for JSON and decodes the
// whole object, managedFields and all, into the apply configuration: in make bench that decoding was about a
// tenth of the manager's CPU during a convergence, spent to learn one resourceVersion, and the member's API
// server spends more on encoding JSON than protobuf too.
type Writer struct {
	cs kubernetes.Interface
}

// NewWriter builds a member's Writer on the member cluster's config and HTTP client, so that its requests share
// the cluster's connections, rate limiter, in-flight bound and failure detector.
func NewWriter(cfg *rest.Config, hc *http.Client) (*Writer, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("building the apply client: %w", err)
	}
	return &Writer{cs: cs}, nil
}
