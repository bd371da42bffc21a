package kindnet

import (
	"encoding/json"
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, cidr, ip string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	if cidr != "" {
		n.Spec.PodCIDRs = []string{cidr}
	}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}

var cluster = netip.MustParsePrefix("10.244.0.0/16")

func TestComputeRoutesToEveryOtherNodesRange(t *testing.T) {
	g := NewWithT(t)
	nodes := []corev1.Node{
		node("w2", "10.244.2.0/24", "172.18.0.4"),
		node("cp", "10.244.0.0/24", "172.18.0.2"),
		node("w1", "10.244.1.0/24", "172.18.0.3"),
		node("new", "", "172.18.0.5"),            // no range yet: no route
		node("addressless", "10.244.3.0/24", ""), // no address yet: no route
	}
	d, err := Compute("w1", nodes, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Routes).To(Equal([]Route{
		{Dst: netip.MustParsePrefix("10.244.0.0/24"), Via: netip.MustParseAddr("172.18.0.2")},
		{Dst: netip.MustParsePrefix("10.244.2.0/24"), Via: netip.MustParseAddr("172.18.0.4")},
	}))
	want, err := Conf(netip.MustParsePrefix("10.244.1.0/24"), cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Conf).To(Equal(want))

	d, err = Compute("new", nodes, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Conf).To(BeNil(), "a node waits for its range")
	g.Expect(d.Routes).To(HaveLen(3))
}

func TestComputeRefusesARangeOutsideTheCluster(t *testing.T) {
	g := NewWithT(t)
	_, err := Compute("a", []corev1.Node{node("a", "10.245.0.0/24", "172.18.0.2")}, cluster)
	g.Expect(err).To(MatchError(ContainSubstring("not inside the cluster's 10.244.0.0/16")))
}

// The Pods of a node take addresses of its range only, inside the cluster's subnet (so that ptp masquerades
// nothing between Pods), with the range's first address as their gateway.
func TestConfHandsOutTheNodesRangeInsideTheClustersSubnet(t *testing.T) {
	g := NewWithT(t)
	raw, err := Conf(netip.MustParsePrefix("10.244.7.0/24"), cluster)
	g.Expect(err).NotTo(HaveOccurred())
	var conf struct {
		Plugins []struct {
			Type   string `json:"type"`
			IPMasq bool   `json:"ipMasq"`
			IPAM   struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	g.Expect(json.Unmarshal(raw, &conf)).To(Succeed())
	g.Expect(conf.Plugins).To(HaveLen(2))
	g.Expect(conf.Plugins[0].Type).To(Equal("ptp"))
	g.Expect(conf.Plugins[0].IPMasq).To(BeTrue())
	g.Expect(conf.Plugins[0].IPAM.Type).To(Equal("host-local"))
	g.Expect(conf.Plugins[0].IPAM.Ranges).To(Equal([][]map[string]string{{{
		"subnet": "10.244.0.0/16", "rangeStart": "10.244.7.2", "rangeEnd": "10.244.7.254", "gateway": "10.244.7.1",
	}}}))
	g.Expect(conf.Plugins[1].Type).To(Equal("portmap"))

	_, err = Conf(netip.MustParsePrefix("10.244.7.0/31"), cluster)
	g.Expect(err).To(HaveOccurred())
}
