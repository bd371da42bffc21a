package kubeconfig

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// Canary secrets: each test kubeconfig carries some of them, and no error may ever contain one.
const (
	canaryToken    = "canary-token-5f1c0e7a"
	canaryPassword = "canary-password-8b2d94c1"
	canaryKey      = "canary-key-data-3e6a7f20"
)

// expectNoSecrets checks an error message for the canaries as text, base64 and Go's %v of a byte slice.
func expectNoSecrets(g Gomega, err error) {
	g.Expect(err).To(HaveOccurred())
	msg := err.Error()
	for _, s := range []string{canaryToken, canaryPassword, canaryKey} {
		g.Expect(msg).NotTo(ContainSubstring(s))
		g.Expect(msg).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(s))))
		// Decimal bytes, as a decode error prints a []byte field.
		decimal := make([]string, len(s))
		for i := range len(s) {
			decimal[i] = strconv.Itoa(int(s[i]))
		}
		g.Expect(msg).NotTo(ContainSubstring(strings.Join(decimal, " ")))
	}
}

// baseConfig is a valid kubeconfig: one context "member" with cluster "member" and user "admin".
func baseConfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["member"] = &clientcmdapi.Cluster{Server: "https://member.example.com:6443"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: canaryToken}
	cfg.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "admin"}
	cfg.CurrentContext = "member"
	return cfg
}

