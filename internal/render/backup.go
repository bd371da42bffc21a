package render

import (
	"path"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

const (
	// BackupContainerName is the container of the backup and restore Jobs that runs the backup runner.
	BackupContainerName = "backup"
	// BackupMountPath is where backups are written on a PVC target.
	BackupMountPath = "/backup"
	// RunnerPath is where the backup runner is copied into the Job's database image, from RunnerImage.
	RunnerPath = "/mysqlfleet/mysqlfleet-backup"
	// DefaultRunnerImage is the manager's image of a development build; the manager passes its own image
	// (--runner-image, set by the chart) so that the runner matches it.
	DefaultRunnerImage = "mysqlfleet/manager:dev"

	backupVolumeName      = "backup"
	credentialsVolumeName = "credentials"
	// CredentialsMountPath is where a backup or restore Job finds its target's credentials Secret as files.
	CredentialsMountPath = "/var/run/secrets/mysqlfleet/backup-credentials"
	runnerVolumeName     = "runner"
	tmpVolumeName        = "tmp"
	defaultRetention     = 7
	// restoreWait is how long a restore Job waits for the server of ordinal 0 to start.
	restoreWait = 30 * time.Minute
	// backupDeadline ends a backup Job that runs longer, so that a stuck run does not hold the schedule (Forbid)
	// forever. It is the runner's own bound, backup.DefaultMaxRunDuration, which the runner enforces itself
	// and on which its prune relies; a Job giving up cannot, as its Pod may run on on a lost node.
	backupDeadline = 24 * time.Hour
)

// BackupPrefix is where a member's backups of c go in a bucket or container: the target's prefix, the member, the
// namespace and the name. The member comes first so that one member's backups can be listed, or given their own
// lifecycle rule, on their own. It is empty for a PVC target.
func BackupPrefix(c *v1alpha1.MySQLCluster, member string) string {
	if c.Spec.Backup == nil {
		return ""
	}
	return TargetPrefix(c.Spec.Backup.Target, member, c.Namespace, c.Name)
}

// TargetPrefix is BackupPrefix for a target and a MySQLCluster named by namespace and name: also where a restore
// finds another MySQLCluster's backups.
func TargetPrefix(t v1alpha1.BackupTarget, member, namespace, name string) string {
	s, ok := objectStoreOf(t)
	if !ok {
		return ""
	}
	parts := []string{}
	if p := strings.Trim(s.prefix, "/"); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(append(parts, member, namespace, name), "/")
}

// objectStore is an object-store target's fields under the runner's names: kind is its --target; bucket (S3,
// GCS) or container (Azure Blob), endpoint and the target's own prefix; secret its credentials Secret.
type objectStore struct {
	kind, bucket, container, endpoint, prefix, secret string
}

// objectStoreOf is t's object store; false for a PVC target.
func objectStoreOf(t v1alpha1.BackupTarget) (objectStore, bool) {
	switch {
	case t.S3 != nil:
		return objectStore{kind: "s3", bucket: t.S3.Bucket, endpoint: t.S3.Endpoint, prefix: t.S3.Prefix,
			secret: t.S3.CredentialsSecretRef.Name}, true
	case t.GCS != nil:
		return objectStore{kind: "gcs", bucket: t.GCS.Bucket, endpoint: t.GCS.Endpoint, prefix: t.GCS.Prefix,
			secret: t.GCS.CredentialsSecretRef.Name}, true
	case t.AzureBlob != nil:
		return objectStore{kind: "azblob", container: t.AzureBlob.Container, endpoint: t.AzureBlob.Endpoint,
			prefix: t.AzureBlob.Prefix, secret: t.AzureBlob.CredentialsSecretRef.Name}, true
	}
	return objectStore{}, false
}

// targetEnv tells the runner where the backups are: the target kind and its bucket, container, endpoint and
// prefix (dir: the backup volume's mount).
func targetEnv(t v1alpha1.BackupTarget, prefix string) []*corev1ac.EnvVarApplyConfiguration {
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	s, ok := objectStoreOf(t)
	if !ok {
		if t.PVC == nil {
			return nil
		}
		return []*corev1ac.EnvVarApplyConfiguration{value("BACKUP_TARGET", "dir"), value("BACKUP_DIR", BackupMountPath)}
	}
	env := []*corev1ac.EnvVarApplyConfiguration{value("BACKUP_TARGET", s.kind)}
	if s.container != "" {
		env = append(env, value("BACKUP_CONTAINER", s.container))
	} else {
		env = append(env, value("BACKUP_BUCKET", s.bucket))
	}
	env = append(env, value("BACKUP_PREFIX", prefix))
	if s.endpoint != "" {
		env = append(env, value("BACKUP_ENDPOINT", s.endpoint))
	}
	return env
}

// backupEnv configures the runner for a backup: the engine, the servers to dump (the replicas' Service first,
// so that a replica in sync is dumped when there is one, then the primary's), the admin account (its password a
// reference to the credentials Secret; the runner hands it to the dump tool in a private option file), what
// the manifest records, the retention, and the report left in the termination message.
func backupEnv(c *v1alpha1.MySQLCluster, member string) []*corev1ac.EnvVarApplyConfiguration {
	b := c.Spec.Backup
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	env := []*corev1ac.EnvVarApplyConfiguration{value("BACKUP_ENGINE", string(engine(c)))}
	if PhysicalBackups(c) {
		// The copy is taken by the backup agent beside the server (agent.go); the Job stores it.
		env = append(env, value("BACKUP_METHOD", "physical"), value("BACKUP_AGENTS", backupAgentAddrs(c)))
	} else {
		env = append(env, value("MYSQL_HOST", c.ReplicasServiceName()+","+c.PrimaryServiceName()))
	}
	env = append(env,
		value("MYSQL_USER", v1alpha1.AdminUser),
		secretEnv("MYSQL_PWD", c.CredentialsSecretName(), v1alpha1.AdminPasswordKey),
		value("BACKUP_NAME", c.Name),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		value("BACKUP_MEMBER", member),
		value("BACKUP_RETENTION", strconv.Itoa(int(orDefault(b.Retention, defaultRetention)))),
		value("BACKUP_REPORT_FILE", corev1.TerminationMessagePathDefault),
		// The clouds' SDKs keep nothing on disk, but a user's credentials helper might.
		value("HOME", "/tmp"),
	)
	return append(env, targetEnv(b.Target, BackupPrefix(c, member))...)
}

func fieldEnv(name, path string) *corev1ac.EnvVarApplyConfiguration {
	// apiVersion is the server's default, stated because a fieldRef is atomic (see dataVolumeClaimTemplate).
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
		WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath(path)))
}

