package v1alpha1

// Condition types of a MySQLCluster.
const (
	// ConditionReady is True when every placed member runs all replicas ready.
	ConditionReady = "Ready"
	// ConditionPlaced is True when the placement resolved to at least one registered member and names no unknown
	// member.
	ConditionPlaced = "Placed"
	// ConditionProgressing is True while members are converging towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a member is unreachable, failed to apply, or the spec cannot be honoured.
	ConditionDegraded = "Degraded"
)

// Condition types of one member in status.members[].conditions.
const (
	// MemberConditionReachable is True when the member's API server answers.
	MemberConditionReachable = "Reachable"
	// MemberConditionApplied is True when every object is applied as rendered.
	MemberConditionApplied = "Applied"
	// MemberConditionReady is True when the member's StatefulSet has all replicas ready.
	MemberConditionReady = "Ready"
	// MemberConditionReplicating is True when the member's servers replicate from one primary. Until mysqlfleet
	// sets up replication it is False for replicas > 1: every Pod is an independent server, and only the Pod of
	// ordinal 0 serves the client Service.
	MemberConditionReplicating = "Replicating"
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
	ReasonStatefulSetNotReady = "StatefulSetNotReady"
	ReasonStatefulSetReady    = "StatefulSetReady"
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
	// ReasonNotReplicating: replicas > 1 are independent servers; replication between them is not set up yet.
	ReasonNotReplicating = "ReplicationNotConfigured"
	ReasonSingleServer   = "SingleServer"
)
