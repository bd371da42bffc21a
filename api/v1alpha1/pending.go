package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
)

// A pending teardown is what the hub still owes a member: the deletion of a MySQLCluster that could not be finished
// there (the member was not registered, or could not be reached before the MySQLCluster was released). It is a
// ConfigMap in the manager's namespace, one per deleted MySQLCluster and member, written before the MySQLCluster's
// finalizer comes off and deleted once the member has been cleaned as the deletion policy said. Everything in it is
// data: the MySQLCluster is gone, and its objects in the member are found by the UID alone.
const (
	// PendingTeardownLabel marks a pending teardown record; its value is "true". The record also carries
	// MemberLabel and ClusterUIDLabel, so that the records of one member or one UID are selected by label.
	PendingTeardownLabel = "mysqlfleet.io/pending-teardown"
	// Keys of a pending teardown record's data.
	PendingTeardownNamespaceKey = "namespace"
	PendingTeardownNameKey      = "name"
	PendingTeardownUIDKey       = "uid"
	PendingTeardownMemberKey    = "member"
	PendingTeardownPolicyKey    = "deletionPolicy"
)

// PendingTeardownName names the record of this MySQLCluster's teardown pending in a member:
// teardown.<uid>.<member>, or with a hash of the member's name where that would pass the 253 characters of a name.
func (c *MySQLCluster) PendingTeardownName(member string) string {
	name := "teardown." + string(c.UID) + "." + member
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(member))
	return "teardown." + string(c.UID) + "." + hex.EncodeToString(sum[:16])
}
