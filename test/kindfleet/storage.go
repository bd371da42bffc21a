package kindfleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	storagev1ac "k8s.io/client-go/applyconfigurations/storage/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mysqlfleet/mysqlfleet/test/provisioner"
)

const (
	storageNamespace = "mysqlfleet-kind-storage"
	storageName      = "local-path-provisioner"
	fieldManager     = "mysqlfleet-kindfleet"
	// kindDefaultClass is the class kind makes (provisioner kubernetes.io/host-path, which no controller serves
	// without kind's own storage images): the members get their clouds' classes instead.
	kindDefaultClass = "standard"
	volumeDir        = "/var/local-path"
)

// setUpStorage gives a member its cloud's StorageClasses (the definition's default marked as such) and the
// provisioner that serves them, one on each node, and waits until they run. The classes bind on first consumer,
// as clouds' block-storage classes do: a volume is made on the node the scheduler chose for its first Pod, and
// that Pod's successors stay on that node.
func setUpStorage(ctx context.Context, c *Cluster, image string) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	apply := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	// The classes are named after the cloud's CSI driver, as the local fleet's are; hack/kind/provisioner serves
	// them.
	driver := provisioner.ForCloud(c.Cloud)
	if err := cs.StorageV1().StorageClasses().Delete(ctx, kindDefaultClass, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for _, sc := range c.StorageClasses {
		ac := storagev1ac.StorageClass(sc.Name).
			WithProvisioner(driver).
			WithReclaimPolicy(corev1.PersistentVolumeReclaimDelete).
			WithVolumeBindingMode(storagev1.VolumeBindingWaitForFirstConsumer).
			WithAllowVolumeExpansion(true)
		if sc.Default {
			ac.WithAnnotations(map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
		}
		if _, err := cs.StorageV1().StorageClasses().Apply(ctx, ac, apply); err != nil {
			return fmt.Errorf("StorageClass %s in %s: %w", sc.Name, c.KindName, err)
		}
	}

	labels := map[string]string{"app.kubernetes.io/name": storageName, "app.kubernetes.io/part-of": "mysqlfleet-kind"}
	if _, err := cs.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace(storageNamespace), apply); err != nil {
		return err
	}
	if _, err := cs.CoreV1().ServiceAccounts(storageNamespace).Apply(ctx, corev1ac.ServiceAccount(storageName, storageNamespace), apply); err != nil {
		return err
	}
	rule := func(group string, resources []string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
		return rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resources...).WithVerbs(verbs...)
	}
	role := rbacv1ac.ClusterRole("mysqlfleet-kind-"+storageName).WithRules(
		rule("", []string{"persistentvolumes"}, "get", "list", "watch", "create", "update", "delete"),
		rule("", []string{"persistentvolumeclaims"}, "get", "list", "watch"),
		rule("", []string{"persistentvolumeclaims/status"}, "update", "patch"),
		rule("storage.k8s.io", []string{"storageclasses"}, "get", "list", "watch"),
	)
	if _, err := cs.RbacV1().ClusterRoles().Apply(ctx, role, apply); err != nil {
		return err
	}
	binding := rbacv1ac.ClusterRoleBinding("mysqlfleet-kind-" + storageName).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(*role.Name)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(storageName).WithNamespace(storageNamespace))
	if _, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, binding, apply); err != nil {
		return err
	}
	ds := appsv1ac.DaemonSet(storageName, storageNamespace).
		WithLabels(labels).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(storageName).
					WithTolerations(corev1ac.Toleration().WithOperator(corev1.TolerationOpExists)).
					WithContainers(corev1ac.Container().
						WithName("provisioner").
						WithImage(image).
						WithImagePullPolicy(corev1.PullIfNotPresent).
						WithArgs("--provisioner="+driver, "--base-dir="+volumeDir).
						WithEnv(corev1ac.EnvVar().WithName("NODE_NAME").WithValueFrom(corev1ac.EnvVarSource().
							WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("spec.nodeName")))).
						WithVolumeMounts(corev1ac.VolumeMount().WithName("volumes").WithMountPath(volumeDir))).
					WithVolumes(corev1ac.Volume().WithName("volumes").WithHostPath(corev1ac.HostPathVolumeSource().
						WithPath(volumeDir).WithType(corev1.HostPathDirectoryOrCreate))))))
	if _, err := cs.AppsV1().DaemonSets(storageNamespace).Apply(ctx, ds, apply); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().DaemonSets(storageNamespace).Get(ctx, storageName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.DesiredNumberScheduled == int32(len(c.all)) &&
			s.NumberReady == s.DesiredNumberScheduled && s.UpdatedNumberScheduled == s.DesiredNumberScheduled, nil
	})
}
