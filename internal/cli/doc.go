// Package cli is the mysqlfleet command line: it registers member clusters with the hub (join, unjoin) and shows
// the fleet as the manager reports it (members, get, plan). cmd/mysqlfleet only wires these functions into cobra
// commands; everything they do, and everything the tests check, lives here.
//
// join gives the hub a member credential that can do exactly what the manager does in a member and nothing
// more: a ServiceAccount in the member bound to a ClusterRole (or, with namespaces, to Roles) that allows the
// kinds in controllers.MemberObjects and no others. The kubeconfig it writes into the hub passes the same gate
// (internal/kubeconfig) that the manager applies to every registration Secret.
//
// get, plan and members only read what the manager wrote into MySQLCluster status; members also probes each
// member, but only with a kubeconfig the gate accepted. orphans searches members with those kubeconfigs too, for
// objects of MySQLCluster UIDs the hub does not know, and deletes them only when asked.
package cli

// Names and labels that join writes, in members and on the hub.
const (
	// DefaultFleetNamespace is the manager's namespace on the hub, where registration Secrets live.
	DefaultFleetNamespace = "mysqlfleet-system"
	// FieldManager is the server-side apply field manager of everything the CLI writes. It differs from the
	// manager's ("mysqlfleet") so that neither takes the other's fields.
	FieldManager = "mysqlfleet-cli"

	// MemberNamespace is the namespace in each member that holds the manager's ServiceAccount and its token.
	MemberNamespace = "mysqlfleet-system"
	// ServiceAccountName is the identity the manager acts as in a member.
	ServiceAccountName = "mysqlfleet-member"
	// RoleName names the ClusterRole, ClusterRoleBinding and (with namespaces) every Role and RoleBinding.
	RoleName = "mysqlfleet-member"
	// TokenSecretName is the ServiceAccount's long-lived token Secret. A TokenRequest token, used where no token
	// controller fills this Secret, is bound to it, so that deleting the Secret revokes either kind of token.
	TokenSecretName = "mysqlfleet-member-token"
)

// Labels on every object join writes into a member, so that unjoin (and a later join, pruning Roles of
// namespaces no longer listed) finds them. The managed-by value is not the manager's, whose member caches select
// managed-by=mysqlfleet: these objects are not the manager's to watch.
const (
	accessComponent = "member-access"
	managedByCLI    = FieldManager
)

func accessLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "mysqlfleet",
		"app.kubernetes.io/component":  accessComponent,
		"app.kubernetes.io/managed-by": managedByCLI,
	}
}

// accessSelector selects what accessLabels marks.
const accessSelector = "app.kubernetes.io/component=" + accessComponent + ",app.kubernetes.io/managed-by=" + managedByCLI

// serviceAccountUser is the user name the member's API server gives the manager's token.
const serviceAccountUser = "system:serviceaccount:" + MemberNamespace + ":" + ServiceAccountName
