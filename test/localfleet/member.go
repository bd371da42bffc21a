package localfleet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/controllers/member"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// memberControllerNamespace is where `mysqlfleet join` installs the member controller.
const memberControllerNamespace = "mysqlfleet-system"

// StartMemberController runs a member's controller in this process until ctx ends, as `mysqlfleet join` would
// install it there (join is told --skip-member-controller: kwok's nodes run no container): its ServiceAccount
// and RBAC are created in the member and the controller acts as that ServiceAccount (impersonated with the
// admin credentials of cfg), so what it may do is what join grants. It reaches each Pod's server through
// resolve, the seam dbpods fills where production dials the Pod's IP. The returned channel yields the
// controller's end.
func StartMemberController(ctx context.Context, cfg *rest.Config, resolve member.Resolver) (<-chan error, error) {
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: memberControllerNamespace}}
	for _, o := range append([]client.Object{ns}, render.MemberControllerRBAC(memberControllerNamespace)...) {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to create the member controller's %T %s: %w", o, o.GetName(), err)
		}
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + memberControllerNamespace + ":" + render.MemberControllerName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + memberControllerNamespace,
			"system:authenticated"},
	}
	// Production's timings (cmd/member's defaults); one instance, so no leader election.
	mgr, err := member.New(as, member.Options{
		Namespace: memberControllerNamespace, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		MaxConcurrentReconciles: 4, Resolver: resolve, SkipControllerNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}
