package kubeconfig

import (
	"crypto/tls"
	"maps"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"
)

// Paths are spelled as in the kubeconfig file (users[admin].user.tokenFile), so that the author can find them.
// Errors use Required, NotFound, Forbidden, Duplicate, or Invalid with the value omitted: none of these print
// a value that could be secret. Only names of contexts, clusters and users, and namespaces, are quoted.

// Details shared by several refusals.
const (
	useInlineCredentials = "use token, or client-certificate-data with client-key-data"
	readsManagerFile     = "the manager would read this path from its own filesystem; "
	// Basic authentication was removed from the Kubernetes API server in v1.19, and a password sent to
	// a server that does not use it is only a leaked password.
	basicAuthRemoved = "basic authentication was removed from Kubernetes in v1.19; " + useInlineCredentials
	// Impersonation is refused so that the member's RBAC and audit log see the identity the credentials
	// belong to, and the author cannot borrow the manager's connection to act as someone else.
	noImpersonation = "impersonation is not allowed: the credentials must carry the identity the manager acts as"
)

// validate checks the selected context and every user and cluster in the file.
func validate(cfg *clientcmdapi.Config, opts Options) field.ErrorList {
	errs := validateContext(cfg, opts)
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		errs = append(errs, validateUser(field.NewPath("users").Key(name).Child("user"), cfg.AuthInfos[name])...)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		errs = append(errs, validateCluster(field.NewPath("clusters").Key(name).Child("cluster"), cfg.Clusters[name], opts)...)
	}
	return errs
}

// validateContext checks that the context the manager will use exists and names an existing cluster and user.
func validateContext(cfg *clientcmdapi.Config, opts Options) field.ErrorList {
	name := contextName(cfg, opts)
	switch {
	case opts.Context != "" && cfg.Contexts[name] == nil:
		return field.ErrorList{field.NotFound(field.NewPath("contexts"), name)}
	case name == "":
		return field.ErrorList{field.Required(field.NewPath("current-context"), "names the context the manager uses")}
	case cfg.Contexts[name] == nil:
		return field.ErrorList{field.NotFound(field.NewPath("current-context"), name)}
	}

	var errs field.ErrorList
	kctx := cfg.Contexts[name]
	path := field.NewPath("contexts").Key(name).Child("context")
	switch {
	case kctx.Cluster == "":
		errs = append(errs, field.Required(path.Child("cluster"), ""))
	case cfg.Clusters[kctx.Cluster] == nil:
		errs = append(errs, field.NotFound(path.Child("cluster"), kctx.Cluster))
	}
	switch {
	case kctx.AuthInfo == "":
		errs = append(errs, field.Required(path.Child("user"), ""))
	case cfg.AuthInfos[kctx.AuthInfo] == nil:
		errs = append(errs, field.NotFound(path.Child("user"), kctx.AuthInfo))
	}
	// client-go refuses such a context too; checking it here keeps Validate and RESTConfig in agreement.
	if kctx.Namespace != "" {
		if msgs := validation.IsDNS1123Label(kctx.Namespace); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("namespace"), kctx.Namespace, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// validateUser refuses every way a user entry could run a command, read a file or borrow another identity.
// Allowed are token, client-certificate-data with client-key-data, and extensions (which client-go ignores).
func validateUser(path *field.Path, u *clientcmdapi.AuthInfo) field.ErrorList {
	if u == nil {
		return nil
	}
	var errs field.ErrorList
	forbid := func(set bool, name, detail string) {
		if set {
			errs = append(errs, field.Forbidden(path.Child(name), detail))
		}
	}
	forbid(u.Exec != nil, "exec", "credential plugins would run a command inside the manager; "+useInlineCredentials)
	forbid(u.AuthProvider != nil, "auth-provider", "auth provider plugins are not supported; "+useInlineCredentials)
	forbid(u.TokenFile != "", "tokenFile", readsManagerFile+"put the token itself in token")
	forbid(u.ClientCertificate != "", "client-certificate", readsManagerFile+"use client-certificate-data")
	forbid(u.ClientKey != "", "client-key", readsManagerFile+"use client-key-data")
	forbid(u.Username != "", "username", basicAuthRemoved)
	forbid(u.Password != "", "password", basicAuthRemoved)
	forbid(u.Impersonate != "", "as", noImpersonation)
	forbid(u.ImpersonateUID != "", "as-uid", noImpersonation)
	forbid(len(u.ImpersonateGroups) > 0, "as-groups", noImpersonation)
	forbid(len(u.ImpersonateUserExtra) > 0, "as-user-extra", noImpersonation)

	// Checked here so that a broken pair is reported with its field, not as a TLS error at the first request.
	hasCert, hasKey := len(u.ClientCertificateData) > 0, len(u.ClientKeyData) > 0
	switch {
	case hasCert && !hasKey && u.ClientKey == "":
		errs = append(errs, field.Required(path.Child("client-key-data"), "client-certificate-data needs its private key"))
	case hasKey && !hasCert && u.ClientCertificate == "":
		errs = append(errs, field.Required(path.Child("client-certificate-data"), "client-key-data needs its certificate"))
	case hasCert && hasKey:
		// The error of X509KeyPair is not passed on; it is safe today, but it is about key material.
		if _, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData); err != nil {
			errs = append(errs, field.Invalid(path.Child("client-certificate-data"), field.OmitValueType{},
				"must be a PEM certificate whose private key is client-key-data"))
		}
	}
	return errs
}

// validateCluster refuses file paths, proxies, unverified TLS (unless the manager allows it) and any server URL
// but https://host[:port][/path].
func validateCluster(path *field.Path, c *clientcmdapi.Cluster, opts Options) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validateServer(path.Child("server"), c.Server)...)
	if c.CertificateAuthority != "" {
		errs = append(errs, field.Forbidden(path.Child("certificate-authority"), readsManagerFile+"use certificate-authority-data"))
	}
	if c.ProxyURL != "" {
		errs = append(errs, field.Forbidden(path.Child("proxy-url"),
			"a kubeconfig cannot choose where the manager's traffic goes; the manager's own HTTPS_PROXY and NO_PROXY apply"))
	}
	if c.InsecureSkipTLSVerify {
		switch {
		case !opts.AllowInsecureTLS:
			errs = append(errs, field.Forbidden(path.Child("insecure-skip-tls-verify"),
				"this manager does not allow skipping TLS verification; set certificate-authority-data"))
		case len(c.CertificateAuthorityData) > 0:
			// client-go refuses the combination when it builds the transport; say so now.
			errs = append(errs, field.Forbidden(path.Child("insecure-skip-tls-verify"), "cannot be combined with certificate-authority-data"))
		}
	}
	if len(c.CertificateAuthorityData) > 0 {
		if _, err := certutil.NewPoolFromBytes(c.CertificateAuthorityData); err != nil {
			errs = append(errs, field.Invalid(path.Child("certificate-authority-data"), field.OmitValueType{}, "must hold PEM-encoded certificates"))
		}
	}
	return errs
}

