package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The commands' behaviour is tested in depth against real API servers in internal/cli; these check the wiring.

func run(argv0 string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := newRootCommand(argv0, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestUsageNamesHowTheUserCalledUs(t *testing.T) {
	g := NewWithT(t)
	g.Expect(displayName("mysqlfleet")).To(Equal("mysqlfleet"))
	g.Expect(displayName("kubectl-mysqlfleet")).To(Equal("kubectl mysqlfleet"))

	out, err := run("kubectl-mysqlfleet", "join", "--help")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("kubectl mysqlfleet join NAME --member-context CONTEXT"))
	g.Expect(out).To(ContainSubstring("  kubectl mysqlfleet join aws-eu-west-1"))

	out, err = run("mysqlfleet", "get", "--help")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("mysqlfleet get [NAME] [flags]"))
	g.Expect(out).NotTo(ContainSubstring("kubectl"))
}

func TestFlags(t *testing.T) {
	g := NewWithT(t)
	root := newRootCommand("mysqlfleet", genericiooptions.IOStreams{})
	g.Expect(root.PersistentFlags().Lookup("fleet-namespace").DefValue).To(Equal("mysqlfleet-system"))
	g.Expect(root.PersistentFlags().ShorthandLookup("n").Name).To(Equal("namespace"))
	g.Expect(root.PersistentFlags().Lookup("kubeconfig")).NotTo(BeNil())
	g.Expect(root.PersistentFlags().Lookup("context")).NotTo(BeNil())
	g.Expect(root.PersistentFlags().Lookup("server")).To(BeNil(), "--server is join's: the member's address")

	_, err := run("mysqlfleet", "join", "aws-1", "--member-context", "aws")
	g.Expect(err).To(MatchError(ContainSubstring(`required flag(s) "cloud", "region" not set`)))
	_, err = run("mysqlfleet", "get", "-o", "xml")
	g.Expect(err).To(MatchError(ContainSubstring("unknown output format")))
	_, err = run("mysqlfleet", "join", "aws-1", "--cloud", "aws", "--region", "x", "--label", "novalue")
	g.Expect(err).To(MatchError(ContainSubstring("want key=value")))
	_, err = run("mysqlfleet", "plan")
	g.Expect(err).To(HaveOccurred())
	_, err = run("mysqlfleet", "rebuild", "orders", "--member", "aws-1")
	g.Expect(err).To(MatchError(ContainSubstring(`required flag(s) "pod" not set`)))
}

// The wired commands against a real hub and member: the flags reach internal/cli as a user types them.
func TestCommandsAgainstAFleet(t *testing.T) {
	g := NewWithT(t)
	f := testfleet.ForTest(t, testfleet.Options{
		Members:              []clusters.Definition{{Name: "azure-test", Role: clusters.RoleMember, Cloud: "azure", Region: "westeurope"}},
		HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	})
	_, err := f.Hub.Clientset().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	hub := []string{"--kubeconfig", f.Hub.KubeconfigPath, "--fleet-namespace", "fleet"}
	member := f.Member("azure-test").KubeconfigPath

	out, err := run("kubectl-mysqlfleet", append(hub, "join", "azure-test", "--member-kubeconfig", member,
		"--member-context", "envtest", "--cloud", "azure", "--region", "westeurope", "--label", "tier=gold", "--token-wait", "1s")...)
	t.Log(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("hub: registration Secret fleet/azure-test registered"))
	s, err := f.Hub.Clientset().CoreV1().Secrets("fleet").Get(context.Background(), "azure-test", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Labels).To(HaveKeyWithValue("tier", "gold"))

	out, err = run("mysqlfleet", append(hub, "members")...)
	t.Log(out)
	g.Expect(err).NotTo(HaveOccurred())
	// No manager runs here: nobody holds the member, so OWNER is empty.
	g.Expect(out).To(MatchRegexp(`(?m)^azure-test\s+azure\s+westeurope\s+yes\s+v1\.36\.3\s+0\s+-$`))

	out, err = run("mysqlfleet", append(hub, "get", "-n", "shop")...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("No MySQLClusters found in namespace shop"))

	out, err = run("mysqlfleet", append(hub, "unjoin", "azure-test", "--member-kubeconfig", member)...)
	t.Log(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("deleted registration Secret fleet/azure-test"))
}
