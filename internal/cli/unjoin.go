package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// UnjoinOptions say which member leaves the fleet.
type UnjoinOptions struct {
	Name string
	// Member is the administrator's access to the member, to remove the manager's access there.
	Member MemberFlags
	// HubOnly deletes the registration and leaves the member alone, e.g. for a member that no longer exists.
	HubOnly bool
	// ForgetPending deletes the member's pending teardown records too: the deletions of MySQLClusters that could
	// not reach it are then never finished there. For a member that is gone for good; by default they are kept,
	// and finished if the member is joined again.
	ForgetPending bool
}

// Unjoin removes a member from the fleet: first its registration Secret on the hub, which ends the manager's
// access at once, then the ServiceAccount, its token and its RBAC in the member. It deletes no database and
// cannot: once the registration is gone the manager has no way into the member, and the CLI removes only what
// join created. The member's mysqlfleet-system namespace stays, since it may hold other things (on a member
// that is also the hub, the manager itself).
func Unjoin(ctx context.Context, hub Hub, opts UnjoinOptions, out io.Writer) error {
	if opts.Name == "" {
		return errors.New("name the member to unjoin")
	}
	if out == nil {
		out = io.Discard
	}
	var mc *memberConn
	if !opts.HubOnly {
		var err error
		if mc, err = opts.Member.connect(hub); err != nil {
			return fmt.Errorf("%w (or --hub-only to leave the member as it is)", err)
		}
	}
	hc, err := hub.connect()
	if err != nil {
		return err
	}

	if placed := placedOn(ctx, hc, opts.Name); len(placed) > 0 {
		say(out, "warning: %d MySQLCluster(s) are placed on %s: %s.\n"+
			"  Their databases keep running there untouched; the manager will report %s as an unknown member.\n",
			len(placed), opts.Name, strings.Join(placed, ", "), opts.Name)
	}
	secrets := hc.cs.CoreV1().Secrets(hub.namespace())
	switch err := secrets.Delete(ctx, opts.Name, metav1.DeleteOptions{}); {
	case apierrors.IsNotFound(err):
		say(out, "hub: no registration Secret %s/%s\n", hub.namespace(), opts.Name)
	case err != nil:
		return fmt.Errorf("failed to delete registration Secret %s/%s on the hub: %w", hub.namespace(), opts.Name, err)
	default:
		say(out, "hub: deleted registration Secret %s/%s; the manager can no longer reach %s\n",
			hub.namespace(), opts.Name, opts.Name)
	}
	if err := unjoinPending(ctx, hc, hub.namespace(), opts, out); err != nil {
		return err
	}
	if opts.HubOnly {
		say(out, "member: left as it is (--hub-only); ServiceAccount %s/%s and its RBAC remain there\n",
			MemberNamespace, ServiceAccountName)
		return nil
	}

	if err := removeAccess(ctx, mc); err != nil {
		return fmt.Errorf("%w (the hub no longer lists %s; run unjoin again to finish)", err, opts.Name)
	}
	say(out, "member: removed ServiceAccount %s/%s, its token and its RBAC; namespace %s is kept "+
		"(delete it yourself if nothing else lives there)\n", MemberNamespace, ServiceAccountName, MemberNamespace)
	return nil
}

// unjoinPending keeps the member's pending teardown records and says how many there are, or, asked to, deletes
// them. They are kept by default because a member unjoined may be joined again (after maintenance, or with a new
// credential), and then the deletions that were asked for while it was away must still be finished: forgetting
// them would leave those databases running there with nothing on the hub that mentions them. Only who knows that
// the member is gone for good should drop them.
func unjoinPending(ctx context.Context, hc *hubClients, namespace string, opts UnjoinOptions, out io.Writer) error {
	if opts.ForgetPending {
		n, err := forgetPending(ctx, hc, namespace, opts.Name)
		if err != nil {
			return err
		}
		if n > 0 {
			say(out, "hub: deleted %d pending teardown record(s) of %s (--forget-pending): those deletions will not be finished there\n",
				n, opts.Name)
		}
		return nil
	}
	if n := pendingTeardowns(ctx, hc, namespace)[opts.Name]; n > 0 {
		say(out, "hub: kept %d pending teardown record(s) of %s: if it is joined again, the deletions of those "+
			"MySQLClusters are finished there (unjoin --forget-pending drops them)\n", n, opts.Name)
	}
	return nil
}

// removeAccess deletes what join created in a member, bindings first so that access ends before the rest goes.
// Deleting the token Secret revokes its token and the TokenRequest tokens bound to it; deleting the
// ServiceAccount revokes any other token of it.
func removeAccess(ctx context.Context, mc *memberConn) error {
	rbac := mc.cs.RbacV1()
	var errs []error
	collect := func(what string, err error) {
		if client404(err) != nil {
			errs = append(errs, fmt.Errorf("failed to delete %s in the member: %w", what, err))
		}
	}
	collect("ClusterRoleBinding "+RoleName, rbac.ClusterRoleBindings().Delete(ctx, RoleName, metav1.DeleteOptions{}))
	list := metav1.ListOptions{LabelSelector: accessSelector}
	if bindings, err := rbac.RoleBindings(metav1.NamespaceAll).List(ctx, list); err != nil {
		collect("RoleBindings", err)
	} else {
		for _, b := range bindings.Items {
			collect("RoleBinding "+b.Namespace+"/"+b.Name, rbac.RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}))
		}
	}
	collect("ClusterRole "+RoleName, rbac.ClusterRoles().Delete(ctx, RoleName, metav1.DeleteOptions{}))
	if roles, err := rbac.Roles(metav1.NamespaceAll).List(ctx, list); err != nil {
		collect("Roles", err)
	} else {
		for _, r := range roles.Items {
			collect("Role "+r.Namespace+"/"+r.Name, rbac.Roles(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}))
		}
	}
	collect("Secret "+MemberNamespace+"/"+TokenSecretName,
		mc.cs.CoreV1().Secrets(MemberNamespace).Delete(ctx, TokenSecretName, metav1.DeleteOptions{}))
	collect("ServiceAccount "+MemberNamespace+"/"+ServiceAccountName,
		mc.cs.CoreV1().ServiceAccounts(MemberNamespace).Delete(ctx, ServiceAccountName, metav1.DeleteOptions{}))
	return errors.Join(errs...)
}

// placedOn lists the MySQLClusters whose status names the member, as namespace/name. It is advice only, so an
// error (no CRD, no permission) yields nothing.
func placedOn(ctx context.Context, hc *hubClients, member string) []string {
	var list v1alpha1.MySQLClusterList
	if err := hc.cl.List(ctx, &list); err != nil {
		return nil
	}
	var out []string
	for _, c := range list.Items {
		for _, m := range c.Status.Members {
			if m.Name == member {
				out = append(out, c.Namespace+"/"+c.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
