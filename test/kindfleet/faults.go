package kindfleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Node-level faults, as a cloud's hosts fail: the whole node stops, or it is cut from the others. Both act on
// the node's container with the docker CLI (through the adapter's shim where it is in use, which passes these
// calls through), so everything on the node is hit at once: kubelet, containerd, kube-proxy and every Pod.

// FreezeNode pauses a node's container (docker pause: the freezer cgroup stops every process in it), as a host
// that hangs: its Pods keep their addresses and their TCP peers, but nothing on it answers. It returns the
// function that thaws it.
func FreezeNode(ctx context.Context, node string) (thaw func(context.Context) error, err error) {
	if err := docker(ctx, "pause", node); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return docker(ctx, "unpause", node) }, nil
}

// CutNode disconnects a node's container from kind's docker network, as a host cut from its peers: its link goes
// and, with it, every route through it. It returns the function that connects it again with the same addresses
// (kubelet was started with that IPv4 address as its node IP; a new one would be another node to the cluster).
func CutNode(ctx context.Context, node string) (reconnect func(context.Context) error, err error) {
	network := kindNetwork()
	out, err := exec.CommandContext(ctx, "docker", "inspect", "-f",
		`{{with index .NetworkSettings.Networks "`+network+`"}}{{.IPAddress}} {{.GlobalIPv6Address}}{{end}}`, node).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("docker inspect %s: %v: %s", node, err, out)
	}
	addrs := strings.Fields(string(out))
	if len(addrs) == 0 {
		return nil, fmt.Errorf("node %s has no address on docker network %s", node, network)
	}
	args := []string{"network", "connect", "--ip", addrs[0]}
	if len(addrs) > 1 {
		args = append(args, "--ip6", addrs[1])
	}
	args = append(args, network, node)
	if err := docker(ctx, "network", "disconnect", network, node); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return docker(ctx, args...) }, nil
}

// kindNetwork is the docker network kind puts its nodes on (kind's own rule: KIND_EXPERIMENTAL_DOCKER_NETWORK, or
// "kind").
func kindNetwork() string {
	if n := os.Getenv("KIND_EXPERIMENTAL_DOCKER_NETWORK"); n != "" {
		return n
	}
	return "kind"
}

func docker(ctx context.Context, args ...string) error {
	if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
