package mysqlcluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// A scale-down is not rendered straight into a member: the StatefulSet controller would delete the highest
// ordinals at once, and one of them may be the primary, or the only replica that acknowledged a commit (MariaDB
// takes one semi-sync acknowledgement from any replica). The hub announces spec.replicas on the StatefulSet
// (v1alpha1.ReplicasAnnotation), keeps its Pods until the member controller reports the set ready to lose them
// (ReplicationReport.ScaleDownReady), and only then writes its replicas down.

// scaleDownHold is a scale-down held back in one member: the StatefulSet keeps pods Pods, not spec.replicas.
type scaleDownHold struct {
	pods    int32
	message string
}

// heldReplicas decides how many Pods a member's StatefulSet is rendered with: c's spec.replicas (desired), or,
// held, the live StatefulSet's replicas while the member controller prepares the set to lose the rest. live is
// the StatefulSet in the member (nil when there is none), rep the member controller's report on it (nil when
// there is none).
//
// Desired goes through at once for a new StatefulSet, a scale-up, and a StatefulSet that is not c's (by UID
// label: a predecessor's is replaced, and nothing c asked for was ever prepared on it). It also goes through
// when no member controller reports on the set: then nothing replicates there (a member joined with
// --skip-member-controller, or Pods with no server behind them), so there is no acknowledged commit to lose,
// and nobody would ever report the set ready: holding it would hold it for good. Otherwise the Pods are held
// until the report says the set is ready to shrink to desired itself; readiness for another count (an earlier
// spec) does not do.
func heldReplicas(c *v1alpha1.MySQLCluster, live *appsv1.StatefulSet, rep *v1alpha1.ReplicationReport) (n int32, held bool) {
	desired := max(c.Spec.Replicas, 1) // as render counts an object that was never defaulted
	if live == nil || live.Labels[v1alpha1.ClusterUIDLabel] != string(c.UID) {
		return desired, false
	}
	have := ptr.Deref(live.Spec.Replicas, 1)
	switch {
	case desired >= have, rep == nil:
		return desired, false
	case rep.ScaleDownReady != nil && *rep.ScaleDownReady == desired:
		return desired, false
	}
	return have, true
}

// scaleDownMessage says what a held scale-down waits for, with what the member controller last reported.
func scaleDownMessage(pods, desired int32, rep *v1alpha1.ReplicationReport) string {
	msg := fmt.Sprintf("holding %d Pods until the member controller has made the set ready to scale down to %d",
		pods, desired)
	if rep != nil && rep.LastError != "" {
		msg += ": " + rep.LastError
	}
	return msg
}

// memberSet is what the hub reads, from the member's cache, of a MySQLCluster's set there before rendering it:
// the StatefulSet (nil when there is none) and the member controller's report on it (nil when there is none, or
// when it cannot be read: reportErr says why).
type memberSet struct {
	sts       *appsv1.StatefulSet
	rep       *v1alpha1.ReplicationReport
	reportErr error
}

func readMemberSet(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster) (memberSet, error) {
	var sts appsv1.StatefulSet
	if err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts); apierrors.IsNotFound(err) {
		return memberSet{}, nil
	} else if err != nil {
		return memberSet{}, fmt.Errorf("failed to read StatefulSet %s/%s: %w", c.Namespace, c.StatefulSetName(), err)
	}
	rep, err := readReport(ctx, mc, &sts)
	return memberSet{sts: &sts, rep: rep, reportErr: err}, nil
}

// scaleDown is the hold heldReplicas decides on, nil when the StatefulSet is rendered with spec.replicas. A report
// that cannot be read holds the Pods as one that is not ready does, its error in the message: a member controller
// does report on the set.
func scaleDown(c *v1alpha1.MySQLCluster, set memberSet) *scaleDownHold {
	if set.sts == nil {
		return nil
	}
	rep := set.rep
	if set.reportErr != nil {
		rep = &v1alpha1.ReplicationReport{LastError: set.reportErr.Error()}
	}
	n, held := heldReplicas(c, set.sts, rep)
	if !held {
		return nil
	}
	return &scaleDownHold{pods: n, message: scaleDownMessage(n, max(c.Spec.Replicas, 1), rep)}
}
