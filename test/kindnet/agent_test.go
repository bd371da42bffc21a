//go:build linux

package kindnet

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
)

// inNewNetns runs f on a thread moved into a new network namespace with one link, eth0 (a dummy with
// 172.18.0.3/16, up; one end of a veth pair, since this kernel may lack the dummy driver), as a kind node's: the routes the agent makes are real kernel routes, and the machine's own
// namespace is never touched. It needs CAP_SYS_ADMIN and CAP_NET_ADMIN (root), as the agent itself does.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	runtime.LockOSThread()
	// The thread is left to die with its namespace rather than returned to the pool.
	orig, err := netns.Get()
	if err != nil {
		t.Fatalf("current network namespace: %v", err)
	}
	ns, err := netns.New()
	if err != nil {
		t.Fatalf("a new network namespace needs root (CAP_SYS_ADMIN): %v", err)
	}
	defer func() {
		_ = netns.Set(orig)
		_ = ns.Close()
		_ = orig.Close()
	}()
	link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"}
	if err := netlink.LinkAdd(link); err != nil {
		t.Fatalf("veth link: %v", err)
	}
	peer, err := netlink.LinkByName("peer0")
	if err != nil {
		t.Fatalf("veth peer: %v", err)
	}
	if err := netlink.LinkSetUp(peer); err != nil {
		t.Fatalf("peer up: %v", err)
	}
	addr, _ := netlink.ParseAddr("172.18.0.3/16")
	if err := netlink.AddrAdd(link, addr); err != nil {
		t.Fatalf("address: %v", err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		t.Fatalf("link up: %v", err)
	}
	f()
}

func routesOf(g Gomega) map[string]string {
	all, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, r := range all {
		if r.Dst != nil && r.Gw != nil {
			out[r.Dst.String()] = r.Gw.String() + map[bool]string{true: " (agent)", false: ""}[r.Protocol == RouteProtocol]
		}
	}
	return out
}

// A pass routes every other node's range through its address, corrects a route whose node moved, removes its own
// routes to ranges no node holds any more, leaves other routes alone, and puts back what the kernel dropped.
func TestSyncKeepsTheRoutesOfTheNodes(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	a := &Agent{Node: "w1", ClusterCIDR: cluster, ConfDir: dir}
	inNewNetns(t, func() {
		// Someone else's route in the same table.
		_, other, _ := net.ParseCIDR("10.99.0.0/16")
		g.Expect(netlink.RouteAdd(&netlink.Route{Dst: other, Gw: net.ParseIP("172.18.0.1")})).To(Succeed())

		nodes := []corev1.Node{node("cp", "10.244.0.0/24", "172.18.0.2"), node("w1", "10.244.1.0/24", "172.18.0.3"),
			node("w2", "10.244.2.0/24", "172.18.0.4")}
		g.Expect(a.Sync(nodes)).To(Succeed())
		g.Expect(routesOf(g)).To(Equal(map[string]string{
			"10.99.0.0/16": "172.18.0.1", "10.244.0.0/24": "172.18.0.2 (agent)", "10.244.2.0/24": "172.18.0.4 (agent)"}))
		conf, err := os.ReadFile(filepath.Join(dir, ConfName))
		g.Expect(err).NotTo(HaveOccurred())
		want, _ := Conf(netip.MustParsePrefix("10.244.1.0/24"), cluster)
		g.Expect(conf).To(Equal(want))

		// w2 comes back with another address; cp is gone.
		nodes = []corev1.Node{node("w1", "10.244.1.0/24", "172.18.0.3"), node("w2", "10.244.2.0/24", "172.18.0.9")}
		g.Expect(a.Sync(nodes)).To(Succeed())
		g.Expect(routesOf(g)).To(Equal(map[string]string{"10.99.0.0/16": "172.18.0.1", "10.244.2.0/24": "172.18.0.9 (agent)"}))

		// The link goes down (a node container cut from kind's network): the kernel drops the routes through it.
		link, err := netlink.LinkByName("eth0")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(netlink.LinkSetDown(link)).To(Succeed())
		g.Expect(routesOf(g)).To(BeEmpty())
		g.Expect(netlink.LinkSetUp(link)).To(Succeed())
		g.Expect(a.Sync(nodes)).To(Succeed())
		g.Expect(routesOf(g)).To(Equal(map[string]string{"10.244.2.0/24": "172.18.0.9 (agent)"}))
	})
}
