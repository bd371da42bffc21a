// Command local-path-provisioner provisions the cloud-named StorageClasses of a kind cluster of the fleet (gp3,
// managed-csi, pd-ssd, ...) as `local` volumes in directories under --base-dir of its node: the
// kind tier's stand-in for a cloud's CSI driver. What it does, and why it exists, is test/provisioner's; this is
// its flags, in-cluster configuration and signal handling.
//
// It runs as a DaemonSet in each member (test/kindfleet deploys it), one on each node, with the node's
// --base-dir mounted at the same path.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/mysqlfleet/mysqlfleet/test/provisioner"
)

func main() {
	var names string
	var cfg provisioner.Config
	flag.StringVar(&names, "provisioner", "", "comma-separated provisioner names of the StorageClasses to serve")
	flag.StringVar(&cfg.Node, "node-name", os.Getenv("NODE_NAME"), "the node the volumes are made on (default $NODE_NAME)")
	flag.StringVar(&cfg.BaseDir, "base-dir", "/var/local-path", "directory for the volumes, the same path on the node and here")
	klog.InitFlags(nil)
	flag.Parse()
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			cfg.Provisioners = append(cfg.Provisioners, n)
		}
	}
	if len(cfg.Provisioners) == 0 || cfg.Node == "" {
		klog.Error("--provisioner and --node-name are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		klog.ErrorS(err, "Provisioner failed")
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg provisioner.Config) error {
	rc, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("no in-cluster configuration: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	p, err := provisioner.New(cs, cfg)
	if err != nil {
		return err
	}
	klog.InfoS("Serving", "provisioners", cfg.Provisioners, "node", cfg.Node, "baseDir", cfg.BaseDir)
	p.Run(ctx)
	return nil
}
