// Package render builds, for one MySQLCluster and one member, every object that member needs, as server-side
// apply configurations.
//
// Everything here is pure: no client, no clock, no randomness, no logging. The same inputs always give
// DeepEqual outputs, because the controller compares them with what a member runs to skip applies that would
// change nothing. Passwords come in through Credentials and go only into the credentials Secret.
package render

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// Values of the app.kubernetes.io/component label.
const (
	// ComponentDatabase marks the MySQL objects and Pods.
	ComponentDatabase = "database"
	// ComponentBackup marks the backup CronJob, its Pods and the backup volume. Backup Pods must never carry
	// ComponentDatabase: the Services and the PodDisruptionBudget select on it.
	ComponentBackup = "backup"
	// ComponentRestore marks the restore Job and its Pod (spec.restore).
	ComponentRestore = "restore"
)

// Built-in storage classes, used when neither the MySQLCluster nor the member names one. They match the defaults
// of StorageClassByCloud, which the API server fills in; these cover objects that were never defaulted.
const (
	DefaultStorageClassAWS   = "gp3"
	DefaultStorageClassAzure = "managed-csi"
	DefaultStorageClassGCP   = "pd-ssd"
)

// MySQLPort is the port mysqld listens on and the Services expose.
const MySQLPort = 3306

// Credentials are the passwords the controller generated on the hub. They are the same in every member.
type Credentials struct {
	// RootPassword is MySQL's root password; always required.
	RootPassword string
	// Password is spec.user's password; required when spec.user is set and ignored otherwise.
	Password string
	// AdminPassword is the member controller's account's (v1alpha1.AdminUser); always required.
	AdminPassword string
	// ReplicationPassword is the replication account's (v1alpha1.ReplicationUser); always required.
	ReplicationPassword string
}

// Objects is everything one member needs for one MySQLCluster. All returns them in apply order.
type Objects struct {
	// Namespace is shared by every MySQLCluster of the same hub namespace, so it carries no cluster labels and
	// mysqlfleet never deletes it.
	Namespace       *corev1ac.NamespaceApplyConfiguration
	Secret          *corev1ac.SecretApplyConfiguration
	ConfigMap       *corev1ac.ConfigMapApplyConfiguration
	HeadlessService *corev1ac.ServiceApplyConfiguration
	// Service (<name>) and PrimaryService (<name>-primary) select the primary, ReplicasService
	// (<name>-replicas) the replicas in sync, by the role label the member controller sets on the Pods.
	Service             *corev1ac.ServiceApplyConfiguration
	PrimaryService      *corev1ac.ServiceApplyConfiguration
	ReplicasService     *corev1ac.ServiceApplyConfiguration
	StatefulSet         *appsv1ac.StatefulSetApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
	// BackupPVC is nil unless backups go to a PVC.
	BackupPVC *corev1ac.PersistentVolumeClaimApplyConfiguration
	// BackupCronJob is nil unless spec.backup is set.
	BackupCronJob *batchv1ac.CronJobApplyConfiguration
	// RestoreJob is nil unless spec.restore is set.
	RestoreJob *batchv1ac.JobApplyConfiguration
	// BackupNowJob is nil unless a backup was asked for now (WithBackupNow).
	BackupNowJob *batchv1ac.JobApplyConfiguration
}

// All returns the objects in the order they must be applied, leaving out the nil ones: the Namespace first, the
// Secret and ConfigMap before the StatefulSet whose Pods mount and read them, the governing headless Service
// before the StatefulSet, and the backup volume before the CronJob that mounts it.
func (o *Objects) All() []runtime.ApplyConfiguration {
	var all []runtime.ApplyConfiguration
	add := func(ac runtime.ApplyConfiguration, isNil bool) {
		if !isNil {
			all = append(all, ac)
		}
	}
	add(o.Namespace, o.Namespace == nil)
	add(o.Secret, o.Secret == nil)
	add(o.ConfigMap, o.ConfigMap == nil)
	add(o.HeadlessService, o.HeadlessService == nil)
	add(o.Service, o.Service == nil)
	add(o.PrimaryService, o.PrimaryService == nil)
	add(o.ReplicasService, o.ReplicasService == nil)
	add(o.StatefulSet, o.StatefulSet == nil)
	add(o.PodDisruptionBudget, o.PodDisruptionBudget == nil)
	add(o.BackupPVC, o.BackupPVC == nil)
	add(o.BackupCronJob, o.BackupCronJob == nil)
	add(o.RestoreJob, o.RestoreJob == nil)
	add(o.BackupNowJob, o.BackupNowJob == nil)
	return all
}

// ErrInvalid is wrapped by every error Render returns for a MySQLCluster, member or credentials it cannot render;
// the controller reports these as a condition instead of retrying. Schedule errors are also *ScheduleError.
var ErrInvalid = errors.New("cannot render")

