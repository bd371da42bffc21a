package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Hub is how the CLI reaches the hub.
type Hub struct {
	// Getter is the hub's client configuration: kubectl's --kubeconfig, --context, -n and friends.
	Getter genericclioptions.RESTClientGetter
	// Namespace is the manager's namespace, which holds the registration Secrets; DefaultFleetNamespace if empty.
	Namespace string
}

func (h Hub) namespace() string {
	if h.Namespace == "" {
		return DefaultFleetNamespace
	}
	return h.Namespace
}

// hubClients are a clientset for Secrets and a controller-runtime client for MySQLClusters.
type hubClients struct {
	cs kubernetes.Interface
	cl client.Client
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func (h Hub) connect() (*hubClients, error) {
	if h.Getter == nil {
		return nil, errors.New("no hub client configuration")
	}
	cfg, err := h.Getter.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to configure the hub client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to configure the hub client: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to configure the hub client: %w", err)
	}
	return &hubClients{cs: cs, cl: cl}, nil
}

// requireNamespace fails early, before anything is written into a member, when the manager's namespace is not
// on the hub: the usual cause is a wrong --context or --fleet-namespace, or a manager not installed yet.
func (h Hub) requireNamespace(ctx context.Context, hc *hubClients) error {
	_, err := hc.cs.CoreV1().Namespaces().Get(ctx, h.namespace(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %s not found on the hub: install the manager there first, or pick the hub "+
			"with --context and its namespace with --fleet-namespace", h.namespace())
	}
	if err != nil {
		return fmt.Errorf("failed to read namespace %s on the hub: %w", h.namespace(), err)
	}
	return nil
}

// MemberFlags choose a member cluster the way its administrator reaches it: a kubeconfig file and a context.
// These credentials are the administrator's own and stay on this machine; only the token that join obtains goes
// to the hub.
type MemberFlags struct {
	// Kubeconfig is the member's kubeconfig file; empty means the hub's --kubeconfig, else $KUBECONFIG or
	// ~/.kube/config.
	Kubeconfig string
	// Context is the member's context in that file; empty means its current-context.
	Context string
}

// memberConn is an administrator's connection to a member, and what join copies from it into the kubeconfig
// it writes: the server and its CA, never the administrator's credentials.
type memberConn struct {
	cfg           *rest.Config
	cs            kubernetes.Interface
	server        string
	caData        []byte
	tlsServerName string
}

func (m MemberFlags) connect(hub Hub) (*memberConn, error) {
	if m.Kubeconfig == "" && m.Context == "" {
		// Falling back to the current context would too easily join the hub to itself.
		return nil, errors.New("name the member: --member-context (a context of your kubeconfig) and/or --member-kubeconfig")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case m.Kubeconfig != "":
		rules.ExplicitPath = m.Kubeconfig
	case hub.Getter != nil && hub.Getter.ToRawKubeConfigLoader().ConfigAccess().GetExplicitFile() != "":
		rules.ExplicitPath = hub.Getter.ToRawKubeConfigLoader().ConfigAccess().GetExplicitFile()
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: m.Context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to configure the member client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to configure the member client: %w", err)
	}
	conn := &memberConn{cfg: cfg, cs: cs, server: cfg.Host, tlsServerName: cfg.ServerName}
	switch {
	case cfg.Insecure:
		// Nothing to copy; join falls back to the member's kube-root-ca.crt.
	case len(cfg.CAData) > 0:
		conn.caData = cfg.CAData
	case cfg.CAFile != "":
		// The administrator's file is read here, on this machine, and embedded: the hub's kubeconfig names no
		// file.
		if conn.caData, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("failed to read the member kubeconfig's certificate-authority: %w", err)
		}
	}
	return conn, nil
}

// clusterCA reads the member's cluster CA from the kube-root-ca.crt ConfigMap that kube-controller-manager
// publishes into every namespace, for a member kubeconfig that carries no CA of its own.
func (c *memberConn) clusterCA(ctx context.Context) ([]byte, error) {
	var errs []error
	for _, ns := range []string{MemberNamespace, metav1.NamespaceSystem, metav1.NamespaceDefault} {
		cm, err := c.cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil && cm.Data["ca.crt"] != "" {
			return []byte(cm.Data["ca.crt"]), nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return nil, fmt.Errorf("the member kubeconfig has no certificate-authority-data and no kube-root-ca.crt ConfigMap "+
		"was found in the member; use a kubeconfig with the member's CA: %w", errors.Join(errs...))
}
