package kindfleet

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Node-level faults, as a cloud's hosts fail: the whole node stops, or it is cut from the others. Both act on
// the node's container with the docker CLI (through the adapter's shim where it is in use, which passes these
// calls through), so everything on the node is hit at once: kubelet, containerd, kube-proxy and every Pod.

// FreezeNode pauses a node's container (docker pause: the freezer cgroup stops every process in it), as a host
// that hangs: its Pods keep their addresses and their TCP peers, but nothing on it answers. It returns the
// function that thaws it.
//
// runc gives up a freeze that does not settle in time ("unable to freeze", seen on a cgroup v1 host during a kind
// bench with a busy node, in the first of several freezes) and thaws the container again, so a failed pause leaves
// the node running: it is tried up to freezeAttempts times.
func FreezeNode(ctx context.Context, node string) (thaw func(context.Context) error, err error) {
	var errs []error
	for range freezeAttempts {
		if err = docker(ctx, "pause", node); err == nil {
			return func(ctx context.Context) error { return docker(ctx, "unpause", node) }, nil
		}
		errs = append(errs, err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil, errors.Join(errs...)
}

const freezeAttempts = 5

// CutNode cuts a node from every other host, as a network partition does: nftables in the node's network
// namespace (a table of its own, ahead of kube-proxy's) drops every packet in or out of its link to kind's
// network, and every packet its Pods send or receive through it, established connections included. The link stays
// up with its address, as a partitioned host's does. It returns the function that ends the cut.
//
// Not `docker network disconnect`: kind's network has an IPv4 subnet that Docker chose, and Docker connects a
// container again with a given address only on a subnet the user configured, so the node would come back with
// another address, which kubelet (started with the first as its node IP) does not follow.
func CutNode(ctx context.Context, node string) (heal func(context.Context) error, err error) {
	const table = "mysqlfleet_cut"
	rules := `table inet ` + table + ` {
  chain cut_input { type filter hook input priority -400; policy accept; iifname "eth0" drop; }
  chain cut_output { type filter hook output priority -400; policy accept; oifname "eth0" drop; }
  chain cut_forward { type filter hook forward priority -400; policy accept; iifname "eth0" drop; oifname "eth0" drop; }
}
`
	cmd := exec.CommandContext(ctx, "docker", "exec", "-i", node, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cutting node %s: %v: %s", node, err, strings.TrimSpace(string(out)))
	}
	return func(ctx context.Context) error {
		return docker(ctx, "exec", node, "nft", "delete", "table", "inet", table)
	}, nil
}

func docker(ctx context.Context, args ...string) error {
	if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
