package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// Defaults of JoinOptions.
const (
	DefaultTokenWait       = 15 * time.Second
	DefaultTokenExpiration = 365 * 24 * time.Hour
)

// JoinOptions say which member to register, under which name, with which facts.
type JoinOptions struct {
	// Name is the member's name in the fleet: the registration Secret's name, used by placements.
	Name string
	// Member is the administrator's access to the member.
	Member MemberFlags
	// Cloud is aws, azure or gcp; Region is, e.g., eu-west-1.
	Cloud  string
	Region string
	// Labels are extra labels of the registration Secret, for placement.memberSelector.
	Labels map[string]string
	// StorageClass, when set, overrides the storage class of every database placed on the member.
	StorageClass string
	// Namespaces, when set, confine the manager's access in the member to these namespaces.
	Namespaces []string
	// Server is the member's API server URL as the hub reaches it; default: the URL in the member kubeconfig.
	Server string
	// RotateToken replaces the member token (revoking the old one) even when the registered one still works.
	RotateToken bool
	// TokenWait is how long to wait for a token controller to fill the token Secret. Default DefaultTokenWait.
	TokenWait time.Duration
	// TokenExpiration is the lifetime asked for a TokenRequest token. Default DefaultTokenExpiration.
	TokenExpiration time.Duration
	// SkipMemberController leaves the member controller out: for a member where it is installed otherwise, or
	// whose Pods run no servers (the local fleet's kwok nodes).
	SkipMemberController bool
	// MemberControllerImage is the image the member controller runs. Default DefaultMemberControllerImage.
	MemberControllerImage string
}

// TokenSource says where a registration's token came from.
type TokenSource string

const (
	// TokenReused is the token already registered, which still authenticates as the ServiceAccount.
	TokenReused TokenSource = "reused"
	// TokenFromSecret is the long-lived token a token controller wrote into the token Secret.
	TokenFromSecret TokenSource = "secret"
	// TokenRequested is a TokenRequest token, used when no token controller filled the Secret. It expires.
	TokenRequested TokenSource = "token-request"
)

// JoinResult is what join wrote.
type JoinResult struct {
	// Secret is the registration Secret as the hub returned it.
	Secret *corev1.Secret
	// TokenSource and TokenExpiration (nil for a long-lived token) describe the registered token.
	TokenSource     TokenSource
	TokenExpiration *time.Time
}

// ParseLabels reads k=v pairs, as given to --label.
func ParseLabels(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("label %q: want key=value", p)
		}
		out[k] = v
	}
	return out, nil
}

func (o *JoinOptions) complete() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("member name %q: %s", o.Name, strings.Join(msgs, "; ")))
	}
	switch v1alpha1.Cloud(o.Cloud) {
	case v1alpha1.CloudAWS, v1alpha1.CloudAzure, v1alpha1.CloudGCP:
	default:
		errs = append(errs, fmt.Errorf("--cloud %q: use aws, azure or gcp", o.Cloud))
	}
	if o.Region == "" {
		errs = append(errs, errors.New("--region is required, e.g. eu-west-1"))
	} else if msgs := validation.IsValidLabelValue(o.Region); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--region %q: %s", o.Region, strings.Join(msgs, "; ")))
	}
	for k, v := range o.Labels {
		switch k {
		case v1alpha1.MemberSecretLabel, v1alpha1.CloudLabel, v1alpha1.RegionLabel:
			errs = append(errs, fmt.Errorf("--label %s: set by join itself (use --cloud and --region)", k))
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--label key %q: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--label %s value %q: %s", k, v, strings.Join(msgs, "; ")))
		}
	}
	if o.StorageClass != "" {
		if msgs := validation.IsDNS1123Subdomain(o.StorageClass); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--storage-class %q: %s", o.StorageClass, strings.Join(msgs, "; ")))
		}
	}
	ns := sets.New[string]()
	for _, n := range o.Namespaces {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespaces %q: %s", n, strings.Join(msgs, "; ")))
		}
		ns.Insert(n)
	}
	o.Namespaces = sets.List(ns)
	if o.Server != "" {
		if u, err := url.Parse(o.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--server must be an https:// URL of the member's API server"))
		}
	}
	if o.TokenWait == 0 {
		o.TokenWait = DefaultTokenWait
	}
	if o.MemberControllerImage == "" {
		o.MemberControllerImage = DefaultMemberControllerImage()
	}
	if o.TokenExpiration == 0 {
		o.TokenExpiration = DefaultTokenExpiration
	}
	if o.TokenExpiration < 10*time.Minute {
		// The API server refuses TokenRequests for less.
		errs = append(errs, errors.New("--token-expiration must be at least 10m"))
	}
	return errors.Join(errs...)
}

