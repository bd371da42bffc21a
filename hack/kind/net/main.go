// Command mysqlfleet-kind-net is the kind tier's pod network agent (test/kindnet): a DaemonSet on every node of
// a kind cluster made from the project's node image, installed by kind as the image's default CNI
// (default-cni.yaml beside this file, /kind/manifests/default-cni.yaml in the image). This is its flags,
// in-cluster configuration and signal handling.
package main

import (
	"context"
	"flag"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/mysqlfleet/mysqlfleet/test/kindnet"
)

func main() {
	var a kindnet.Agent
	var cidr string
	flag.StringVar(&a.Node, "node-name", os.Getenv("NODE_NAME"), "the node this agent runs on (default $NODE_NAME)")
	flag.StringVar(&cidr, "cluster-cidr", "10.244.0.0/16", "the cluster's pod subnet (kind's networking.podSubnet)")
	flag.StringVar(&a.ConfDir, "cni-conf-dir", "/etc/cni/net.d", "the node's CNI configuration directory")
	flag.DurationVar(&a.Interval, "interval", 0, "how often a pass runs without a Node change (default 5s)")
	klog.InitFlags(nil)
	flag.Parse()
	var err error
	if a.ClusterCIDR, err = netip.ParsePrefix(cidr); err != nil || a.Node == "" {
		klog.ErrorS(err, "--node-name and an IPv4 --cluster-cidr are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rc, err := rest.InClusterConfig()
	if err != nil {
		klog.ErrorS(err, "No in-cluster configuration")
		os.Exit(1)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		klog.ErrorS(err, "Client")
		os.Exit(1)
	}
	klog.InfoS("Serving", "node", a.Node, "clusterCIDR", a.ClusterCIDR.String(), "confDir", a.ConfDir)
	if err := a.Run(ctx, cs); err != nil {
		klog.ErrorS(err, "Agent failed")
		os.Exit(1)
	}
}
