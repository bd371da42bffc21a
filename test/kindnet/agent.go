//go:build linux

package kindnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// RouteProtocol marks the routes the agent makes (the protocol field of a kernel route, as `ip route` shows it),
// so that it removes only its own.
const RouteProtocol netlink.RouteProtocol = 77

// Agent keeps one node's CNI configuration and routes.
type Agent struct {
	// Node is the name of the node the agent runs on.
	Node string
	// ClusterCIDR is the cluster's pod subnet (kind's networking.podSubnet).
	ClusterCIDR netip.Prefix
	// ConfDir is the node's CNI configuration directory.
	ConfDir string
	// Interval is how often a pass runs when no Node changes (default 5 s).
	Interval time.Duration
}

// Run watches the cluster's Nodes and runs a pass on each change and every Interval, until ctx ends.
func (a *Agent) Run(ctx context.Context, cs kubernetes.Interface) error {
	if a.Interval == 0 {
		a.Interval = 5 * time.Second
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	nodes := factory.Core().V1().Nodes()
	poke := make(chan struct{}, 1)
	kick := func(any) {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: kick, UpdateFunc: func(_, n any) { kick(n) }, DeleteFunc: kick,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	// The API server is reached through the kubernetes Service, which kube-proxy serves: until it does, the
	// cache does not sync, and the node stays without a network (not ready), as kind's own nodes do before
	// kindnetd runs.
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return ctx.Err()
	}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	for {
		list, err := nodes.Lister().List(labels.Everything())
		if err == nil {
			all := make([]corev1.Node, len(list))
			for i, n := range list {
				all[i] = *n
			}
			err = a.Sync(all)
		}
		if err != nil {
			klog.ErrorS(err, "Pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poke:
		case <-tick.C:
		}
	}
}

// Sync makes the node's configuration and routes what the Nodes ask for.
func (a *Agent) Sync(nodes []corev1.Node) error {
	d, err := Compute(a.Node, nodes, a.ClusterCIDR)
	if err != nil {
		return err
	}
	var errs []error
	if d.Conf != nil {
		if err := writeIfChanged(filepath.Join(a.ConfDir, ConfName), d.Conf); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, SyncRoutes(d.Routes))...)
}

// SyncRoutes makes the agent's routes in the main table exactly routes: it adds or corrects what is missing and
// removes its own routes that are not wanted; routes of anyone else are left alone.
func SyncRoutes(routes []Route) error {
	have, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	want := map[netip.Prefix]netip.Addr{}
	for _, r := range routes {
		want[r.Dst] = r.Via
	}
	var errs []error
	current := map[netip.Prefix]bool{}
	for _, h := range have {
		if h.Dst == nil {
			continue
		}
		dst, ok := prefixOf(h.Dst)
		via, _ := netip.AddrFromSlice(h.Gw)
		if ok && want[dst] == via.Unmap() {
			current[dst] = true
			continue
		}
		if !ok || !want[dst].IsValid() {
			if err := netlink.RouteDel(&h); err != nil {
				errs = append(errs, fmt.Errorf("removing route to %s: %w", h.Dst, err))
			} else {
				klog.InfoS("Removed route", "dst", h.Dst.String())
			}
		}
	}
	for dst, via := range want {
		if current[dst] {
			continue
		}
		r := &netlink.Route{
			Dst:      &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), 32)},
			Gw:       via.AsSlice(),
			Protocol: RouteProtocol,
		}
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("route to %s via %s: %w", dst, via, err))
			continue
		}
		klog.InfoS("Route set", "dst", dst.String(), "via", via.String())
	}
	return errors.Join(errs...)
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), bits).Masked(), true
}

// writeIfChanged writes data to path through a file renamed over it, so that the container runtime never reads a
// half-written configuration, and only when the content differs.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	klog.InfoS("Wrote the CNI configuration", "path", path)
	return nil
}
