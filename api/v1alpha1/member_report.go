package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The member controller (controllers/member, cmd/member) runs in every member cluster and keeps each mysqlfleet
// StatefulSet there a replicated set: one writable primary and semi-sync replicas. What it writes in the member
// is named here, so that the hub can read its report without importing it; what it reads, the hub's side of the
// contract, is in contract.go.

const (
	// RoleLabel on a MySQL Pod is its role in the replicated set, as the member controller last established it:
	// RolePrimary or RoleReplica. Pods that are neither (unreachable, errant, not yet replicating) carry no role
	// label, so that Services selecting on it never send clients there.
	RoleLabel = "mysqlfleet.io/role"
	// RolePrimary is the value of RoleLabel on the writable primary.
	RolePrimary = "primary"
	// RoleReplica is the value of RoleLabel on a replica that replicates from the primary without errors.
	RoleReplica = "replica"

	// ReplicationComponentLabel marks the objects the member controller writes; its value on the report
	// ConfigMap is ReplicationComponent. It is not app.kubernetes.io/component, which the hub's objects use.
	ReplicationComponentLabel = "mysqlfleet.io/component"
	// ReplicationComponent is the value of ReplicationComponentLabel on a replication report ConfigMap.
	ReplicationComponent = "replication"

	// StatefulSetUIDAnnotation on a replication report ConfigMap is the UID of the StatefulSet it reports on. The
	// report deliberately carries no ClusterUIDLabel: the hub counts and deletes member objects by that label,
	// and the report belongs to the member's StatefulSet (its owner reference), not to the hub object.
	StatefulSetUIDAnnotation = "mysqlfleet.io/statefulset-uid"

	// ReplicationReportKey is the key of the report ConfigMap that holds the ReplicationReport as JSON.
	ReplicationReportKey = "report.json"
	// ReplicationRecordKey is the key of the report ConfigMap that holds the member controller's own record (the
	// primary's ordinal and the errant instances, as JSON). It is the controller's memory between passes and
	// between leaders; nobody else should write it.
	ReplicationRecordKey = "record.json"
)

// ReplicationReportName is the name of the ConfigMap, in the StatefulSet's namespace, that holds the replication
// report of the StatefulSet statefulSet.
func ReplicationReportName(statefulSet string) string { return statefulSet + "-replication" }

// ReplicationRole is an instance's role in a ReplicationReport.
type ReplicationRole string

const (
	// ReplicationRolePrimary is the primary.
	ReplicationRolePrimary ReplicationRole = "primary"
	// ReplicationRoleReplica is a replica of the primary with both threads running and no error.
	ReplicationRoleReplica ReplicationRole = "replica"
	// ReplicationRoleErrant is an instance holding transactions the primary does not have; it is fenced and left
	// for a human to rebuild.
	ReplicationRoleErrant ReplicationRole = "errant"
	// ReplicationRoleUnreachable is an instance whose server could not be read (no Pod, no Pod IP, no answer).
	ReplicationRoleUnreachable ReplicationRole = "unreachable"
	// ReplicationRoleNone is any other instance: not replicating yet, replicating from elsewhere, or stopped.
	ReplicationRoleNone ReplicationRole = "none"
)

// ReplicationReport is what the member controller publishes about one StatefulSet after each pass, as JSON under
// ReplicationReportKey of the ConfigMap ReplicationReportName(<statefulset>). It holds no timestamp but
// AsyncSince and nothing that changes while the set is idle (no executed GTID sets), because the ConfigMap is
// written only when the report changes: an idle set costs its member no writes.
//
// +kubebuilder:object:generate=false
type ReplicationReport struct {
	// Primary is the primary Pod's name; empty when there is none (not yet bootstrapped, or lost and not
	// replaced).
	Primary string `json:"primary,omitempty"`
	// Instances are the StatefulSet's Pods by ordinal, as seen in the last pass. Empty when the pass could not
	// observe the set at all (see LastError).
	Instances []ReplicationInstance `json:"instances,omitempty"`
	// Decision is what the last pass decided.
	Decision ReplicationDecision `json:"decision"`
	// LastTransition is the last completed change of primary (Bootstrap, Adopt, Failover or Switchover); it stays
	// until the next one.
	LastTransition *ReplicationDecision `json:"lastTransition,omitempty"`
	// LastError is why the last pass could not do or see everything (a refusal, an unreachable server, a failed
	// step); empty when all is well.
	LastError string `json:"lastError,omitempty"`
	// WritesBlocked says why the primary's commits cannot return now: it waits for more semi-sync
	// acknowledgements than it has replicas connected to give them. Empty when its writes can go on.
	// +optional
	WritesBlocked string `json:"writesBlocked,omitempty"`
	// Async says why the primary's commits return without a replica holding them: under durability Preferred
	// its semi-sync is off because no replica can acknowledge. Empty while semi-sync is in force.
	// +optional
	Async string `json:"async,omitempty"`
	// AsyncSince is when the member controller first reported Async in the current window: the report's only
	// timestamp, written once when the window opens and dropped when it closes, so a steady set still writes
	// nothing.
	// +optional
	AsyncSince *metav1.Time `json:"asyncSince,omitempty"`
	// ScaleDownReady is the number of instances the set is ready to shrink to, when ReplicasAnnotation asks
	// for fewer than the StatefulSet has: the primary's ordinal is below it, the instances at and above it
	// receive (and acknowledge) nothing, and an instance below it, other than the primary, holds every
	// transaction they received (every transaction the primary executed while one of them cannot be read; none
	// is needed for 1: the primary then waits for no acknowledgement). The hub then writes the StatefulSet's replicas down to it. Nil otherwise.
	// +optional
	ScaleDownReady *int32 `json:"scaleDownReady,omitempty"`
	// PrimaryEndpoints says that the member controller publishing this report writes the EndpointSlices of the
	// primary's Services (<name> and <name>-primary) itself whenever those Services have no selector, so that a
	// change of primary changes their endpoints once (see controllers/member/endpoints.go). The hub renders
	// them without a selector only then; a controller of an earlier release, which does not say so, keeps
	// Services that select the Pod labelled primary.
	// +optional
	PrimaryEndpoints bool `json:"primaryEndpoints,omitempty"`
	// Backups are the outcomes of the MySQLCluster's backup Jobs in the member, from the runner's reports (the
	// Pods' termination messages): they outlive the Jobs, which their CronJob's history limits remove.
	Backups *MemberBackups `json:"backups,omitempty"`
	// Restore is the outcome of the restore Job (RestoreJobAnnotation), when there is one.
	Restore *MemberRestore `json:"restore,omitempty"`
	// Archive is the binary-log archive's state, when the StatefulSet asks for one (ArchiveAnnotation).
	Archive *MemberArchive `json:"archive,omitempty"`
	// Rebuilds are the last servers the member controller emptied to seed them again, newest first (at most
	// MaxRebuildsReported), with the transactions each discarded.
	// +optional
	Rebuilds []ServerRebuild `json:"rebuilds,omitempty"`
}