// Option adds an input of Render beyond the MySQLCluster, the member and the credentials.
type Option func(*inputs)

type inputs struct {
	runnerImage string
	restore     *RestoreSource
	backupNow   *time.Time
	// heldReplicas, when above spec.replicas, is the StatefulSet's replicas (WithHeldReplicas).
	heldReplicas int32
	// primaryEndpoints renders the primary's Services without a selector (WithPrimaryEndpoints).
	primaryEndpoints bool
}

// WithBackupNow adds a Job that runs the backup CronJob's Job once, for a backup asked for at t.
func WithBackupNow(t time.Time) Option { return func(in *inputs) { in.backupNow = &t } }

// WithRunnerImage is the image the backup and restore Jobs copy the backup runner from: the manager's own.
// Default DefaultRunnerImage.
func WithRunnerImage(image string) Option { return func(in *inputs) { in.runnerImage = image } }

// WithHeldReplicas makes the StatefulSet keep n Pods instead of spec.replicas while the member controller
// prepares the set to lose the Pods at and above spec.replicas; ReplicasAnnotation still says spec.replicas, the
// number it prepares for. An n not above spec.replicas changes nothing: holding never removes Pods.
func WithHeldReplicas(n int32) Option { return func(in *inputs) { in.heldReplicas = n } }

// WithPrimaryEndpoints renders the primary's Services (<name>, <name>-primary) without a selector, for a
// member controller that writes their EndpointSlices (v1alpha1.ReplicationReport.PrimaryEndpoints).
func WithPrimaryEndpoints() Option { return func(in *inputs) { in.primaryEndpoints = true } }

// WithRestore is where spec.restore's backup is for this member, as the hub resolved it; required when
// spec.restore is set.
func WithRestore(r *RestoreSource) Option { return func(in *inputs) { in.restore = r } }

// Render builds the objects member m needs for c. It fails on input the API server should have refused or the
// controller should have completed (missing names, UID, passwords, unknown cloud, invalid backup schedule, a
// restore whose source was not resolved).
func Render(c *v1alpha1.MySQLCluster, m placement.Member, creds Credentials, opts ...Option) (*Objects, error) {
	in := inputs{runnerImage: DefaultRunnerImage}
	for _, o := range opts {
		o(&in)
	}
	if err := validate(c, m, creds); err != nil {
		return nil, err
	}
	if c.Spec.Restore != nil && in.restore == nil {
		return nil, fmt.Errorf("%w: spec.restore is set but its source was not resolved", ErrInvalid)
	}
	cnf, err := myCnf(c)
	if err != nil {
		return nil, err
	}
	sec, err := secret(c, m, creds)
	if err != nil {
		return nil, err
	}
	o := &Objects{
		Namespace:           namespace(c, m),
		Secret:              sec,
		ConfigMap:           configMap(c, m, cnf),
		HeadlessService:     headlessService(c, m),
		Service:             service(c, m, c.ServiceName(), v1alpha1.RolePrimary, in.primaryEndpoints),
		PrimaryService:      service(c, m, c.PrimaryServiceName(), v1alpha1.RolePrimary, in.primaryEndpoints),
		ReplicasService:     service(c, m, c.ReplicasServiceName(), v1alpha1.RoleReplica, false),
		StatefulSet:         statefulSet(c, m, cnf, in.heldReplicas, in.runnerImage),
		PodDisruptionBudget: podDisruptionBudget(c, m),
	}
	if PhysicalBackups(c) {
		// The backup Job reaches the agent of a replica in sync, or the primary's, through their Services.
		o.PrimaryService.Spec.WithPorts(backupAgentServicePort())
		o.ReplicasService.Spec.WithPorts(backupAgentServicePort())
	}
	if c.Spec.Backup != nil {
		schedule, err := BackupSchedule(c, m.Name)
		if err != nil {
			return nil, err
		}
		if c.Spec.Backup.Target.PVC != nil {
			o.BackupPVC = backupPVC(c, m)
		}
		o.BackupCronJob = backupCronJob(c, m, schedule, in.runnerImage)
		if in.backupNow != nil {
			// From a CronJob of its own: the Job's spec is changed (a TTL), and must not be the CronJob's.
			o.BackupNowJob = backupNowJob(backupCronJob(c, m, schedule, in.runnerImage), c, *in.backupNow)
		}
	}
	if c.Spec.Restore != nil {
		o.RestoreJob = restoreJob(c, m, in.restore, in.runnerImage)
		// The member controller holds every server read-only until this Job has loaded the backup.
		o.StatefulSet.WithAnnotations(map[string]string{v1alpha1.RestoreJobAnnotation: c.RestoreJobName()})
	}
	return o, nil
}

