package mysqlcluster

import (
	"time"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// scope holds the inputs and findings of one reconcile of one MySQLCluster.
type scope struct {
	// cluster is the MySQLCluster; its status is rebuilt during the pass and written once at the end.
	cluster *v1alpha1.MySQLCluster
	// before is the status as read, to write only when something changed.
	before *v1alpha1.MySQLClusterStatus
	// only, if not nil, are the members this pass needs to look at: the others' rows are kept if they report this
	// generation applied (reconcileMembers).
	only map[string]bool
	// placed are the members the placement resolved to, engaged or not.
	placed []fleet.State
	// chosen are the names of the members in placed: departure is judged against them.
	chosen map[string]bool
	// registered are the names of the members registered when the placement was resolved: only those were judged
	// by it, so only those can have left it during this pass.
	registered map[string]bool
	// unknown are names in placement.members that are not registered.
	unknown []string
	// placementErr is an invalid memberSelector.
	placementErr error
	// specErr is a spec the API server accepted but mysqlfleet cannot honour (e.g. a bad backup schedule).
	specErr error
	// restore is where spec.restore's backups are, restoreErr why that cannot be told.
	restore    *restorePlan
	restoreErr error
	// creds are the generated passwords, the same for every member.
	creds render.Credentials
	// members are the per-member results, in placement order.
	members []v1alpha1.MemberStatus
	// retry asks for another pass soon: a member was unreachable or failed.
	retry bool
	// lookAgain is when a condition changes next with no event (a backup growing stale); zero for never.
	lookAgain time.Time
}