// kubeconfig serialises baseConfig after mutate, the way a user's file would look.
func kubeconfig(t *testing.T, mutate func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg := baseConfig()
	if mutate != nil {
		mutate(cfg)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type keyPair struct{ cert, key []byte }

func newKeyPair(t *testing.T, host string) keyPair {
	t.Helper()
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{cert: cert, key: key}
}

func TestValidateAcceptsBase(t *testing.T) {
	g := NewWithT(t)
	cfg, err := Validate(kubeconfig(t, nil), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.CurrentContext).To(Equal("member"))
}

func TestValidateRefuses(t *testing.T) {
	pairA, pairB := newKeyPair(t, "a"), newKeyPair(t, "b")
	user := func(f func(*clientcmdapi.AuthInfo)) func(*clientcmdapi.Config) {
		return func(c *clientcmdapi.Config) { f(c.AuthInfos["admin"]) }
	}
	cluster := func(f func(*clientcmdapi.Cluster)) func(*clientcmdapi.Config) {
		return func(c *clientcmdapi.Config) { f(c.Clusters["member"]) }
	}
	server := func(s string) func(*clientcmdapi.Config) {
		return cluster(func(c *clientcmdapi.Cluster) { c.Server = s })
	}
	// unused adds a context "other" whose user and cluster are both set up by f; "member" stays current.
	unused := func(f func(*clientcmdapi.AuthInfo, *clientcmdapi.Cluster)) func(*clientcmdapi.Config) {
		return func(c *clientcmdapi.Config) {
			u := &clientcmdapi.AuthInfo{Token: canaryToken}
			cl := &clientcmdapi.Cluster{Server: "https://other.example.com"}
			f(u, cl)
			c.AuthInfos["other"], c.Clusters["other"] = u, cl
			c.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "other"}
		}
	}
	exec := &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}

	tests := []struct {
		name   string
		data   string                     // raw kubeconfig; when empty, the base config after mutate
		mutate func(*clientcmdapi.Config) // applied to baseConfig when data is empty
		opts   Options
		want   string
	}{
		{name: "empty", data: " ", want: "kubeconfig refused: kubeconfig is empty"},
		{name: "not YAML", data: "clusters: [", want: "kubeconfig: Invalid value: must be YAML or JSON"},
		{name: "data field not base64", data: "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster:\n    certificate-authority-data: '!!'\n",
			want: "must be YAML or JSON with fields of the right type"},
		{name: "wrong apiVersion", data: "apiVersion: v2\nkind: Config\n", want: "kubeconfig: Invalid value: cannot be decoded"},
		{
			// client-go's own message for this quotes every user, tokens and keys included.
			name: "duplicate user",
			data: `apiVersion: v1
kind: Config
current-context: m
users:
- name: admin
  user:
    token: ` + canaryToken + `
    password: ` + canaryPassword + `
- name: admin
  user:
    client-key-data: ` + base64.StdEncoding.EncodeToString([]byte(canaryKey)) + `
`,
			want: `kubeconfig refused: users: Duplicate value: "admin"`,
		},

		{name: "no current-context", mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "" }, want: "current-context: Required value"},
		{name: "current-context missing", mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "nope" }, want: `current-context: Not found: "nope"`},
		{name: "chosen context missing", opts: Options{Context: "nope"}, want: `contexts: Not found: "nope"`},
		{name: "context without cluster", mutate: func(c *clientcmdapi.Config) { c.Contexts["member"].Cluster = "" }, want: "contexts[member].context.cluster: Required value"},
		{name: "context cluster missing", mutate: func(c *clientcmdapi.Config) { c.Contexts["member"].Cluster = "gone" }, want: `contexts[member].context.cluster: Not found: "gone"`},
		{name: "context without user", mutate: func(c *clientcmdapi.Config) { c.Contexts["member"].AuthInfo = "" }, want: "contexts[member].context.user: Required value"},
		{name: "context user missing", mutate: func(c *clientcmdapi.Config) { c.Contexts["member"].AuthInfo = "gone" }, want: `contexts[member].context.user: Not found: "gone"`},
		{name: "context namespace invalid", mutate: func(c *clientcmdapi.Config) { c.Contexts["member"].Namespace = "Not_A_Label" }, want: `contexts[member].context.namespace: Invalid value: "Not_A_Label"`},

		{name: "exec", mutate: user(func(u *clientcmdapi.AuthInfo) { u.Exec = exec }), want: "users[admin].user.exec: Forbidden: credential plugins would run a command inside the manager"},
		{name: "exec in an unused context", mutate: unused(func(u *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) { u.Exec = exec }), want: "users[other].user.exec: Forbidden"},
		{name: "exec in a user no context uses", mutate: func(c *clientcmdapi.Config) { c.AuthInfos["spare"] = &clientcmdapi.AuthInfo{Exec: exec} }, want: "users[spare].user.exec: Forbidden"},
		{name: "auth-provider", mutate: user(func(u *clientcmdapi.AuthInfo) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": canaryToken}}
		}), want: "users[admin].user.auth-provider: Forbidden: auth provider plugins are not supported"},
		{name: "tokenFile", mutate: user(func(u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}),
			want: "users[admin].user.tokenFile: Forbidden: the manager would read this path from its own filesystem"},
		{name: "tokenFile next to token", mutate: user(func(u *clientcmdapi.AuthInfo) { u.TokenFile = "/etc/shadow" }), want: "users[admin].user.tokenFile: Forbidden"},
		{name: "client-certificate", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ClientCertificate = "/etc/pki/client.crt" }),
			want: "users[admin].user.client-certificate: Forbidden: the manager would read this path from its own filesystem; use client-certificate-data"},
		{name: "client-key", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ClientKey = "/etc/pki/client.key" }),
			want: "users[admin].user.client-key: Forbidden: the manager would read this path from its own filesystem; use client-key-data"},
		{name: "username", mutate: user(func(u *clientcmdapi.AuthInfo) { u.Token, u.Username = "", "admin" }), want: "users[admin].user.username: Forbidden: basic authentication was removed"},
		{name: "password", mutate: user(func(u *clientcmdapi.AuthInfo) { u.Token, u.Password = "", canaryPassword }), want: "users[admin].user.password: Forbidden: basic authentication was removed"},
		{name: "as", mutate: user(func(u *clientcmdapi.AuthInfo) { u.Impersonate = "system:admin" }), want: "users[admin].user.as: Forbidden: impersonation is not allowed"},
		{name: "as-uid", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ImpersonateUID = "0" }), want: "users[admin].user.as-uid: Forbidden: impersonation is not allowed"},
		{name: "as-groups", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ImpersonateGroups = []string{"system:masters"} }), want: "users[admin].user.as-groups: Forbidden: impersonation is not allowed"},
		{name: "as-user-extra", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ImpersonateUserExtra = map[string][]string{"scopes": {"all"}} }),
			want: "users[admin].user.as-user-extra: Forbidden: impersonation is not allowed"},
		{name: "certificate without key", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ClientCertificateData = pairA.cert }),
			want: "users[admin].user.client-key-data: Required value: client-certificate-data needs its private key"},
		{name: "key without certificate", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ClientKeyData = []byte(canaryKey) }),
			want: "users[admin].user.client-certificate-data: Required value: client-key-data needs its certificate"},
		{name: "key not matching certificate", mutate: user(func(u *clientcmdapi.AuthInfo) { u.ClientCertificateData, u.ClientKeyData = pairA.cert, pairB.key }),
			want: "users[admin].user.client-certificate-data: Invalid value: must be a PEM certificate whose private key is client-key-data"},
		{name: "key not PEM", mutate: user(func(u *clientcmdapi.AuthInfo) {
			u.ClientCertificateData, u.ClientKeyData = pairA.cert, []byte(canaryKey)
		}),
			want: "users[admin].user.client-certificate-data: Invalid value"},

		{name: "certificate-authority", mutate: cluster(func(c *clientcmdapi.Cluster) { c.CertificateAuthority = "/etc/pki/ca.crt" }),
			want: "clusters[member].cluster.certificate-authority: Forbidden: the manager would read this path from its own filesystem; use certificate-authority-data"},
		{name: "certificate-authority-data not PEM", mutate: cluster(func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData = []byte("not a certificate") }),
			want: "clusters[member].cluster.certificate-authority-data: Invalid value: must hold PEM-encoded certificates"},
		{name: "insecure-skip-tls-verify", mutate: cluster(func(c *clientcmdapi.Cluster) { c.InsecureSkipTLSVerify = true }),
			want: "clusters[member].cluster.insecure-skip-tls-verify: Forbidden: this manager does not allow skipping TLS verification"},
		{name: "insecure-skip-tls-verify with a CA", opts: Options{AllowInsecureTLS: true},
			mutate: cluster(func(c *clientcmdapi.Cluster) { c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, pairA.cert }),
			want:   "clusters[member].cluster.insecure-skip-tls-verify: Forbidden: cannot be combined with certificate-authority-data"},
		{name: "proxy-url", mutate: cluster(func(c *clientcmdapi.Cluster) { c.ProxyURL = "socks5://10.0.0.1:1080" }), want: "clusters[member].cluster.proxy-url: Forbidden"},
		{name: "proxy-url in an unused context", mutate: unused(func(_ *clientcmdapi.AuthInfo, c *clientcmdapi.Cluster) { c.ProxyURL = "http://10.0.0.1:3128" }),
			want: "clusters[other].cluster.proxy-url: Forbidden"},

		{name: "server missing", mutate: server(""), want: "clusters[member].cluster.server: Required value"},
		{name: "server http", mutate: server("http://member.example.com"), want: "clusters[member].cluster.server: Invalid value: must use https"},
		{name: "server http even when insecure TLS is allowed", mutate: server("http://member.example.com"), opts: Options{AllowInsecureTLS: true}, want: "must use https"},
		{name: "server without scheme", mutate: server("member.example.com:6443"), want: "clusters[member].cluster.server: Invalid value: must use https"},
		{name: "server without host", mutate: server("https:///api"), want: "clusters[member].cluster.server: Invalid value: must name a host"},
		{name: "server with only a port", mutate: server("https://:6443"), want: "must name a host"},
		{name: "server not a URL", mutate: server("https://[::1"), want: "clusters[member].cluster.server: Invalid value: must be a URL"},
		{name: "server with credentials", mutate: server("https://admin:" + canaryPassword + "@member.example.com"),
			want: "clusters[member].cluster.server: Invalid value: must not contain a user name or password"},
		{name: "server with a query", mutate: server("https://member.example.com/?token=" + canaryToken),
			want: "clusters[member].cluster.server: Invalid value: must not have a query or fragment"},
		{name: "server in an unused cluster", mutate: unused(func(_ *clientcmdapi.AuthInfo, c *clientcmdapi.Cluster) { c.Server = "http://other.example.com" }),
			want: "clusters[other].cluster.server: Invalid value: must use https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := []byte(tt.data)
			if tt.data == "" {
				data = kubeconfig(t, tt.mutate)
			}

			_, err := Validate(data, tt.opts)
			g.Expect(err).To(MatchError(ErrRefused))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			expectNoSecrets(g, err)

			// RESTConfig is the same gate with the same message.
			_, restErr := RESTConfig("m1", data, tt.opts)
			g.Expect(restErr).To(MatchError(ErrRefused))
			g.Expect(restErr).To(MatchError(err.Error()))
		})
	}
}