func validate(c *v1alpha1.MySQLCluster, m placement.Member, creds Credentials) error {
	if c == nil {
		return fmt.Errorf("%w: MySQLCluster is nil", ErrInvalid)
	}
	switch {
	case c.Name == "" || c.Namespace == "":
		return fmt.Errorf("%w: MySQLCluster needs a name and a namespace", ErrInvalid)
	case c.UID == "":
		// The UID label is how teardown tells this object's member objects from a predecessor's.
		return fmt.Errorf("%w: MySQLCluster %s/%s has no UID: render objects read from the API server", ErrInvalid,
			c.Namespace, c.Name)
	case m.Name == "":
		return fmt.Errorf("%w: member has no name", ErrInvalid)
	case c.Spec.Image == "" && c.Spec.Version == "":
		return fmt.Errorf("%w: spec.version or spec.image is required", ErrInvalid)
	case engine(c) != v1alpha1.EngineMySQL && engine(c) != v1alpha1.EngineMariaDB:
		return fmt.Errorf("%w: unknown engine %q", ErrInvalid, c.Spec.Engine)
	case creds.RootPassword == "":
		return fmt.Errorf("%w: the root password is empty", ErrInvalid)
	case creds.AdminPassword == "" || creds.ReplicationPassword == "":
		return fmt.Errorf("%w: the admin or replication password is empty", ErrInvalid)
	case c.Spec.User != "" && creds.Password == "":
		return fmt.Errorf("%w: spec.user %q is set but its password is empty", ErrInvalid, c.Spec.User)
	case StorageClass(c, m) == "":
		return fmt.Errorf("%w: member %s has unknown cloud %q and no storage class is set", ErrInvalid, m.Name,
			m.Cloud)
	}
	if b := c.Spec.Backup; b != nil {
		t := b.Target
		n := 0
		for _, set := range []bool{t.PVC != nil, t.S3 != nil, t.GCS != nil, t.AzureBlob != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%w: backup.target needs exactly one of pvc, s3, gcs or azureBlob", ErrInvalid)
		}
		if t.PVC != nil && BackupStorageClass(c, m) == "" {
			return fmt.Errorf("%w: member %s has unknown cloud %q and no backup storage class is set", ErrInvalid,
				m.Name, m.Cloud)
		}
	}
	return nil
}

// Labels are the labels that name the hub object on every object mysqlfleet writes into member (except the
// shared Namespace). Member events map back to the hub object by them, and teardown finds objects by them.
func Labels(c *v1alpha1.MySQLCluster, member string) map[string]string {
	return map[string]string{
		v1alpha1.ManagedByLabel:        v1alpha1.ManagedByValue,
		v1alpha1.NameLabel:             v1alpha1.NameValue,
		v1alpha1.InstanceLabel:         c.Name,
		v1alpha1.ClusterNameLabel:      c.Name,
		v1alpha1.ClusterNamespaceLabel: c.Namespace,
		v1alpha1.ClusterUIDLabel:       string(c.UID),
		v1alpha1.MemberLabel:           member,
	}
}

// Selector is the label selector of the MySQL Pods, and also their whole set of Pod template labels. It leaves
// out the UID and the member on purpose: a StatefulSet's selector is immutable, and a label that changes when
// the hub object is recreated would make every apply fail (selector) or roll every Pod (template).
func Selector(c *v1alpha1.MySQLCluster) map[string]string {
	return map[string]string{
		v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue,
		v1alpha1.NameLabel:      v1alpha1.NameValue,
		v1alpha1.InstanceLabel:  c.Name,
		v1alpha1.ComponentLabel: ComponentDatabase,
	}
}

// DataVolumeLabels are the labels of the data PersistentVolumeClaims: the Pods' selector plus the hub object's
// names and UID and the member.
func DataVolumeLabels(c *v1alpha1.MySQLCluster, member string) map[string]string {
	l := Selector(c)
	l[v1alpha1.ClusterNameLabel] = c.Name
	l[v1alpha1.ClusterNamespaceLabel] = c.Namespace
	l[v1alpha1.ClusterUIDLabel] = string(c.UID)
	l[v1alpha1.MemberLabel] = member
	return l
}

// DataVolumeClaimNames are the names of the data claims the StatefulSet's Pods use, ordinal by ordinal.
func DataVolumeClaimNames(c *v1alpha1.MySQLCluster) []string {
	names := make([]string, replicas(c))
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%d", v1alpha1.DataVolumeName, c.StatefulSetName(), i)
	}
	return names
}

// objectLabels are Labels plus the component.
func objectLabels(c *v1alpha1.MySQLCluster, member, component string) map[string]string {
	l := Labels(c, member)
	l[v1alpha1.ComponentLabel] = component
	return l
}

