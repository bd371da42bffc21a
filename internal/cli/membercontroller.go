package cli

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// The member controller (controllers/member) decides, inside each member, which server of each database is the
// primary, so that failover goes on when the hub cannot be reached. join installs it into the member, in
// MemberNamespace, with its own ServiceAccount and least-privilege RBAC, as a Deployment of two replicas with
// leader election, running mysqlfleet-member from the manager's image (render.MemberController builds them). It
// runs with the member's own credentials, not the hub's: the hub's credential needs no right to run workloads or
// grant RBAC, and it reads the controller's reports through the member's API server.

// DefaultMemberControllerImage is the manager's image of this CLI's version: mysqlfleet/manager:<version>, or
// mysqlfleet/manager:dev for a build without a module version (what make docker-build tags by default).
func DefaultMemberControllerImage() string {
	tag := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		tag = bi.Main.Version
	}
	return "mysqlfleet/manager:" + tag
}

// applyMemberController installs (or updates) the member controller in the member.
func (j *joiner) applyMemberController(ctx context.Context) error {
	o := render.MemberController(j.opts.MemberControllerImage)
	cs := j.mc.cs
	steps := []struct {
		what  string
		apply func() error
	}{
		{"ServiceAccount", func() error {
			_, err := cs.CoreV1().ServiceAccounts(MemberNamespace).Apply(ctx, o.ServiceAccount, applyOptions)
			return err
		}},
		{"ClusterRole", func() error { _, err := cs.RbacV1().ClusterRoles().Apply(ctx, o.ClusterRole, applyOptions); return err }},
		{"ClusterRoleBinding", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, o.ClusterRoleBinding, applyOptions)
			return err
		}},
		{"Role", func() error {
			_, err := cs.RbacV1().Roles(MemberNamespace).Apply(ctx, o.Role, applyOptions)
			return err
		}},
		{"RoleBinding", func() error {
			_, err := cs.RbacV1().RoleBindings(MemberNamespace).Apply(ctx, o.RoleBinding, applyOptions)
			return err
		}},
		{"Deployment", func() error {
			_, err := cs.AppsV1().Deployments(MemberNamespace).Apply(ctx, o.Deployment, applyOptions)
			return err
		}},
	}
	for _, s := range steps {
		if err := s.apply(); err != nil {
			return fmt.Errorf("failed to apply the member controller's %s in member %s: %w", s.what, j.opts.Name, err)
		}
	}
	say(j.out, "member: member controller %s/%s runs %s\n", MemberNamespace, MemberControllerName,
		j.opts.MemberControllerImage)
	return nil
}
