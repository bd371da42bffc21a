package v1alpha1

// Condition types of a MySQLCluster.
const (
	// ConditionReady is True when every placed member is Ready: a writable primary and every replica in sync.
	ConditionReady = "Ready"
	// ConditionPlaced is True when the placement resolved to at least one registered member and names no unknown
	// member.
	ConditionPlaced = "Placed"
	// ConditionProgressing is True while members are converging towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a member is unreachable, failed to apply, or the spec cannot be honoured.
	ConditionDegraded = "Degraded"
	// ConditionBackedUp is True while every member has a successful backup no older than two scheduled runs;
	// only with spec.backup (and not suspended).
	ConditionBackedUp = "BackedUp"
	// ConditionArchived is True while every member's binary-log archive is Archiving with no gap after its
	// newest backup; only with spec.backup.archive.
	ConditionArchived = "Archived"
)

// Condition types of one member in status.members[].conditions.
const (
	// MemberConditionReachable is True when the member's API server answers.
	MemberConditionReachable = "Reachable"
	// MemberConditionApplied is True when every object is applied as rendered.
	MemberConditionApplied = "Applied"
	// MemberConditionPodsReady is True when the member's StatefulSet has all its Pods ready (their servers
	// answer), whatever their role.
	MemberConditionPodsReady = "PodsReady"
	// MemberConditionReplicating is True when the member controller reports a writable primary and every other
	// server replicating from it in sync; Unknown while no member controller reports on the set.
	MemberConditionReplicating = "Replicating"
	// MemberConditionPrimaryAsRequested is set while spec.primaries names a Pod for the member: True when that
	// Pod is the primary, False while the switchover is under way (SwitchoverInProgress) or refused
	// (SwitchoverRefused, with the member controller's reason).
	MemberConditionPrimaryAsRequested = "PrimaryAsRequested"
	// MemberConditionReady is True when the Pods are ready and the set replicates (PodsReady and Replicating):
	// the database takes writes through <name>-primary and every replica serves <name>-replicas.
	MemberConditionReady = "Ready"
)

// Condition reasons. They are part of the API: tools match on them.
const (
	ReasonReady               = "AllMembersReady"
	ReasonNotReady            = "MembersNotReady"
	ReasonPlaced              = "Placed"
	ReasonNoMembers           = "NoMatchingMembers"
	ReasonUnknownMembers      = "UnknownMembers"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonInvalidSchedule     = "InvalidBackupSchedule"
	ReasonStorageShrink       = "StorageShrinkRefused"
	ReasonApplyFailed         = "ApplyFailed"
	ReasonApplied             = "Applied"
	ReasonUnreachable         = "MemberUnreachable"
	ReasonReachable           = "Reachable"
	ReasonConverging          = "Converging"
	ReasonConverged           = "Converged"
	ReasonPaused              = "Paused"
	ReasonHealthy             = "Healthy"
	ReasonMembersDegraded     = "MembersDegraded"
	ReasonDeleting            = "Deleting"
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonVolumeConflict: a PersistentVolumeClaim with a name the StatefulSet would use exists and belongs to
	// another MySQLCluster or to nobody; status.members[].conflicts names it.
	ReasonVolumeConflict = "VolumeConflict"
	// ReasonObjectConflict: an object other than a volume with a name this MySQLCluster needs exists and belongs
	// to another MySQLCluster or to nobody.
	ReasonObjectConflict = "ObjectConflict"
	// ReasonRegistrationRefused: the member's registration (kubeconfig or labels) was refused; nothing was sent.
	ReasonRegistrationRefused = "RegistrationRefused"
	ReasonPodsReady           = "PodsReady"
	ReasonPodsNotReady        = "PodsNotReady"
	// ReasonNoReport: no member controller has reported on this MySQLCluster's StatefulSet in the member (none
	// runs there, or it has not made its first pass).
	ReasonNoReport = "NoReplicationReport"
	// ReasonUnobserved: the member controller could not look at the servers (no credentials, or the StatefulSet
	// lacks the hub's contract annotations or carries one it cannot read: see contract.go).
	ReasonUnobserved = "ReplicationUnobserved"
	// ReasonNoPrimary: no server is the writable primary.
	ReasonNoPrimary = "NoWritablePrimary"
	// ReasonReplicasNotInSync: the primary writes, but not every replica replicates in sync.
	ReasonReplicasNotInSync = "ReplicasNotInSync"
	// ReasonErrantReplicas: replicas hold transactions the primary does not have; they are fenced.
	ReasonErrantReplicas = "ErrantReplicas"
	// ReasonWritesBlocked: the primary's commits wait for semi-sync acknowledgements no connected replica can
	// give; they return once a replica is back (semi-sync never falls back to asynchronous).
	ReasonWritesBlocked = "WritesBlocked"
	// ReasonDurabilityDegraded: under durability Preferred, the primary's semi-sync is off because no replica
	// can acknowledge; its commits return without a replica holding them, and a failover could lose them.
	ReasonDurabilityDegraded = "DurabilityDegraded"
	// ReasonBackupsCurrent and ReasonBackupsStale are the reasons of ConditionBackedUp.
	ReasonBackupsCurrent = "BackupsCurrent"
	ReasonBackupsStale   = "BackupsStale"
	// ReasonArchiving, ReasonArchiveBehind, ReasonArchiveGap and ReasonArchiveUnreported are the reasons of
	// ConditionArchived.
	ReasonArchiving         = "Archiving"
	ReasonArchiveBehind     = "ArchiveBehind"
	ReasonArchiveGap        = "ArchiveGap"
	ReasonArchiveUnreported = "ArchiveUnreported"
	// ReasonRestoring: no server takes writes until spec.restore's backup is loaded.
	ReasonRestoring = "Restoring"
	// ReasonReplicating: a writable primary and every replica in sync.
	ReasonReplicating = "Replicating"
	// ReasonSingleServer: one server, writable, with nothing to replicate to.
	ReasonSingleServer = "SingleServer"
	// ReasonServing: Pods ready and the set replicating.
	ReasonServing = "Serving"
	// ReasonPrimaryAsRequested: the Pod spec.primaries names is the primary.
	ReasonPrimaryAsRequested = "PrimaryAsRequested"
	// ReasonSwitchoverInProgress: the member controller is moving the primary to the requested Pod.
	ReasonSwitchoverInProgress = "SwitchoverInProgress"
	// ReasonSwitchoverRefused: the member controller refuses the requested switchover (target not in sync,
	// unhealthy or errant); the message says why.
	ReasonSwitchoverRefused = "SwitchoverRefused"
	// ReasonScaleDownPending: spec.replicas went down, and the member's StatefulSet keeps its Pods until the
	// member controller has made the set ready to lose them (ReplicasAnnotation, ReplicationReport.ScaleDownReady);
	// the message says how many Pods are held and what the member controller last reported.
	ReasonScaleDownPending = "ScaleDownPending"
)
