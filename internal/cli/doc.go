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

import "github.com/mysqlfleet/mysqlfleet/internal/render"

// Names join writes, in members and on the hub. The objects join applies in a member are built by
// internal/render (join.go); these are its names, as the CLI's commands and tests use them.
const (
	// DefaultFleetNamespace is the manager's namespace on the hub, where registration Secrets live.
	DefaultFleetNamespace = "mysqlfleet-system"
	// FieldManager is the server-side apply field manager of everything the CLI writes.
	FieldManager = render.JoinFieldManager

	// MemberNamespace is the namespace in each member that holds the manager's ServiceAccount and its token.
	MemberNamespace = render.JoinNamespace
	// ServiceAccountName is the identity the manager acts as in a member.
	ServiceAccountName = render.HubServiceAccountName
	// RoleName names the hub's ClusterRole, ClusterRoleBinding and (with namespaces) every Role and RoleBinding.
	RoleName = render.HubRoleName
	// TokenSecretName is the ServiceAccount's long-lived token Secret.
	TokenSecretName = render.HubTokenSecretName
	// MemberControllerName names the member controller's Deployment, ServiceAccount and RBAC.
	MemberControllerName = render.MemberControllerName
)

// accessSelector selects the hub's access objects join writes into a member.
const accessSelector = render.AccessSelector

// serviceAccountUser is the user name the member's API server gives the manager's token.
const serviceAccountUser = "system:serviceaccount:" + MemberNamespace + ":" + ServiceAccountName