// MaxRebuildsReported is how many rebuilds a ReplicationReport keeps.
const MaxRebuildsReported = 5

// ServerRebuild is one server the member controller emptied so that it is seeded again.
type ServerRebuild struct {
	// Pod is the rebuilt server's Pod.
	Pod string `json:"pod"`
	// Time is when its data were emptied.
	Time metav1.Time `json:"time"`
	// Discarded are the transactions it held that the primary lacked, in the engine's GTID notation (empty for a
	// requested rebuild of a server that held none).
	// +optional
	Discarded string `json:"discarded,omitempty"`
	// Request is the id of the rebuild request it carried out (RebuildAnnotation); empty for an automatic
	// rebuild (spec.errantServers RebuildWhenSafe).
	// +optional
	Request string `json:"request,omitempty"`
	// Reason says why it was safe, or who asked.
	Reason string `json:"reason"`
}

// Phases of MemberRestore.
const (
	RestorePending   = "Pending"
	RestoreSucceeded = "Succeeded"
	RestoreFailed    = "Failed"
)

// JobReport is what the backup runner (mysqlfleet-backup) leaves in a backup or restore Job's termination
// message, as JSON: the backup taken or restored (its manifest; only the fields read here are listed), or why
// it failed.
//
// +kubebuilder:object:generate=false
type JobReport struct {
	Backup *JobReportBackup `json:"backup,omitempty"`
	// Retained are the backups the store keeps after a backup's retention ran, newest first (cut to what fits
	// a termination message).
	Retained []JobReportBackup `json:"retained,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// JobReportBackup is the part of a backup manifest a JobReport carries.
//
// +kubebuilder:object:generate=false
type JobReportBackup struct {
	Name            string    `json:"name"`
	EndTime         time.Time `json:"endTime"`
	DurationSeconds float64   `json:"durationSeconds"`
	Size            int64     `json:"size"`
	GTIDPosition    string    `json:"gtidPosition"`
	Pod             string    `json:"pod,omitempty"`
	// Method is the manifest's: "logical" (or absent, in manifests written before physical backups) or
	// "physical".
	Method string `json:"method,omitempty"`
}

// ReplicationInstance is one instance (Pod) in a ReplicationReport.
//
// +kubebuilder:object:generate=false
type ReplicationInstance struct {
	// Pod is the Pod's name, <statefulset>-<ordinal>.
	Pod  string          `json:"pod"`
	Role ReplicationRole `json:"role"`
	// InSync is true for a replica whose threads run and whose lag is known and within the controller's bound.
	InSync bool `json:"inSync,omitempty"`
	// LagSeconds is a replica's replication lag in whole seconds; absent when unknown or not a replica.
	LagSeconds *int64 `json:"lagSeconds,omitempty"`
	// ErrantGTIDs are the transactions the instance executed that the primary has not, in the engine's GTID
	// notation; empty when there are none or they could not be computed (no primary answered).
	ErrantGTIDs string `json:"errantGTIDs,omitempty"`
	// Error is the last problem seen on the instance: why it could not be read, or its replication error.
	Error string `json:"error,omitempty"`
	// AsyncCommits is set on the primary: how many commits returned there without a semi-sync acknowledgement
	// since its server started (Rpl_semi_sync_master_no_tx, Rpl_semi_sync_source_no_tx), each a write its
	// client was told was committed that a failover could lose. Only a restart of the server resets it.
	AsyncCommits int64 `json:"asyncCommits,omitempty"`
}

// ReplicationDecision is a decision of the member controller. Kind is one of Bootstrap, Adopt, Steady, Repair,
// FailoverStarted, Failover, Switchover, Refused, Unobserved when the set could not be observed at all, or
// Restoring while the set waits for its restore Job.
//
// +kubebuilder:object:generate=false
type ReplicationDecision struct {
	Kind string `json:"kind"`
	// From and To are the Pods a failover or switchover moves the primary from and to.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Reason says why, in a sentence.
	Reason string `json:"reason,omitempty"`
}
