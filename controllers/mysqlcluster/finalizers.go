package mysqlcluster

import "strings"

const (
	// memberFinalizerPrefix starts a member's finalizer on a MySQLCluster; the member's name follows. A member's
	// finalizer says that the MySQLCluster may have objects there: it goes on before anything is written there
	// and stays while anything may remain (a member the placement left keeps its volumes).
	memberFinalizerPrefix = "member.mysqlfleet.io/"
	// legacyShardedFinalizer is the mark that the sharded replicas of earlier versions put on a MySQLCluster.
	// Sharding is gone (issue 43); the mark is taken off with the members' finalizers at deletion, so that a
	// MySQLCluster made by such a version can still be deleted.
	legacyShardedFinalizer = "mysqlfleet.io/sharded"
)

func memberFinalizer(member string) string { return memberFinalizerPrefix + member }

// isMemberFinalizer tells the finalizers that deletion takes off with the MySQLCluster's own: the members' and
// the legacy mark.
func isMemberFinalizer(f string) bool {
	return strings.HasPrefix(f, memberFinalizerPrefix) || f == legacyShardedFinalizer
}
