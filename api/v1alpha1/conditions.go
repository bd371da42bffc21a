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
)
