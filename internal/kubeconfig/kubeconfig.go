// Package kubeconfig is the gate every member kubeconfig passes before the hub builds a client from it.
//
// A member kubeconfig is a credential written by someone who may be less trusted than the manager, yet the
// manager acts on it with its own filesystem, environment and network position. client-go trusts a kubeconfig
// completely: it runs exec plugins, reads tokenFile and certificate paths (clientcmd.RESTConfigFromKubeConfig
// reads a tokenFile while parsing), sends traffic through proxy-url and impersonates whoever the file names.
// So the data is decoded with clientcmd.Load, which only decodes; the decoded clientcmdapi.Config is checked
// field by field; and the rest.Config is then built from that same in-memory object, copying only the fields
// that were allowed. Nothing here reads a file, runs a command or touches the network.
package kubeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/flowcontrol"
)

// ErrRefused is wrapped by every error about the content of a kubeconfig. Such a kubeconfig has to be fixed by
// whoever wrote it, so callers report it (condition and Warning Event) instead of retrying. The messages name
// the offending field and never quote tokens, passwords, keys or URLs.
var ErrRefused = errors.New("kubeconfig refused")

// Defaults for the per-member client. client-go's own 5 QPS / 10 burst is meant for one command-line client and
// starves a controller that starts informers and applies objects in many members. The limit is per member and
// only a guard against a runaway manager: what protects a member's API server is its own API Priority and
// Fairness (GA since Kubernetes 1.29), which queues the manager's requests behind nobody else's. A member joining
// a fleet of 100 databases is sent about 800 objects: at 50 QPS that is 16 s spent on this limiter alone.
const (
	DefaultQPS         = 200
	DefaultBurst       = 400
	DefaultDialTimeout = 10 * time.Second
)

// Options tune the gate and the clients built from accepted kubeconfigs. The zero value is the strict default.
type Options struct {
	// Context names the kubeconfig context to use; empty means the file's current-context.
	Context string
	// AllowInsecureTLS lets a cluster set insecure-skip-tls-verify. Set it only from the manager's explicit
	// opt-in flag: without verification anyone on the network path can read the member's token.
	AllowInsecureTLS bool
	// QPS and Burst limit requests to one member; zero means DefaultQPS and DefaultBurst, and a negative QPS
	// disables client-side rate limiting (as in rest.Config).
	QPS   float32
	Burst int
	// Timeout bounds every request, watches included: client-go enforces it as http.Client.Timeout, which also
	// covers reading a response body, so a non-zero value ends each informer's watch after Timeout and forces a
	// new one (see kcp-dev/kcp#3162). Zero, the default, leaves requests bounded by their context, which is what
	// a client that feeds a cache needs; set it only for clients that never watch.
	Timeout time.Duration
	// DialTimeout bounds establishing a TCP connection to the member, so that an unreachable member fails fast
	// instead of after the operating system's TCP timeout. Zero means DefaultDialTimeout. The TLS handshake is
	// bounded separately by client-go (10s).
	DialTimeout time.Duration
}

// Validate decodes a kubeconfig and checks that it is self-contained: it must not make the manager run a
// command, read a file, use a proxy of its choosing, impersonate, or send credentials without TLS. Every
// user and cluster in the file is checked, not only those of the selected context, so that choosing another
// context later cannot reach a refused entry. Validate does not touch the filesystem, the environment or the
// network. All problems are reported at once, in a stable order, each wrapping ErrRefused.
func Validate(data []byte, opts Options) (*clientcmdapi.Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: kubeconfig is empty", ErrRefused)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The decoder's own message is withheld: client-go's conversion quotes the whole list, tokens and
		// keys included, when a name appears twice (tools/clientcmd/api/v1/conversion.go).
		return nil, fmt.Errorf("%w: %w", ErrRefused, describeDecodeFailure(data))
	}
	if errs := validate(cfg, opts); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrRefused, errs.ToAggregate())
	}
	return cfg, nil
}

// RESTConfig validates a kubeconfig and builds the rest.Config for the member's client.
//
// The rest.Config is built here from the validated in-memory object rather than by
// clientcmd.DirectClientConfig.ClientConfig: copying the accepted fields one by one is an allowlist, so a field
// that a later client-go learns to map (and that Validate does not know about yet) cannot reach the client. The
// mapping is the one clientcmd uses for these fields; a test compares the two.
//
// Proxy is left nil on purpose, so client-go uses the manager's HTTPS_PROXY and NO_PROXY: those are set by
// whoever runs the manager, who may need a corporate proxy to reach members, while the kubeconfig author
// cannot choose a proxy (proxy-url is refused).
//
// member names the member in the User-Agent ("mysqlfleet/<member>"), so that member API servers' audit logs
// and metrics tell the hub's traffic per member apart.
func RESTConfig(member string, data []byte, opts Options) (*rest.Config, error) {
	if member == "" {
		return nil, errors.New("member name must not be empty")
	}
	cfg, err := Validate(data, opts)
	if err != nil {
		return nil, err
	}
	// Validate guarantees that the context, its cluster and its user exist.
	kctx := cfg.Contexts[contextName(cfg, opts)]
	cluster := cfg.Clusters[kctx.Cluster]
	user := cfg.AuthInfos[kctx.AuthInfo]

	opts = opts.withDefaults()
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	return &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cluster.TLSServerName,
			Insecure:   cluster.InsecureSkipTLSVerify,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		BearerToken:        user.Token,
		DisableCompression: cluster.DisableCompression,
		UserAgent:          "mysqlfleet/" + member,
		QPS:                opts.QPS,
		Burst:              opts.Burst,
		RateLimiter:        memberRateLimiter(opts),
		Timeout:            opts.Timeout,
		Dial:               dialer.DialContext,
	}, nil
}

// memberRateLimiter is one token bucket for every client built from the member's config. With only QPS and
// Burst set, client-go gives each REST client its own bucket, and controller-runtime makes one client per kind,
// so the member would see several times the configured rate.
func memberRateLimiter(o Options) flowcontrol.RateLimiter {
	if o.QPS < 0 {
		return nil // client-side rate limiting disabled, as with rest.Config
	}
	return flowcontrol.NewTokenBucketRateLimiter(o.QPS, o.Burst)
}

func (o Options) withDefaults() Options {
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	return o
}

// contextName is the context the manager uses: the one asked for, else the file's current-context.
func contextName(cfg *clientcmdapi.Config, opts Options) string {
	if opts.Context != "" {
		return opts.Context
	}
	return cfg.CurrentContext
}
