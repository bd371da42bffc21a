package v1alpha1

// The contract between the hub and the member controller: what the hub (internal/render) tells the member
// controller (controllers/member) about each StatefulSet it writes into a member. It is written as annotations on
// the StatefulSet's own metadata, and the member controller reads it there and nowhere else: nothing is inferred
// from the Pod template (a container's command, image or environment), whose shape is render's to change. Not
// on the Pod template either: a change there would roll the Pods, and the member controller reads its Pods only
// for where they run and whether they are going away. Which StatefulSets are the member controller's at all is
// told by labels (ManagedByLabel and ClusterUIDLabel, in labels.go).
//
// Left out on purpose:
//   - a version: the member controller speaks to an engine (its SQL flavor), whatever the release;
//   - a server identity: an instance is the StatefulSet's Pod <name>-<ordinal>, and its data directory is told by
//     the server_id the server itself answers with (the Pod's start script gives every new data directory its
//     own and keeps it on the volume), so neither is the hub's to tell;
//   - the credentials Secret's keys: they are fixed (RootPasswordKey, AdminPasswordKey, ReplicationPasswordKey,
//     InitScriptKey).
//
// A StatefulSet that lacks a required annotation (EngineAnnotation, CredentialsSecretAnnotation) was written by a
// hub older than its member controller, and one whose value cannot be read by a newer or broken hub. Either way
// the member controller does not guess: it leaves the servers and the Pods' role labels as they are (so the set
// keeps its primary but is not failed over) and publishes a report of kind Unobserved naming the annotation,
// which the hub shows as the member's Replicating condition False with reason ReasonUnobserved. An upgraded hub
// adds the annotations with its next apply of the StatefulSet, on its metadata only, so no Pod restarts.

// Annotations the hub writes on every member StatefulSet; required.
const (
	// EngineAnnotation is the MySQLCluster's spec.engine: EngineMySQL or EngineMariaDB, spelled as in the API.
	// The member controller speaks that engine's SQL to the servers and runs its dump tool in seed Jobs.
	EngineAnnotation = "mysqlfleet.io/engine"
	// CredentialsSecretAnnotation is the name of the Secret, in the StatefulSet's namespace, that holds the
	// passwords under the keys of names.go (the MySQLCluster's CredentialsSecretName). The member controller reads
	// it live on every pass and hands it to its seed Jobs.
	CredentialsSecretAnnotation = "mysqlfleet.io/credentials-secret"
)

// Annotations the hub writes on a member StatefulSet when it asks for something; absent means no request.
// RebuildAnnotation (labels.go) is one of them too, holding the member's entries of its MySQLCluster's requests.
const (
	// PrimaryAnnotation requests a planned switchover (spec.primaries): its value is the ordinal of the Pod that
	// should be the primary ("1" for <name>-1). The member controller moves the primary there when the target is
	// a healthy replica in sync, and reports a refusal otherwise. Leaving the annotation set after the switch is
	// harmless; removing it means "whichever is primary". A value that is not an ordinal is reported as the
	// report's lastError, and no switchover is made.
	PrimaryAnnotation = "mysqlfleet.io/primary"
	// ReplicasAnnotation is the number of instances its MySQLCluster asks for (spec.replicas); the hub always
	// writes it. A StatefulSet that has more holds them until the member controller has made the set ready to
	// lose the ordinals at and above that number (ReplicationReport.ScaleDownReady): an acknowledged commit may
	// be held by one replica only (MariaDB takes one acknowledgement from any), and a scale-down that removed it,
	// or the primary, first could lose it. The hub writes spec.replicas down only then. Absent or not a count,
	// nothing is prepared.
	ReplicasAnnotation = "mysqlfleet.io/replicas"
	// DurabilityAnnotation is its MySQLCluster's spec.durability when that is Preferred (DurabilityPreferred);
	// absent means Required, so that StatefulSets written before it existed, and every Required one, carry
	// nothing new.
	DurabilityAnnotation = "mysqlfleet.io/durability"
	// ErrantServersAnnotation is its MySQLCluster's spec.errantServers when that is Fence (ErrantServersFence);
	// absent means RebuildWhenSafe.
	ErrantServersAnnotation = "mysqlfleet.io/errant-servers"
	// RestoreJobAnnotation names the Job that restores a backup into the Pod of ordinal 0 (spec.restore). Until
	// that Job has succeeded, the member controller makes no server writable: the set starts from the restored
	// data, and its replicas replicate it from the primary's binary log.
	RestoreJobAnnotation = "mysqlfleet.io/restore-job"
	// ArchiveAnnotation asks the member controller to archive the set's binary log (spec.backup.archive): an
	// ArchiveRequest as JSON. Absent means no archive: a running one is stopped, and what it stored is kept.
	ArchiveAnnotation = "mysqlfleet.io/archive"
)

// ArchiveRequest is where and how the member controller archives a set's binary log: the backup target, its
// key prefix in this member (the backups' own) and the Secret, in the StatefulSet's namespace, with the store's
// credentials under the keys the backup Jobs read from their environment.
//
// +kubebuilder:object:generate=false
type ArchiveRequest struct {
	// Target is s3, gcs or azblob, as the backup runner's --target.
	Target            string `json:"target"`
	Bucket            string `json:"bucket,omitempty"`
	Container         string `json:"container,omitempty"`
	Endpoint          string `json:"endpoint,omitempty"`
	Prefix            string `json:"prefix"`
	CredentialsSecret string `json:"credentialsSecret"`
	// MaxSegmentAge and MaxRecoveryPointAge are spec.backup.archive's, as Go durations.
	MaxSegmentAge       string `json:"maxSegmentAge"`
	MaxRecoveryPointAge string `json:"maxRecoveryPointAge"`
}
