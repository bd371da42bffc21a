package mysqlcluster

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

var (
	memberReconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mysqlfleet_member_reconciles_total",
		Help: "Reconciles of a MySQLCluster in one member, by the member's resulting phase.",
	}, []string{"member", "phase"})
	applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mysqlfleet_member_applies_total",
		Help: "Server-side applies sent to a member, by kind and action (Create, Update, error). Unchanged objects are not sent.",
	}, []string{"member", "kind", "action"})

	applyErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mysqlfleet_member_apply_errors_total",
		Help: "Server-side applies to a member that failed, by cause: deadline, canceled, conflict, invalid, forbidden, throttled, unreachable or other.",
	}, []string{"member", "reason"})

	failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mysqlfleet_member_failovers_total",
		Help: "Failovers the member controllers reported, as the hub first read them, by MySQLCluster and member.",
	}, []string{"cluster_namespace", "cluster_name", "member"})

	writablePrimary = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_writable_primary",
		Help: "1 while the member controller reports a writable primary for the MySQLCluster in the member, 0 while it reports none; absent while nothing reports.",
	}, []string{"cluster_namespace", "cluster_name", "member"})

	writesBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_writes_blocked",
		Help: "1 while the member controller reports that the MySQLCluster's primary in the member waits for more semi-sync acknowledgements than it has replicas connected to give them (no commit returns), 0 otherwise; absent while nothing reports.",
	}, []string{"cluster_namespace", "cluster_name", "member"})

	archiveBehind = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_archive_behind",
		Help: "1 while the member controller reports the MySQLCluster's binary-log archive in the member Behind (its recovery point older than spec.backup.archive.maxRecoveryPointAge, or not archiving), 0 while Archiving; absent without an archive report.",
	}, []string{"cluster_namespace", "cluster_name", "member"})

	archiveGaps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_archive_gaps",
		Help: "Gaps the member controller reports in the MySQLCluster's binary-log archive in the member, after its newest backup; absent without an archive report.",
	}, []string{"cluster_namespace", "cluster_name", "member"})

	// asyncCommits is one series per primary server: the count is the server's own, cumulative since it
	// started, so a series that followed the primary from server to server would jump at every switchover. A
	// restart of the server resets it; alert on increase() (MySQLFleetAsyncCommits), which takes that as a
	// counter reset.
	asyncCommits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_async_commits",
		Help: "Commits that returned on the MySQLCluster's primary in the member without a semi-sync acknowledgement, since that server started, as the member controller reports them; labelled with the primary Pod.",
	}, []string{"cluster_namespace", "cluster_name", "member", "primary"})

	clusterPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_cluster_phase",
		Help: "1 for the MySQLCluster's current status.phase, 0 for each other phase.",
	}, []string{"cluster_namespace", "cluster_name", "phase"})

	memberChangePassesWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mysqlfleet_member_change_passes_waiting",
		Help: "Passes of MySQLClusters that a member change asked for, waiting for the placement passes in flight to end.",
	})
)

// phases are every value of status.phase, each a series of mysqlfleet_cluster_phase, so that a query for one
// phase never finds a gap.
var phases = []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRestoring, v1alpha1.PhaseProgressing, v1alpha1.PhaseReady,
	v1alpha1.PhaseDegraded, v1alpha1.PhasePaused, v1alpha1.PhaseUnreachable, v1alpha1.PhaseDeleting}

func init() {
	metrics.Registry.MustRegister(memberReconciles, applies, applyErrors, clusterPhase, failovers, writablePrimary, writesBlocked,
		asyncCommits, archiveBehind, archiveGaps, memberChangePassesWaiting, orphanedObjects)
}

// reportPhase sets the MySQLCluster's phase series. The labels are not namespace and name: the ServiceMonitor's
// scrape adds a namespace label of its own, and Prometheus would rename ours.
func reportPhase(c *v1alpha1.MySQLCluster, phase v1alpha1.Phase) {
	for _, p := range phases {
		v := 0.0
		if p == phase {
			v = 1
		}
		clusterPhase.WithLabelValues(c.Namespace, c.Name, string(p)).Set(v)
	}
}

// reportPrimaries sets, per member that reports, whether it has a writable primary: the time without one is
// the time this series is 0 (MySQLFleetNoWritablePrimary alerts on it).
func reportPrimaries(c *v1alpha1.MySQLCluster) {
	// Members that left the placement, or stopped reporting, lose their series; so does a former primary.
	l := prometheus.Labels{"cluster_namespace": c.Namespace, "cluster_name": c.Name}
	writablePrimary.DeletePartialMatch(l)
	writesBlocked.DeletePartialMatch(l)
	asyncCommits.DeletePartialMatch(l)
	archiveBehind.DeletePartialMatch(l)
	archiveGaps.DeletePartialMatch(l)
	for _, m := range c.Status.Members {
		if m.Replication != nil {
			setPrimarySeries(c, m.Name, m.Replication)
		}
		if a := m.Archive; a != nil {
			behind := 0.0
			if a.State == v1alpha1.ArchiveBehind {
				behind = 1
			}
			archiveBehind.WithLabelValues(c.Namespace, c.Name, m.Name).Set(behind)
			archiveGaps.WithLabelValues(c.Namespace, c.Name, m.Name).Set(float64(len(gapsAfterNewestBackup(m))))
		}
	}
}

// setPrimarySeries sets a member's series of the primary from what its member controller reports.
func setPrimarySeries(c *v1alpha1.MySQLCluster, member string, mr *v1alpha1.MemberReplication) {
	l := prometheus.Labels{"cluster_namespace": c.Namespace, "cluster_name": c.Name, "member": member}
	writable, blocked := 0.0, 0.0
	if p := mr.Primary; p != "" {
		writable = 1
		asyncCommits.WithLabelValues(c.Namespace, c.Name, member, p).Set(float64(mr.AsyncCommits))
	}
	if mr.WritesBlocked != "" {
		blocked = 1
	}
	writablePrimary.With(l).Set(writable)
	writesBlocked.With(l).Set(blocked)
}

// forgetPrimaries drops the replication series of a MySQLCluster that is gone.
func forgetPrimaries(key types.NamespacedName) {
	l := prometheus.Labels{"cluster_namespace": key.Namespace, "cluster_name": key.Name}
	writablePrimary.DeletePartialMatch(l)
	writesBlocked.DeletePartialMatch(l)
	asyncCommits.DeletePartialMatch(l)
	archiveBehind.DeletePartialMatch(l)
	archiveGaps.DeletePartialMatch(l)
	failovers.DeletePartialMatch(l)
}

// forgetPhase drops the series of a MySQLCluster that is gone.
func forgetPhase(key types.NamespacedName) {
	clusterPhase.DeletePartialMatch(prometheus.Labels{"cluster_namespace": key.Namespace, "cluster_name": key.Name})
}

// errorReason sorts a failed apply by cause, so that rework (a request that ran out of time, or was given up)
// is told from refusals (an invalid object, a field owned by someone else, a credential without the verb).
func errorReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case apierrors.IsConflict(err):
		return "conflict"
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return "invalid"
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return "forbidden"
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err):
		return "throttled"
	case isUnreachable(err):
		return "unreachable"
	}
	return "other"
}