func TestValidateReportsEveryProblemInStableOrder(t *testing.T) {
	g := NewWithT(t)
	data := kubeconfig(t, func(c *clientcmdapi.Config) {
		c.AuthInfos["admin"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/true"}
		c.AuthInfos["admin"].TokenFile = "/token"
		c.Clusters["member"].ProxyURL = "http://proxy"
	})
	_, err := Validate(data, Options{})
	g.Expect(errors.Is(err, ErrRefused)).To(BeTrue())
	g.Expect(err.Error()).To(Equal("kubeconfig refused: [" +
		"users[admin].user.exec: Forbidden: credential plugins would run a command inside the manager; use token, or client-certificate-data with client-key-data, " +
		"users[admin].user.tokenFile: Forbidden: the manager would read this path from its own filesystem; put the token itself in token, " +
		"clusters[member].cluster.proxy-url: Forbidden: a kubeconfig cannot choose where the manager's traffic goes; the manager's own HTTPS_PROXY and NO_PROXY apply]"))
}

// TestExecPluginNeverRuns uses an exec plugin that leaves a marker file when it runs. The control at the end
// shows that unguarded client-go runs it, so the marker's absence before that means something.
func TestExecPluginNeverRuns(t *testing.T) {
	if _, err := exec.LookPath("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh")
	}
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	ca, err := certutil.EncodeCertificates(srv.Certificate())
	g.Expect(err).NotTo(HaveOccurred())

	for _, current := range []bool{false, true} {
		marker := filepath.Join(t.TempDir(), "marker")
		data := kubeconfig(t, func(c *clientcmdapi.Config) {
			c.Clusters["member"].Server = srv.URL
			c.Clusters["member"].CertificateAuthorityData = ca
			c.AuthInfos["plugin"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
				Command:         "/bin/sh",
				Args:            []string{"-c", "touch " + marker},
				APIVersion:      "client.authentication.k8s.io/v1",
				InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
			}}
			if current {
				c.Contexts["member"].AuthInfo = "plugin"
			}
		})

		_, err := Validate(data, Options{})
		g.Expect(err).To(MatchError(ContainSubstring("users[plugin].user.exec: Forbidden")))
		cfg, err := RESTConfig("m1", data, Options{})
		g.Expect(err).To(MatchError(ErrRefused))
		g.Expect(cfg).To(BeNil())
		g.Expect(marker).NotTo(BeAnExistingFile())

		if current {
			// Control: without the gate, the first request runs the plugin.
			unguarded, err := clientcmd.RESTConfigFromKubeConfig(data)
			g.Expect(err).NotTo(HaveOccurred())
			dc, err := discovery.NewDiscoveryClientForConfig(unguarded)
			g.Expect(err).NotTo(HaveOccurred())
			_, _ = dc.ServerVersion() // fails: the plugin prints no credential
			g.Expect(marker).To(BeAnExistingFile())
		}
	}
}

