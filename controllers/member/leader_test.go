package member

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// Two replicas of the member controller's binary (cmd/member), with leader election, as `mysqlfleet join`
// runs them, against a real API server and real servers. There is no test seam at all: each server listens on
// port 3306 of an address of its own (mysqltest.OnPodIP), which is its Pod's IP, and the controller reaches it
// there as it reaches Pods in a member.

// buildMember builds cmd/member into the test's temporary directory.
func buildMember(t *testing.T) string {
	t.Helper()
	root, err := testfleet.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mysqlfleet-member")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/member")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/member: %v\n%s", err, out)
	}
	return bin
}

// writeKubeconfig writes cfg (an envtest admin's, impersonating the controller's ServiceAccount) as a kubeconfig.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["member"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["controller"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData,
		ClientKeyData: cfg.KeyData, Token: cfg.BearerToken, Impersonate: cfg.Impersonate.UserName,
		ImpersonateGroups: cfg.Impersonate.Groups}
	kc.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "controller"}
	kc.CurrentContext = "member"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// memberProcess is one replica of the member controller, its output in a file.
type memberProcess struct {
	name, logPath string
	cmd           *exec.Cmd
	done          chan struct{}
}

// startMemberProcess runs the binary with cmd/member's flags, timings shortened as the other tests' are.
func startMemberProcess(t *testing.T, bin, kubeconfig, name string) *memberProcess {
	t.Helper()
	p := &memberProcess{name: name, logPath: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "--kubeconfig="+kubeconfig, "--namespace="+controllerNS, "--leader-elect",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--poll-interval=300ms", "--busy-interval=200ms", "--status-timeout=2s", "--max-lag=5s",
		"--replica-connect-retry=1s")
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting member controller %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("member controller %s:\n%s", p.name, p.log())
		}
	})
	return p
}

func (p *memberProcess) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// acquired tells whether the replica has won the Lease (client-go's leader election logs it).
func (p *memberProcess) acquired() bool {
	return strings.Contains(strings.ToLower(p.log()), "successfully acquired lease")
}

// kill9 kills the replica outright: it neither releases its Lease nor finishes what it was doing.
func (p *memberProcess) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// The leading member controller is killed (kill -9) in the middle of a failover: after it recorded the new
// primary and while it waits, promoting it, for it to apply what it received. The standby takes the Lease,
// finishes the failover, and reports it; every acknowledged write is on the new primary and the writes resume.
func TestStandbyFinishesAFailoverWhenTheLeaderIsKilled(t *testing.T) {
	g := NewWithT(t)
	bin := buildMember(t)
	e, sa := startAPI(t)
	kubeconfig := writeKubeconfig(t, sa)
	s := e.startSet("lead", 3, mysqltest.OnPodIP())
	leader := startMemberProcess(t, bin, kubeconfig, "leader")
	g.Eventually(leader.acquired, convergeWithin, 100*time.Millisecond).Should(BeTrue())
	standby := startMemberProcess(t, bin, kubeconfig, "standby")
	s.waitFormed(g, 0, 1, 2)
	w := s.startWriter(1)
	waitAcks(g, w, 50)

	s.failOverToDelayedReplica(g, w, 30)
	g.Eventually(func() string {
		cm, _ := e.report("lead")
		if cm == nil {
			return ""
		}
		return cm.Data[v1alpha1.ReplicationRecordKey]
	}, convergeWithin, 50*time.Millisecond).Should(HavePrefix(`{"primary":1,`))
	admin, err := mysql.Open(mysql.MariaDBFlavor{}, s.server(1).RootDSN())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = admin.Close() }()
	st, err := admin.Status(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.ReadOnly).To(BeTrue(), "the failover finished before the leader could be killed in its middle")
	g.Expect(s.lastTransition()).To(Equal("Bootstrap  -> lead-0"), "the leader reported the failover already")
	leader.kill9(t)
	t.Logf("killed the leader with lead-1 recorded and still read-only")

	g.Eventually(standby.acquired, convergeWithin, 100*time.Millisecond).Should(BeTrue())
	g.Eventually(s.lastTransition, 2*convergeWithin, 100*time.Millisecond).Should(Equal("Failover lead-0 -> lead-1"))
	st, err = admin.Status(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.ReadOnly).To(BeFalse())
	waitAcks(g, w, 50)
	w.Stop()
	t.Logf("writer: %s", w)
	g.Expect(s.missing(g, 1, w.Acked())).To(BeEmpty(), "acknowledged writes lost by the failover")
	g.Eventually(func() []int { return s.missing(g, 2, w.Acked()) }, convergeWithin, 100*time.Millisecond).
		Should(BeEmpty())
	g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
		Should(HaveKeyWithValue("lead-1", "primary"))
}