// credentialsSecret is the Secret with the object store's credentials, or "" for a PVC target.
func credentialsSecret(t v1alpha1.BackupTarget) string {
	s, _ := objectStoreOf(t)
	return s.secret
}

// runnerPod is the Pod of a backup or restore Job: an init container copies the backup runner from the
// manager's image (static, FROM scratch) into a shared volume, and the main container runs it inside the
// database image, whose dump tool or client it drives. Its outcome goes to the termination message.
func runnerPod(image, runnerImage string, args []string, env []*corev1ac.EnvVarApplyConfiguration,
	credentials string, backupVolume *corev1ac.VolumeApplyConfiguration, readOnlyBackup bool) *corev1ac.PodSpecApplyConfiguration {
	install := installRunner(runnerImage)
	container := corev1ac.Container().
		WithName(BackupContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(append([]string{RunnerPath}, args...)...).
		WithEnv(env...).
		WithTerminationMessagePolicy(corev1.TerminationMessageReadFile).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(runnerVolumeName).WithMountPath(path.Dir(RunnerPath)).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolumeName).WithMountPath("/tmp"),
		).
		// The runner writes only to /tmp (the tool's option file) and the backup volume.
		WithSecurityContext(containerSecurityContext().WithReadOnlyRootFilesystem(true))
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(runnerVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName(tmpVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	if backupVolume != nil {
		mount := corev1ac.VolumeMount().WithName(backupVolumeName).WithMountPath(BackupMountPath)
		if readOnlyBackup {
			mount.WithReadOnly(true) // false is the server's default, and would not compare equal if stated
		}
		container.WithVolumeMounts(mount)
		volumes = append(volumes, backupVolume)
	}
	if credentials != "" {
		// As variables (keys, connection strings), and as files under CredentialsMountPath for what must be a
		// file, such as a GCS service account key named by GOOGLE_APPLICATION_CREDENTIALS.
		container.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(credentials))).
			WithVolumeMounts(corev1ac.VolumeMount().WithName(credentialsVolumeName).WithMountPath(CredentialsMountPath).
				WithReadOnly(true))
		volumes = append(volumes, corev1ac.Volume().WithName(credentialsVolumeName).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(credentials).WithDefaultMode(0o440)))
	}
	return corev1ac.PodSpec().
		WithInitContainers(install).
		WithContainers(container).
		WithVolumes(volumes...).
		// Never: a retry gets a fresh Pod, and the failed Pod and its report stay for inspection.
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithSecurityContext(podSecurityContext()).
		WithEnableServiceLinks(false)
}