// registration is the hub Secret join writes, without its kubeconfig.
func (o *JoinOptions) registration(namespace string) *corev1.Secret {
	labels := map[string]string{}
	for k, v := range o.Labels {
		labels[k] = v
	}
	labels[v1alpha1.MemberSecretLabel] = "true"
	labels[v1alpha1.CloudLabel] = o.Cloud
	labels[v1alpha1.RegionLabel] = o.Region
	annotations := map[string]string{}
	if o.StorageClass != "" {
		annotations[v1alpha1.StorageClassAnnotation] = o.StorageClass
	}
	if len(o.Namespaces) > 0 {
		annotations[v1alpha1.NamespacesAnnotation] = strings.Join(o.Namespaces, ",")
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: namespace, Labels: labels, Annotations: annotations},
		Type:       corev1.SecretTypeOpaque,
	}
}

// Join registers a member with the hub. In the member it applies MemberAccess and obtains the ServiceAccount's
// token; it builds a kubeconfig from the member's server, CA and that token, passes it through the manager's
// gate, proves that it authenticates as the ServiceAccount and can list StatefulSets, and only then applies the
// registration Secret on the hub. Everything is applied with server-side apply, so running join again changes
// nothing, and the registered token is kept while it still works unless RotateToken is set.
func Join(ctx context.Context, hub Hub, opts JoinOptions, out io.Writer) (*JoinResult, error) {
	if out == nil {
		out = io.Discard
	}
	if err := opts.complete(); err != nil {
		return nil, err
	}
	reg := opts.registration(hub.namespace())
	// The manager reads the Secret this way; refuse now what it would refuse later.
	if _, err := placement.MemberFromSecret(reg); err != nil {
		return nil, err
	}

	hc, err := hub.connect()
	if err != nil {
		return nil, err
	}
	if err := hub.requireNamespace(ctx, hc); err != nil {
		return nil, err
	}
	var previous *corev1.Secret
	switch s, err := hc.cs.CoreV1().Secrets(hub.namespace()).Get(ctx, opts.Name, metav1.GetOptions{}); {
	case err == nil:
		previous = s
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to read Secret %s/%s on the hub: %w", hub.namespace(), opts.Name, err)
	}

	mc, err := opts.Member.connect(hub)
	if err != nil {
		return nil, err
	}
	j := &joiner{opts: opts, mc: mc, out: out}
	if j.server = opts.Server; j.server == "" {
		j.server = mc.server
	}
	// Check the server URL against the gate before writing anything into the member.
	if data, err := memberKubeconfig(opts.Name, j.server, nil, mc.tlsServerName, "preflight"); err != nil {
		return nil, err
	} else if _, err := kubeconfig.Validate(data, kubeconfig.Options{}); err != nil {
		return nil, fmt.Errorf("the member's server URL cannot be registered (set --server): %w", err)
	}

	if err := j.applyAccess(ctx); err != nil {
		return nil, err
	}
	if !opts.SkipMemberController {
		if err := j.applyMemberController(ctx); err != nil {
			return nil, err
		}
	}
	if j.ca = mc.caData; len(j.ca) == 0 {
		if j.ca, err = mc.clusterCA(ctx); err != nil {
			return nil, err
		}
		say(out, "member: using the cluster CA from the member's kube-root-ca.crt ConfigMap\n")
	}
	tok, err := j.token(ctx, previous)
	if err != nil {
		return nil, err
	}
	data, err := memberKubeconfig(opts.Name, j.server, j.ca, mc.tlsServerName, tok.value)
	if err != nil {
		return nil, err
	}
	if _, err := kubeconfig.Validate(data, kubeconfig.Options{}); err != nil {
		return nil, fmt.Errorf("the kubeconfig built for the hub was refused: %w", err)
	}

	if tok.expires != nil {
		reg.Annotations[v1alpha1.TokenExpirationAnnotation] = tok.expires.UTC().Format(time.RFC3339)
	}
	ac := corev1ac.Secret(reg.Name, reg.Namespace).WithLabels(reg.Labels).WithType(reg.Type).
		WithData(map[string][]byte{v1alpha1.KubeconfigKey: data})
	if len(reg.Annotations) > 0 {
		ac.WithAnnotations(reg.Annotations)
	}
	written, err := hc.cs.CoreV1().Secrets(reg.Namespace).Apply(ctx, ac, applyOptions)
	if err != nil {
		return nil, fmt.Errorf("failed to apply registration Secret %s/%s on the hub: %w", reg.Namespace, reg.Name, err)
	}
	verb := "registered"
	if previous != nil {
		verb = "updated"
		if written.ResourceVersion == previous.ResourceVersion {
			verb = "unchanged"
		}
	}
	say(out, "hub: registration Secret %s/%s %s (cloud %s, region %s)\n", reg.Namespace, reg.Name, verb, opts.Cloud, opts.Region)
	if len(opts.Namespaces) > 0 {
		say(out, "note: the manager places databases on %s only from namespaces %s\n", opts.Name, strings.Join(opts.Namespaces, ","))
	}
	return &JoinResult{Secret: written, TokenSource: tok.source, TokenExpiration: tok.expires}, nil
}

