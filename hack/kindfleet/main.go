// Command kindfleet starts and stops the fleet of clusters/ as kind clusters (make kind-up, make kind-down):
//
//	kindfleet up [-members N]   creates the hub and N members (all by default) that do not exist yet, loads the
//	                            images of make kind-images, gives the members their clouds' StorageClasses,
//	                            installs the chart on the hub with helm (the manager as a Deployment of 2 replicas
//	                            with leader election) and joins every member with `mysqlfleet join`, using the
//	                            member's node address on kind's docker network, which the hub's Pods reach, and
//	                            installing the member controller from the loaded manager image
//	kindfleet down              deletes them
//
// Kubeconfigs are written to .kind/<cluster>.kubeconfig. Run from the repository root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mysqlfleet/mysqlfleet/test/kindfleet"
	"github.com/mysqlfleet/mysqlfleet/test/localfleet"
)

const (
	dir       = ".kind"
	namespace = "mysqlfleet-system"
	release   = "mysqlfleet"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kindfleet up [-members N] | down")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	members := fs.Int("members", 0, "how many members of clusters/ to start (0: all)")
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, _ := os.Getwd()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, root, *members)
	case "down":
		err = kindfleet.Down(kindfleet.Options{Root: root, Dir: filepath.Join(root, dir)})
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kindfleet:", err)
		os.Exit(1)
	}
}

func up(ctx context.Context, root string, members int) error {
	start := time.Now()
	images, err := kindfleet.ReadImages(filepath.Join(root, "hack", "kind", "images.env"))
	if err != nil {
		return err
	}
	f, err := kindfleet.Up(ctx, kindfleet.Options{Root: root, Dir: filepath.Join(root, dir), Members: members, Images: images})
	if err != nil {
		return err
	}
	fmt.Printf("[kindfleet] clusters ready after %s\n", time.Since(start).Round(time.Second))

	repo, tag := splitImage(images.Manager)
	fmt.Printf("[kindfleet] installing the chart on the hub (image %s)\n", images.Manager)
	if err := localfleet.InstallChart(f.Hub.KubeconfigPath, filepath.Join(root, "charts", "mysqlfleet"), namespace, release,
		map[string]any{"image": map[string]any{"repository": repo, "tag": tag, "pullPolicy": "IfNotPresent"}}); err != nil {
		return err
	}
	if err := run(ctx, "bin/kubectl", "--kubeconfig", f.Hub.KubeconfigPath, "-n", namespace, "rollout", "status",
		"deployment/"+release, "--timeout=5m"); err != nil {
		return err
	}
	for _, m := range f.Members {
		if err := f.Join(ctx, "bin/mysqlfleet", m, os.Stdout); err != nil {
			return err
		}
	}
	if err := run(ctx, "bin/mysqlfleet", "--kubeconfig", f.Hub.KubeconfigPath, "members"); err != nil {
		return err
	}
	fmt.Printf("\n[kindfleet] the fleet is up after %s; the hub: KUBECONFIG=%s kubectl get pods -A\n",
		time.Since(start).Round(time.Second), filepath.Join(dir, f.Hub.KindName+".kubeconfig"))
	if f.Adapted {
		fmt.Println("[kindfleet] (kind's nodes run through the adapter: this Docker host refuses --privileged)")
	}
	return nil
}

func splitImage(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}

func run(ctx context.Context, name string, args ...string) error {
	fmt.Printf("\n$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