// TestTokenFileIsNeverRead points tokenFile at a file holding a canary token. The control shows that
// unguarded client-go reads it while parsing.
func TestTokenFileIsNeverRead(t *testing.T) {
	g := NewWithT(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	g.Expect(os.WriteFile(tokenFile, []byte(canaryToken), 0o600)).To(Succeed())
	data := kubeconfig(t, func(c *clientcmdapi.Config) {
		c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	})

	_, err := Validate(data, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("users[admin].user.tokenFile: Forbidden")))
	expectNoSecrets(g, err)
	_, err = RESTConfig("m1", data, Options{})
	g.Expect(err).To(MatchError(ErrRefused))
	expectNoSecrets(g, err)

	unguarded, err := clientcmd.RESTConfigFromKubeConfig(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unguarded.BearerToken).To(Equal(canaryToken))
}

func TestRESTConfig(t *testing.T) {
	g := NewWithT(t)
	pair := newKeyPair(t, "admin")
	data := kubeconfig(t, func(c *clientcmdapi.Config) {
		c.Clusters["member"].CertificateAuthorityData = pair.cert
		c.Clusters["member"].TLSServerName = "api.member.internal"
		c.Clusters["member"].DisableCompression = true
		c.AuthInfos["admin"].ClientCertificateData = pair.cert
		c.AuthInfos["admin"].ClientKeyData = pair.key
	})

	cfg, err := RESTConfig("eu-1", data, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal("https://member.example.com:6443"))
	g.Expect(cfg.BearerToken).To(Equal(canaryToken))
	g.Expect(cfg.CAData).To(Equal(pair.cert))
	g.Expect(cfg.CertData).To(Equal(pair.cert))
	g.Expect(cfg.KeyData).To(Equal(pair.key))
	g.Expect(cfg.ServerName).To(Equal("api.member.internal"))
	g.Expect(cfg.DisableCompression).To(BeTrue())
	g.Expect(cfg.UserAgent).To(Equal("mysqlfleet/eu-1"))
	g.Expect(cfg.QPS).To(BeEquivalentTo(DefaultQPS))
	g.Expect(cfg.Burst).To(Equal(DefaultBurst))
	g.Expect(cfg.Timeout).To(BeZero())
	g.Expect(cfg.Dial).NotTo(BeNil())
	g.Expect(cfg.ExecProvider).To(BeNil())
	g.Expect(cfg.AuthProvider).To(BeNil())
	g.Expect(cfg.Proxy).To(BeNil(), "the manager's proxy environment applies")
	g.Expect(cfg.Insecure).To(BeFalse())
	g.Expect([]string{cfg.BearerTokenFile, cfg.CAFile, cfg.CertFile, cfg.KeyFile, cfg.Username, cfg.Password}).To(HaveEach(BeEmpty()))
	g.Expect(cfg.Impersonate).To(BeZero())

	// Options override the defaults, and Context picks another context.
	other := kubeconfig(t, func(c *clientcmdapi.Config) {
		c.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example.com"}
		c.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "admin"}
	})
	cfg, err = RESTConfig("eu-2", other, Options{Context: "other", QPS: 7, Burst: 9, Timeout: time.Minute})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal("https://other.example.com"))
	g.Expect(cfg.QPS).To(BeEquivalentTo(7))
	g.Expect(cfg.Burst).To(Equal(9))
	g.Expect(cfg.Timeout).To(Equal(time.Minute))

	_, err = RESTConfig("", data, Options{})
	g.Expect(err).To(MatchError("member name must not be empty"))
	g.Expect(errors.Is(err, ErrRefused)).To(BeFalse())
}