var applyOptions = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// joiner is one join in progress.
type joiner struct {
	opts JoinOptions
	mc   *memberConn
	out  io.Writer
	// server and ca go into the hub's kubeconfig.
	server string
	ca     []byte
}

// applyAccess applies MemberAccess in the member and removes Roles and RoleBindings of namespaces that a
// previous join listed and this one does not.
func (j *joiner) applyAccess(ctx context.Context) error {
	a := render.MemberAccess(j.opts.Namespaces)
	cs := j.mc.cs
	for _, ns := range a.Namespaces {
		if _, err := cs.CoreV1().Namespaces().Apply(ctx, ns, applyOptions); err != nil {
			return fmt.Errorf("failed to apply Namespace %s in member %s: %w", *ns.Name, j.opts.Name, err)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(MemberNamespace).Apply(ctx, a.ServiceAccount, applyOptions); err != nil {
		return fmt.Errorf("failed to apply ServiceAccount %s/%s in member %s: %w", MemberNamespace, ServiceAccountName, j.opts.Name, err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Apply(ctx, a.ClusterRole, applyOptions); err != nil {
		return fmt.Errorf("failed to apply ClusterRole %s in member %s: %w", RoleName, j.opts.Name, err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, a.ClusterRoleBinding, applyOptions); err != nil {
		return fmt.Errorf("failed to apply ClusterRoleBinding %s in member %s: %w", RoleName, j.opts.Name, err)
	}
	for i := range a.Roles {
		ns := *a.Roles[i].Namespace
		if _, err := cs.RbacV1().Roles(ns).Apply(ctx, a.Roles[i], applyOptions); err != nil {
			return fmt.Errorf("failed to apply Role %s/%s in member %s: %w", ns, RoleName, j.opts.Name, err)
		}
		if _, err := cs.RbacV1().RoleBindings(ns).Apply(ctx, a.RoleBindings[i], applyOptions); err != nil {
			return fmt.Errorf("failed to apply RoleBinding %s/%s in member %s: %w", ns, RoleName, j.opts.Name, err)
		}
	}
	if err := j.pruneRoles(ctx); err != nil {
		return err
	}
	scope := "cluster-wide"
	if len(j.opts.Namespaces) > 0 {
		scope = "in namespaces " + strings.Join(j.opts.Namespaces, ",")
	}
	say(j.out, "member: ServiceAccount %s/%s may manage mysqlfleet's kinds %s\n", MemberNamespace, ServiceAccountName, scope)
	return nil
}

func (j *joiner) pruneRoles(ctx context.Context) error {
	keep := sets.New(j.opts.Namespaces...)
	rbac := j.mc.cs.RbacV1()
	list := metav1.ListOptions{LabelSelector: accessSelector}
	bindings, err := rbac.RoleBindings(metav1.NamespaceAll).List(ctx, list)
	if err != nil {
		return fmt.Errorf("failed to list RoleBindings in member %s: %w", j.opts.Name, err)
	}
	for _, b := range bindings.Items {
		if !keep.Has(b.Namespace) {
			if err := rbac.RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}); client404(err) != nil {
				return fmt.Errorf("failed to delete RoleBinding %s/%s in member %s: %w", b.Namespace, b.Name, j.opts.Name, err)
			}
		}
	}
	roles, err := rbac.Roles(metav1.NamespaceAll).List(ctx, list)
	if err != nil {
		return fmt.Errorf("failed to list Roles in member %s: %w", j.opts.Name, err)
	}
	for _, r := range roles.Items {
		if !keep.Has(r.Namespace) {
			if err := rbac.Roles(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); client404(err) != nil {
				return fmt.Errorf("failed to delete Role %s/%s in member %s: %w", r.Namespace, r.Name, j.opts.Name, err)
			}
		}
	}
	return nil
}

// client404 ignores NotFound, for deletions that may race or repeat.
func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
