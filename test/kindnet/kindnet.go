// Package kindnet is the pod network of the kind tier's node image, in the role kindnetd plays in kind's own
// images (kindnetd is not published as a Go module, so the Go module proxy cannot give it to us): on every node it
// writes the CNI configuration for that node's pod range, and it keeps a route to every other node's pod range
// through that node's address. Pods then reach each other across nodes without any address translation, so a
// replica sees its source's Pod IP, as on a cloud's VPC-native network.
//
// The configuration chains Debian's ptp, host-local and portmap plugins. host-local hands out addresses from this
// node's range only (rangeStart..rangeEnd) but inside the cluster's whole pod subnet, because ptp masquerades a
// Pod's traffic to anything outside its address's subnet: with the cluster's subnet there, traffic between Pods
// keeps its addresses and only traffic leaving the pod network (to nodes, other clusters) is masqueraded.
//
// The agent runs as a DaemonSet (hack/kind/net, /kind/manifests/default-cni.yaml in the node image, which kind
// installs as its default CNI): on the host's network, since the network it makes is not there yet, and
// level-triggered: every few seconds, and on every change of a Node, it writes what is missing and removes its
// own routes to ranges no node holds any more. A node whose network comes back (a container reconnected to kind's
// network loses the routes through it) gets them again on the next pass.
package kindnet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ConfName is the CNI configuration file the agent writes in the node's /etc/cni/net.d.
const ConfName = "10-mysqlfleet.conflist"

// Route is one other node's pod range and the node address it is reached through.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

// Desired is what one node needs: its CNI configuration (nil until its range is allocated) and its routes.
type Desired struct {
	Conf   []byte
	Routes []Route
}

// Compute returns what node self needs in a cluster of nodes whose pods live in clusterCIDR. A node without a
// pod range (the controller manager has not allocated it yet) or without an internal IPv4 address gets no route;
// self's own configuration waits for its range.
func Compute(self string, nodes []corev1.Node, clusterCIDR netip.Prefix) (Desired, error) {
	var d Desired
	for i := range nodes {
		n := &nodes[i]
		cidr, ok := podCIDR(n)
		if !ok {
			continue
		}
		if !clusterCIDR.Contains(cidr.Addr()) || cidr.Bits() < clusterCIDR.Bits() {
			return Desired{}, fmt.Errorf("node %s's pod range %s is not inside the cluster's %s", n.Name, cidr, clusterCIDR)
		}
		if n.Name == self {
			conf, err := Conf(cidr, clusterCIDR)
			if err != nil {
				return Desired{}, err
			}
			d.Conf = conf
			continue
		}
		if ip, ok := internalIPv4(n); ok {
			d.Routes = append(d.Routes, Route{Dst: cidr, Via: ip})
		}
	}
	slices.SortFunc(d.Routes, func(a, b Route) int { return a.Dst.Addr().Compare(b.Dst.Addr()) })
	return d, nil
}

// Conf is the CNI configuration list of a node whose pods take addresses from nodeCIDR, inside clusterCIDR: the
// first address of the node's range is the Pods' gateway (ptp puts it on the host's end of each Pod's link), the
// rest are the Pods'.
func Conf(nodeCIDR, clusterCIDR netip.Prefix) ([]byte, error) {
	nodeCIDR = nodeCIDR.Masked()
	if !nodeCIDR.Addr().Is4() || nodeCIDR.Bits() > 30 {
		return nil, fmt.Errorf("pod range %s: an IPv4 range of at least 4 addresses is needed", nodeCIDR)
	}
	gateway := nodeCIDR.Addr().Next()
	last := lastAddr(nodeCIDR)
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "mysqlfleet",
		"plugins": []any{
			map[string]any{
				"type":   "ptp",
				"ipMasq": true,
				"mtu":    1500,
				"ipam": map[string]any{
					"type": "host-local",
					"ranges": [][]map[string]string{{{
						"subnet":     clusterCIDR.Masked().String(),
						"rangeStart": gateway.Next().String(),
						"rangeEnd":   last.Prev().String(), // not the range's broadcast address
						"gateway":    gateway.String(),
					}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(conf); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func podCIDR(n *corev1.Node) (netip.Prefix, bool) {
	for _, c := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
		if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() {
			return p.Masked(), true
		}
	}
	return netip.Prefix{}, false
}

func internalIPv4(n *corev1.Node) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := (uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
