package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// RebuildOptions ask for one server of a MySQLCluster in one member to be rebuilt.
type RebuildOptions struct {
	Name   string
	Member string
	// Pod is the server's Pod, <name>-<ordinal>.
	Pod string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Rebuild asks the member controller to empty a server's data and seed it again from the set, whatever it holds:
// it records the request in the MySQLCluster's annotation v1alpha1.RebuildAnnotation, "<member>/<pod>=<id>" with
// the time of the request as its id, replacing an earlier request for the same server. The manager copies it to
// the member's StatefulSet, and the member controller carries each id out once.
//
// It refuses a member the MySQLCluster is not placed on, a Pod that is not one of its StatefulSet's there, and
// the member's primary as the manager last reported it (the member controller refuses it too, should the
// primary have moved since). The write is a patch that carries the resourceVersion read, so that the checks
// hold for the object it changes and no concurrent change of the annotation is lost: on a conflict it reads
// and checks again.
func Rebuild(ctx context.Context, hub Hub, opts RebuildOptions, out io.Writer) error {
	if opts.Member == "" {
		return errors.New("name the member with --member")
	}
	if opts.Pod == "" {
		return errors.New("name the Pod with --pod")
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	hc, err := hub.connect()
	if err != nil {
		return err
	}
	var c *v1alpha1.MySQLCluster
	var id string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if c, err = getCluster(ctx, hub, opts.Name); err != nil {
			return err
		}
		if err := rebuildable(c, opts.Member, opts.Pod); err != nil {
			return err
		}
		id = now().UTC().Format(time.RFC3339Nano)
		reqs := []v1alpha1.RebuildRequest{}
		for _, r := range v1alpha1.RebuildRequests(c.Annotations[v1alpha1.RebuildAnnotation]) {
			if r.Member != opts.Member || r.Pod != opts.Pod {
				reqs = append(reqs, r)
			}
		}
		reqs = append(reqs, v1alpha1.RebuildRequest{Member: opts.Member, Pod: opts.Pod, ID: id})
		orig := c.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[v1alpha1.RebuildAnnotation] = v1alpha1.FormatRebuildRequests(reqs)
		return hc.cl.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return explainHubError(err)
	}
	say(out, "Asked for a rebuild of %s in member %s of %s/%s (request %s): its data are emptied and it is seeded "+
		"again from the set, discarding every transaction it holds that the primary lacks.\n",
		opts.Pod, opts.Member, c.Namespace, c.Name, id)
	say(out, "Watch for it (the rebuild names the request, and the transactions it discarded):\n"+
		"  kubectl get mysqlclusters.%s %s -n %s -o jsonpath='{.status.members[?(@.name==\"%s\")].replication.rebuilds}'\n",
		v1alpha1.GroupVersion.Group, c.Name, c.Namespace, opts.Member)
	return nil
}

// rebuildable refuses what the member controller could not or must not rebuild.
func rebuildable(c *v1alpha1.MySQLCluster, member, pod string) error {
	var ms *v1alpha1.MemberStatus
	for i := range c.Status.Members {
		if c.Status.Members[i].Name == member {
			ms = &c.Status.Members[i]
		}
	}
	if ms == nil {
		return fmt.Errorf("%s/%s is not placed on member %s", c.Namespace, c.Name, member)
	}
	replicas := max(c.Spec.Replicas, 1)
	ordinal, ok := strings.CutPrefix(pod, c.StatefulSetName()+"-")
	n, err := strconv.Atoi(ordinal)
	// The ordinal is written as the StatefulSet writes it: no sign, no leading zero.
	if !ok || err != nil || n < 0 || strconv.Itoa(n) != ordinal || int32(n) >= replicas {
		return fmt.Errorf("%s is not a Pod of %s/%s: its Pods are %s-0 to %s-%d", pod, c.Namespace, c.Name,
			c.StatefulSetName(), c.StatefulSetName(), replicas-1)
	}
	if ms.Replication != nil && ms.Replication.Primary == pod {
		return fmt.Errorf("%s is the primary of %s/%s in member %s: a primary is never rebuilt; move the primary "+
			"first (spec.primaries), then rebuild it as a replica", pod, c.Namespace, c.Name, member)
	}
	return nil
}
