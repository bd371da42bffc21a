package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"

	. "github.com/onsi/gomega"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// rule is a policy rule in a comparable form.
type rule struct {
	group, resources, verbs, names string
}

func rules(in []rbacv1ac.PolicyRuleApplyConfiguration) []rule {
	var out []rule
	for _, r := range in {
		out = append(out, rule{strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","),
			strings.Join(r.Verbs, ","), strings.Join(r.ResourceNames, ",")})
	}
	return out
}

const all = "get,list,watch,create,update,patch,delete"

var namespacedGrant = []rule{
	{"", "secrets,configmaps,services,persistentvolumeclaims", all, ""},
	{"apps", "statefulsets", all, ""},
	{"policy", "poddisruptionbudgets", all, ""},
	{"batch", "cronjobs,jobs", all, ""},
	{"", "pods", "get,list", ""},
}

func TestMemberAccessClusterWide(t *testing.T) {
	g := NewWithT(t)
	a := render.MemberAccess(nil)
	g.Expect(rules(a.ClusterRole.Rules)).To(Equal(append([]rule{
		{"", "namespaces", "get,list,watch,create,patch", ""},
	}, namespacedGrant...)))
	g.Expect(a.Roles).To(BeEmpty())
	g.Expect(a.RoleBindings).To(BeEmpty())
	g.Expect(a.Namespaces).To(HaveLen(1))
	g.Expect(*a.Namespaces[0].Name).To(Equal(MemberNamespace))
	g.Expect(a.Namespaces[0].Labels).To(BeEmpty(), "join must own no field of a namespace someone else may label")
	g.Expect(*a.ServiceAccount.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(*a.ClusterRoleBinding.RoleRef.Kind).To(Equal("ClusterRole"))
	g.Expect(a.ClusterRoleBinding.Subjects).To(HaveLen(1))
	g.Expect(*a.ClusterRoleBinding.Subjects[0].Name).To(Equal(ServiceAccountName))
	g.Expect(*a.ClusterRoleBinding.Subjects[0].Namespace).To(Equal(MemberNamespace))
}

func TestMemberAccessConfined(t *testing.T) {
	g := NewWithT(t)
	a := render.MemberAccess([]string{"billing", "shop"})
	g.Expect(rules(a.ClusterRole.Rules)).To(Equal([]rule{
		{"", "namespaces", "get,list,watch", ""},
		{"", "namespaces", "patch", "billing,shop"},
	}), "the ClusterRole keeps only what Namespaces need; create is left to join")
	g.Expect(a.Roles).To(HaveLen(2))
	for i, ns := range []string{"billing", "shop"} {
		g.Expect(*a.Roles[i].Namespace).To(Equal(ns))
		g.Expect(rules(a.Roles[i].Rules)).To(Equal(namespacedGrant))
		g.Expect(*a.RoleBindings[i].Namespace).To(Equal(ns))
		g.Expect(*a.RoleBindings[i].RoleRef.Kind).To(Equal("Role"))
	}
	var names []string
	for _, n := range a.Namespaces {
		names = append(names, *n.Name)
	}
	g.Expect(names).To(Equal([]string{MemberNamespace, "billing", "shop"}))
}

// No rule may ever grant a wildcard or a verb that lets the holder raise its own privileges.
func TestMemberAccessGrantsNothingDangerous(t *testing.T) {
	g := NewWithT(t)
	for _, a := range []render.Access{render.MemberAccess(nil), render.MemberAccess([]string{"a"})} {
		all := append([]rbacv1ac.PolicyRuleApplyConfiguration(nil), a.ClusterRole.Rules...)
		for _, r := range a.Roles {
			all = append(all, r.Rules...)
		}
		for _, r := range all {
			g.Expect(r.Verbs).NotTo(ContainElements("*", "escalate", "bind", "impersonate", "deletecollection"))
			g.Expect(r.Resources).NotTo(ContainElement(ContainSubstring("*")))
			g.Expect(r.Resources).NotTo(ContainElement(ContainSubstring("/")), "no subresources (pods/exec, status, token)")
			g.Expect(r.APIGroups).To(HaveEach(BeElementOf("", "apps", "policy", "batch")))
			g.Expect(r.NonResourceURLs).To(BeEmpty())
		}
	}
}

func TestMemberKubeconfigPassesTheGate(t *testing.T) {
	g := NewWithT(t)
	ca := testCA(t)
	data, err := memberKubeconfig("aws-1", "https://10.0.0.1:6443", ca, "api.internal", "tok3n")
	g.Expect(err).NotTo(HaveOccurred())
	again, _ := memberKubeconfig("aws-1", "https://10.0.0.1:6443", ca, "api.internal", "tok3n")
	g.Expect(again).To(Equal(data), "the same inputs must write the same bytes, so that a second join changes nothing")

	_, err = kubeconfig.Validate(data, kubeconfig.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(data)
	g.Expect(err).NotTo(HaveOccurred())
	u := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	g.Expect(u.Exec).To(BeNil())
	g.Expect(u.TokenFile).To(BeEmpty())
	g.Expect(u.Token).To(Equal("tok3n"))
	c := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	g.Expect(c.CertificateAuthority).To(BeEmpty())
	g.Expect(c.CertificateAuthorityData).To(Equal(ca))
	g.Expect(c.TLSServerName).To(Equal("api.internal"))
	g.Expect(registeredToken(data)).To(Equal("tok3n"))

	bad, _ := memberKubeconfig("aws-1", "http://10.0.0.1:6443", ca, "", "t")
	_, err = kubeconfig.Validate(bad, kubeconfig.Options{})
	g.Expect(err).To(MatchError(ContainSubstring("https")))
	g.Expect(registeredToken(bad)).To(BeEmpty(), "a token is never taken from a refused kubeconfig")
}

func TestJoinOptions(t *testing.T) {
	valid := func() JoinOptions {
		return JoinOptions{Name: "aws-1", Cloud: "aws", Region: "eu-west-1", Member: MemberFlags{Context: "x"}}
	}
	for name, tc := range map[string]struct {
		edit func(*JoinOptions)
		err  string
	}{
		"valid":                 {edit: func(*JoinOptions) {}},
		"upper case name":       {edit: func(o *JoinOptions) { o.Name = "AWS" }, err: "member name"},
		"unknown cloud":         {edit: func(o *JoinOptions) { o.Cloud = "ibm" }, err: "use aws, azure or gcp"},
		"no region":             {edit: func(o *JoinOptions) { o.Region = "" }, err: "--region is required"},
		"reserved label":        {edit: func(o *JoinOptions) { o.Labels = map[string]string{"mysqlfleet.io/cloud": "gcp"} }, err: "set by join itself"},
		"bad label value":       {edit: func(o *JoinOptions) { o.Labels = map[string]string{"tier": "a b"} }, err: "--label tier value"},
		"bad storage class":     {edit: func(o *JoinOptions) { o.StorageClass = "Fast_SSD" }, err: "--storage-class"},
		"bad namespace":         {edit: func(o *JoinOptions) { o.Namespaces = []string{"Shop"} }, err: "--namespaces"},
		"http server":           {edit: func(o *JoinOptions) { o.Server = "http://10.0.0.1:6443" }, err: "https:// URL"},
		"short-lived token":     {edit: func(o *JoinOptions) { o.TokenExpiration = 5 * time.Minute }, err: "at least 10m"},
		"namespaces are tidied": {edit: func(o *JoinOptions) { o.Namespaces = []string{"shop", " billing", "shop", ""} }},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := valid()
			tc.edit(&o)
			err := o.complete()
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
	g := NewWithT(t)
	o := valid()
	o.Namespaces = []string{"shop", " billing", "shop", ""}
	g.Expect(o.complete()).To(Succeed())
	g.Expect(o.Namespaces).To(Equal([]string{"billing", "shop"}))
	g.Expect(o.registration("mysqlfleet-system").Annotations).To(HaveKeyWithValue(v1alpha1.NamespacesAnnotation, "billing,shop"))

	labels, err := ParseLabels([]string{"tier=gold", "empty="})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(labels).To(Equal(map[string]string{"tier": "gold", "empty": ""}))
	_, err = ParseLabels([]string{"tier"})
	g.Expect(err).To(MatchError(ContainSubstring("key=value")))
}

func testCA(t *testing.T) []byte {
	t.Helper()
	ca, _, err := certutil.GenerateSelfSignedCertKey("ca.test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