// validateServer accepts https://host[:port][/path]. The URL is never quoted: it may hold credentials.
func validateServer(path *field.Path, server string) field.ErrorList {
	if server == "" {
		return field.ErrorList{field.Required(path, "the member's API server, https://host[:port]")}
	}
	invalid := func(detail string) field.ErrorList {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, detail)}
	}
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return invalid("must be a URL of the form https://host[:port]")
	case u.User != nil:
		return invalid("must not contain a user name or password")
	case u.Scheme != "https":
		// Also with AllowInsecureTLS: over http the token itself crosses the network in plaintext.
		return invalid("must use https; over http the credentials would cross the network in plaintext")
	case u.Hostname() == "":
		return invalid("must name a host")
	case u.RawQuery != "" || u.Fragment != "":
		return invalid("must not have a query or fragment")
	}
	return nil
}

// describeDecodeFailure says why clientcmd.Load failed without quoting the data. It decodes again into the
// file's own (v1) shape, which keeps lists as lists, to find what it can name.
func describeDecodeFailure(data []byte) error {
	var raw clientcmdv1.Config
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return field.Invalid(field.NewPath("kubeconfig"), field.OmitValueType{},
			"must be YAML or JSON with fields of the right type (*-data fields are base64)")
	}
	var errs field.ErrorList
	errs = append(errs, duplicates(field.NewPath("clusters"), raw.Clusters, func(c clientcmdv1.NamedCluster) string { return c.Name })...)
	errs = append(errs, duplicates(field.NewPath("users"), raw.AuthInfos, func(u clientcmdv1.NamedAuthInfo) string { return u.Name })...)
	errs = append(errs, duplicates(field.NewPath("contexts"), raw.Contexts, func(c clientcmdv1.NamedContext) string { return c.Name })...)
	errs = append(errs, duplicates(field.NewPath("extensions"), raw.Extensions, func(e clientcmdv1.NamedExtension) string { return e.Name })...)
	if len(errs) > 0 {
		return errs.ToAggregate()
	}
	return field.Invalid(field.NewPath("kubeconfig"), field.OmitValueType{}, "cannot be decoded; it must be apiVersion v1, kind Config")
}

func duplicates[T any](path *field.Path, items []T, name func(T) string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, item := range items {
		n := name(item)
		if seen[n] {
			errs = append(errs, field.Duplicate(path, n))
		}
		seen[n] = true
	}
	return errs
}