// TestRESTConfigMapsLikeClientcmd checks the hand-built rest.Config against the one clientcmd builds from the
// same, already validated, kubeconfig.
func TestRESTConfigMapsLikeClientcmd(t *testing.T) {
	pair := newKeyPair(t, "admin")
	for name, mutate := range map[string]func(*clientcmdapi.Config){
		"token": nil,
		"client certificate": func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: pair.cert, ClientKeyData: pair.key}
		},
		"everything": func(c *clientcmdapi.Config) {
			c.Clusters["member"] = &clientcmdapi.Cluster{Server: "https://lb.example.com/k8s/clusters/c-1", TLSServerName: "api", CertificateAuthorityData: pair.cert, DisableCompression: true}
			c.AuthInfos["admin"].ClientCertificateData, c.AuthInfos["admin"].ClientKeyData = pair.cert, pair.key
			c.Contexts["member"].Namespace = "mysql"
		},
		"insecure": func(c *clientcmdapi.Config) { c.Clusters["member"].InsecureSkipTLSVerify = true },
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			data := kubeconfig(t, mutate)
			opts := Options{AllowInsecureTLS: true}
			ours, err := RESTConfig("m1", data, opts)
			g.Expect(err).NotTo(HaveOccurred())
			theirs, err := clientcmd.RESTConfigFromKubeConfig(data)
			g.Expect(err).NotTo(HaveOccurred())

			ours = rest.CopyConfig(ours)
			g.Expect(ours.RateLimiter).NotTo(BeNil(), "one token bucket per member")
			g.Expect(ours.RateLimiter.QPS()).To(BeNumerically("==", DefaultQPS))
			ours.UserAgent, ours.QPS, ours.Burst, ours.Timeout, ours.Dial, ours.RateLimiter = "", 0, 0, 0, nil, nil
			g.Expect(ours).To(Equal(theirs))
		})
	}
}