// StorageClass is the class of the data volumes in member m, in order of precedence: spec.storage.storageClassName,
// the member's storage class annotation, spec.storage.storageClassByCloud for the member's cloud, then the built-in
// default for that cloud. It is empty only for a member of an unknown cloud without any override.
func StorageClass(c *v1alpha1.MySQLCluster, m placement.Member) string {
	return storageClass(c.Spec.Storage.StorageClassName, c.Spec.Storage.StorageClassByCloud, m)
}

// BackupStorageClass is the class of the backup volume in member m, with the same precedence as StorageClass but
// taken from spec.backup.target.pvc. It is empty when backups do not go to a PVC.
func BackupStorageClass(c *v1alpha1.MySQLCluster, m placement.Member) string {
	if c.Spec.Backup == nil || c.Spec.Backup.Target.PVC == nil {
		return ""
	}
	t := c.Spec.Backup.Target.PVC
	return storageClass(t.StorageClassName, t.StorageClassByCloud, m)
}

func storageClass(name *string, byCloud v1alpha1.StorageClassByCloud, m placement.Member) string {
	if name != nil && *name != "" {
		return *name
	}
	if m.StorageClassOverride != "" {
		return m.StorageClassOverride
	}
	switch m.Cloud {
	case v1alpha1.CloudAWS:
		return orDefault(byCloud.AWS, DefaultStorageClassAWS)
	case v1alpha1.CloudAzure:
		return orDefault(byCloud.Azure, DefaultStorageClassAzure)
	case v1alpha1.CloudGCP:
		return orDefault(byCloud.GCP, DefaultStorageClassGCP)
	}
	return ""
}

// Image is the server image: spec.image, or the engine's official image of spec.version (mysql:<version>,
// mariadb:<version>). Another image must work like the official one: docker-entrypoint.sh on PATH, the mysql user
// as uid 999, /etc/mysql/conf.d included, MYSQL_ROOT_PASSWORD and friends honoured.
func Image(c *v1alpha1.MySQLCluster) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	if engine(c) == v1alpha1.EngineMariaDB {
		return "mariadb:" + c.Spec.Version
	}
	return "mysql:" + c.Spec.Version
}

// engine is spec.engine, MySQL when the API server has not defaulted it.
func engine(c *v1alpha1.MySQLCluster) v1alpha1.Engine {
	return orDefault(c.Spec.Engine, v1alpha1.EngineMySQL)
}

// flavor is the engine's SQL and tools (internal/mysql): the dump command comes from there.
func flavor(c *v1alpha1.MySQLCluster) mysql.Flavor {
	f, err := mysql.FlavorFor(mysql.Engine(engine(c)))
	if err != nil {
		panic(err) // the API's enum allows no other engine, and validate refuses one
	}
	return f
}

// binaries are the names of the server and its admin client in the engine's official image. MariaDB 11 images
// have no mysql* names any more.
func binaries(c *v1alpha1.MySQLCluster) (server, admin string) {
	if engine(c) == v1alpha1.EngineMariaDB {
		return "mariadbd", "mariadb-admin"
	}
	return "mysqld", "mysqladmin"
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func namespace(c *v1alpha1.MySQLCluster, m placement.Member) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(c.Namespace).WithLabels(map[string]string{
		v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue,
		v1alpha1.MemberLabel:    m.Name,
	})
}

// secret holds the passwords in data rather than stringData: stringData is write-only, so a live Secret would never
// look like the desired one and every pass would re-apply it. It also holds the script that creates the member
// controller's and replication's accounts, and spec.database and spec.user, on every server at first start,
// out of the binary log (see v1alpha1.InitScriptKey and mysql.InitScript).
func secret(c *v1alpha1.MySQLCluster, m placement.Member, creds Credentials) (*corev1ac.SecretApplyConfiguration, error) {
	users := []mysql.User{
		{Kind: mysql.AdminUser, Name: v1alpha1.AdminUser, Password: creds.AdminPassword},
		{Kind: mysql.ReplicationUser, Name: v1alpha1.ReplicationUser, Password: creds.ReplicationPassword},
	}
	var databases []string
	if c.Spec.Database != "" {
		databases = append(databases, c.Spec.Database)
	}
	if c.Spec.User != "" {
		users = append(users, mysql.User{Kind: mysql.ApplicationUser, Name: c.Spec.User, Password: creds.Password,
			Database: c.Spec.Database})
	}
	script, err := mysql.InitScript(flavor(c), databases, users...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	data := map[string][]byte{
		v1alpha1.RootPasswordKey:        []byte(creds.RootPassword),
		v1alpha1.AdminPasswordKey:       []byte(creds.AdminPassword),
		v1alpha1.ReplicationPasswordKey: []byte(creds.ReplicationPassword),
		v1alpha1.InitScriptKey:          []byte(script),
	}
	if c.Spec.User != "" {
		data[v1alpha1.PasswordKey] = []byte(creds.Password)
	}
	return corev1ac.Secret(c.CredentialsSecretName(), c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentDatabase)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data), nil
}