// backupCronJob takes a backup on schedule (already H-expanded) with the backup runner, from a replica in sync
// when there is one and from the primary otherwise, into the PVC or object store, and keeps the newest
// spec.backup.retention backups there. The runner streams the dump through gzip and SHA-256 straight into the
// store, so no scratch space is needed.
func backupCronJob(c *v1alpha1.MySQLCluster, m placement.Member, schedule, runnerImage string) *batchv1ac.CronJobApplyConfiguration {
	b := c.Spec.Backup
	lbls := objectLabels(c, m.Name, ComponentBackup)
	var backupVolume *corev1ac.VolumeApplyConfiguration
	if b.Target.PVC != nil {
		backupVolume = corev1ac.Volume().WithName(backupVolumeName).
			WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(c.BackupPVCName()))
	}
	pod := runnerPod(orDefault(b.Image, Image(c)), runnerImage, []string{"backup"}, backupEnv(c, m.Name),
		credentialsSecret(b.Target), backupVolume, false)

	return batchv1ac.CronJob(c.BackupCronJobName(), c.Namespace).
		WithLabels(lbls).
		WithSpec(batchv1ac.CronJobSpec().
			WithSchedule(schedule).
			// Forbid: two dumps at once would only load the server twice and race on retention.
			WithConcurrencyPolicy(batchv1.ForbidConcurrent).
			// A run missed by more than five minutes (controller down, member unreachable) is skipped rather
			// than started at an unexpected time.
			WithStartingDeadlineSeconds(300).
			WithSuspend(b.Suspend).
			WithSuccessfulJobsHistoryLimit(3).
			WithFailedJobsHistoryLimit(3).
			WithJobTemplate(batchv1ac.JobTemplateSpec().
				WithLabels(lbls).
				WithSpec(batchv1ac.JobSpec().
					WithBackoffLimit(2).
					WithActiveDeadlineSeconds(int64(backupDeadline.Seconds())).
					WithTemplate(corev1ac.PodTemplateSpec().
						WithLabels(lbls).
						WithSpec(pod)))))
}

// BackupNowJobName is the Job that takes a backup requested at t (v1alpha1.BackupNowAnnotation): at most 63
// characters, as a Job name must be for its Pods' job-name label.
func BackupNowJobName(c *v1alpha1.MySQLCluster, t time.Time) string {
	return c.BackupCronJobName() + "-" + strconv.FormatInt(t.Unix(), 10)
}

// backupNowJob is one run of the backup CronJob's Job, asked for at t. The member's TTL controller removes it an
// hour after it finished; by then the member controller has reported its outcome, and the manager, which
// renders it only while no outcome newer than t is reported, does not make it again.
func backupNowJob(cj *batchv1ac.CronJobApplyConfiguration, c *v1alpha1.MySQLCluster, t time.Time) *batchv1ac.JobApplyConfiguration {
	tmpl := cj.Spec.JobTemplate
	return batchv1ac.Job(BackupNowJobName(c, t), c.Namespace).
		WithLabels(tmpl.Labels).
		WithSpec(tmpl.Spec.WithTTLSecondsAfterFinished(3600))
}

// RestoreSource is where the backup spec.restore names lives, as the hub resolved it from the source
// MySQLCluster: the target, the prefix of the source member's backups there, and the backup ("" for the
// newest). For a PVC target, SourcePVC is the source's backup volume in this member.
type RestoreSource struct {
	Target    v1alpha1.BackupTarget
	Prefix    string
	Backup    string
	SourcePVC string
}

// restoreJob loads the backup into the server of ordinal 0 as the set's own history, once that server answers,
// as root (the dump recreates routines and views with their definers). The member controller makes no server
// writable before this Job succeeded; the replicas then replicate what it loaded. No retries: a restore that
// failed midway leaves a server to discard, and the MySQLCluster reports it.
func restoreJob(c *v1alpha1.MySQLCluster, m placement.Member, r *RestoreSource, runnerImage string) *batchv1ac.JobApplyConfiguration {
	lbls := objectLabels(c, m.Name, ComponentRestore)
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		value("BACKUP_ENGINE", string(engine(c))),
		value("MYSQL_HOST", c.StatefulSetName()+"-0."+c.HeadlessServiceName()),
		value("MYSQL_USER", "root"),
		secretEnv("MYSQL_PWD", c.CredentialsSecretName(), v1alpha1.RootPasswordKey),
		value("BACKUP_NEW_CLUSTER", "true"),
		value("BACKUP_WAIT", restoreWait.String()),
		value("BACKUP_REPORT_FILE", corev1.TerminationMessagePathDefault),
		value("HOME", "/tmp"),
	}
	if r.Backup != "" {
		env = append(env, value("BACKUP_RESTORE_NAME", r.Backup))
	}
	env = append(env, targetEnv(r.Target, r.Prefix)...)
	var backupVolume *corev1ac.VolumeApplyConfiguration
	if r.Target.PVC != nil {
		backupVolume = corev1ac.Volume().WithName(backupVolumeName).
			WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(r.SourcePVC).
				WithReadOnly(true))
	}
	pod := runnerPod(Image(c), runnerImage, []string{"restore"}, env, credentialsSecret(r.Target), backupVolume, true)
	return batchv1ac.Job(c.RestoreJobName(), c.Namespace).
		WithLabels(lbls).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(0).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(lbls).WithSpec(pod)))
}

// backupPVC is the backup volume of a PVC target. It is a plain PVC rather than a StatefulSet claim, so that it
// outlives the CronJob's Pods; the controller deletes it only under deletionPolicy Delete.
func backupPVC(c *v1alpha1.MySQLCluster, m placement.Member) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	t := c.Spec.Backup.Target.PVC
	return corev1ac.PersistentVolumeClaim(c.BackupPVCName(), c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentBackup)).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithStorageClassName(BackupStorageClass(c, m)).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: t.Size.DeepCopy()})))
}