// TestRESTConfigTalksToServer proves the config is usable end to end against a TLS server that checks the
// credentials and the User-Agent.
func TestRESTConfigTalksToServer(t *testing.T) {
	clientPair := newKeyPair(t, "member-admin")
	tests := []struct {
		name   string
		verify bool // write the server's CA into the kubeconfig
		opts   Options
		user   clientcmdapi.AuthInfo
		check  func(*http.Request) bool
	}{
		{
			name: "token", verify: true, user: clientcmdapi.AuthInfo{Token: canaryToken},
			check: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+canaryToken },
		},
		{
			name: "client certificate", verify: true, user: clientcmdapi.AuthInfo{ClientCertificateData: clientPair.cert, ClientKeyData: clientPair.key},
			check: func(r *http.Request) bool {
				return len(r.TLS.PeerCertificates) > 0 && strings.HasPrefix(r.TLS.PeerCertificates[0].Subject.CommonName, "member-admin@")
			},
		},
		{
			name: "insecure TLS when allowed", opts: Options{AllowInsecureTLS: true}, user: clientcmdapi.AuthInfo{Token: canaryToken},
			check: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+canaryToken },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/version" || !tt.check(r) || r.UserAgent() != "mysqlfleet/eu-1" {
					http.Error(w, "unauthorized", http.StatusUnauthorized)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
			}))
			srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
			srv.StartTLS()
			t.Cleanup(srv.Close)

			data := kubeconfig(t, func(c *clientcmdapi.Config) {
				c.Clusters["member"].Server = srv.URL
				if tt.verify {
					ca, err := certutil.EncodeCertificates(srv.Certificate())
					g.Expect(err).NotTo(HaveOccurred())
					c.Clusters["member"].CertificateAuthorityData = ca
				} else {
					c.Clusters["member"].InsecureSkipTLSVerify = true
				}
				*c.AuthInfos["admin"] = tt.user
			})

			cfg, err := RESTConfig("eu-1", data, tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			dc, err := discovery.NewDiscoveryClientForConfig(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			v, err := dc.ServerVersion()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.GitVersion).To(Equal("v1.36.3"))
		})
	}
}

// TestEveryKubeconfigFieldIsClassified fails when a client-go upgrade adds a kubeconfig field, so that someone
// decides whether it can reach outside the kubeconfig (then validateUser or validateCluster must refuse it)
// before it is accepted. RESTConfig copies only allowed fields, so an unclassified field is ignored, not used.
func TestEveryKubeconfigFieldIsClassified(t *testing.T) {
	classified := map[reflect.Type][]string{
		reflect.TypeFor[clientcmdapi.AuthInfo](): {
			"LocationOfOrigin", "Extensions", // ignored
			"Token", "ClientCertificateData", "ClientKeyData", // copied into the rest.Config
			"TokenFile", "ClientCertificate", "ClientKey", "AuthProvider", "Exec", "Username", "Password",
			"Impersonate", "ImpersonateUID", "ImpersonateGroups", "ImpersonateUserExtra", // refused
		},
		reflect.TypeFor[clientcmdapi.Cluster](): {
			"LocationOfOrigin", "Extensions", // ignored
			"Server", "TLSServerName", "CertificateAuthorityData", "DisableCompression", // copied
			"InsecureSkipTLSVerify",            // refused unless AllowInsecureTLS
			"CertificateAuthority", "ProxyURL", // refused
		},
		reflect.TypeFor[clientcmdapi.Context](): {"LocationOfOrigin", "Extensions", "Cluster", "AuthInfo", "Namespace"},
		reflect.TypeFor[clientcmdapi.Config]():  {"Kind", "APIVersion", "Preferences", "Extensions", "Clusters", "AuthInfos", "Contexts", "CurrentContext"},
	}
	for typ, names := range classified {
		g := NewWithT(t)
		var fields []string
		for _, f := range reflect.VisibleFields(typ) {
			fields = append(fields, f.Name)
		}
		g.Expect(fields).To(ConsistOf(names), "fields of %s", typ)
	}
}
