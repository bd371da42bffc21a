package render

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

const (
	// BackupContainerName is the container of the backup Job.
	BackupContainerName = "backup"
	// BackupMountPath is where backups are written: the backup PVC, or scratch space before an upload.
	BackupMountPath = "/backup"

	backupVolumeName = "backup"
	tmpVolumeName    = "tmp"
	defaultRetention = 7
)

// Backup scripts. They are plain POSIX sh, because the backup image may be the MySQL image or one that a user
// built around a cloud CLI. Kubernetes expands $(NAME) in command and args only when NAME is a variable of the
// container; every $( here is followed by a command or arithmetic, which names none.
//
// A dump is written as <name>-<UTC timestamp>.sql.gz; the fixed-width timestamp makes names sort by age, which the
// retention step relies on. $DUMP_COMMAND is the engine's consistent dump with its GTID position (mysqldump or
// mariadb-dump, from internal/mysql's flavor). A dump counts only when it finished: without pipefail (dash has
// none) a failing dump piped into gzip looks like success, so the script also checks the trailer that both tools
// write last.
const (
	backupScriptHead = `set -eu
(set -o pipefail) 2>/dev/null && set -o pipefail
`
	backupScriptDump = `file="$BACKUP_NAME-$(date -u +%Y%m%dT%H%M%SZ).sql.gz"
rm -f "$BACKUP_DIR"/*.partial
echo "Dumping $MYSQL_HOST to $file"
if ! $DUMP_COMMAND --host="$MYSQL_HOST" | gzip > "$BACKUP_DIR/$file.partial"; then
  last=failed
else
  last="$(gzip -dc "$BACKUP_DIR/$file.partial" | tail -n 1)"
fi
case "$last" in
"-- Dump completed"*) ;;
*) echo "the dump did not complete; no backup was kept" >&2; rm -f "$BACKUP_DIR/$file.partial"; exit 1 ;;
esac
mv "$BACKUP_DIR/$file.partial" "$BACKUP_DIR/$file"
`
	// backupScriptPrune keeps the newest $BACKUP_RETENTION backups named in $list (one name a line, any order),
	// deleting the others with delete_backup. Deletions read no stdin: a CLI that did would swallow the list.
	backupScriptPrune = `LC_ALL=C sort "$list" > "$list.sorted"
total=0
while read -r name; do total=$((total + 1)); done < "$list.sorted"
excess=$((total - BACKUP_RETENTION))
while read -r name; do
  if [ "$excess" -le 0 ]; then break; fi
  echo "Deleting old backup $name"
  delete_backup "$name" < /dev/null
  excess=$((excess - 1))
done < "$list.sorted"
`
	// backupScriptKeep writes to $list the names of this MySQLCluster's dumps found in $list.raw, a listing whose
	// lines end with a name after a space or a slash (a path, a URL, or aws s3 ls's "date time size name").
	backupScriptKeep = `: > "$list"
while read -r line; do
  name="${line##*[ /]}"
  case "$name" in "$BACKUP_NAME"-*.sql.gz) echo "$name" >> "$list" ;; esac
done < "$list.raw"
`
)

// backupScript is the whole script for the backup target: dump, store, keep the newest backups.
func backupScript(t v1alpha1.BackupTarget) string {
	var b strings.Builder
	b.WriteString(backupScriptHead)
	if cli := targetCLI(t); cli != "" {
		// Fail before dumping: the default image, the MySQL image, has no cloud CLI.
		fmt.Fprintf(&b, `command -v %[1]s > /dev/null || { echo "the backup image has no %[1]s command: set spec.backup.image to an image with sh, mysqldump, gzip and %[1]s" >&2; exit 1; }
`, cli)
	}
	b.WriteString(backupScriptDump)
	b.WriteString(`list="$HOME/backups"` + "\n")
	switch {
	case t.PVC != nil:
		b.WriteString(`echo "Kept $BACKUP_DIR/$file"
delete_backup() { rm -f -- "$BACKUP_DIR/$1"; }
: > "$list.raw"
for f in "$BACKUP_DIR/$BACKUP_NAME"-*.sql.gz; do
  if [ -e "$f" ]; then echo "$f" >> "$list.raw"; fi
done
`)
	case t.S3 != nil:
		// The aws CLI reads its credentials (AWS_ACCESS_KEY_ID and so on) from the environment.
		ep := ""
		if t.S3.Endpoint != "" {
			ep = ` --endpoint-url "$BACKUP_ENDPOINT"`
		}
		fmt.Fprintf(&b, `aws s3 cp%[1]s --only-show-errors "$BACKUP_DIR/$file" "s3://$BACKUP_BUCKET/$BACKUP_PREFIX/$file"
echo "Uploaded s3://$BACKUP_BUCKET/$BACKUP_PREFIX/$file"
delete_backup() { aws s3 rm%[1]s --only-show-errors "s3://$BACKUP_BUCKET/$BACKUP_PREFIX/$1"; }
aws s3 ls%[1]s "s3://$BACKUP_BUCKET/$BACKUP_PREFIX/" > "$list.raw"
`, ep)
	case t.GCS != nil:
		// gcloud storage rather than gsutil: gsutil is deprecated and can only take an endpoint from a boto file,
		// while gcloud reads CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE from the environment.
		b.WriteString(`gcloud storage cp "$BACKUP_DIR/$file" "gs://$BACKUP_BUCKET/$BACKUP_PREFIX/$file"
echo "Uploaded gs://$BACKUP_BUCKET/$BACKUP_PREFIX/$file"
delete_backup() { gcloud storage rm "gs://$BACKUP_BUCKET/$BACKUP_PREFIX/$1"; }
gcloud storage ls "gs://$BACKUP_BUCKET/$BACKUP_PREFIX/" > "$list.raw"
`)
	case t.AzureBlob != nil:
		// The az CLI reads AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or
		// AZURE_STORAGE_CONNECTION_STRING, from the environment.
		ep := ""
		if t.AzureBlob.Endpoint != "" {
			ep = ` --blob-endpoint "$BACKUP_ENDPOINT"`
		}
		fmt.Fprintf(&b, `az storage blob upload%[1]s --only-show-errors --output none --container-name "$BACKUP_CONTAINER" --name "$BACKUP_PREFIX/$file" --file "$BACKUP_DIR/$file"
echo "Uploaded $BACKUP_CONTAINER/$BACKUP_PREFIX/$file"
delete_backup() { az storage blob delete%[1]s --only-show-errors --output none --container-name "$BACKUP_CONTAINER" --name "$BACKUP_PREFIX/$1"; }
az storage blob list%[1]s --only-show-errors --container-name "$BACKUP_CONTAINER" --prefix "$BACKUP_PREFIX/" --num-results "*" --query "[].name" --output tsv > "$list.raw"
`, ep)
	}
	b.WriteString(backupScriptKeep)
	b.WriteString(backupScriptPrune)
	return b.String()
}

func targetCLI(t v1alpha1.BackupTarget) string {
	switch {
	case t.S3 != nil:
		return "aws"
	case t.GCS != nil:
		return "gcloud"
	case t.AzureBlob != nil:
		return "az"
	}
	return ""
}

// BackupPrefix is where a member's backups of c go in a bucket or container: the target's prefix, the member, the
// namespace and the name. The member comes first so that one member's backups can be listed, or given their own
// lifecycle rule, on their own. It is empty for a PVC target.
func BackupPrefix(c *v1alpha1.MySQLCluster, member string) string {
	if c.Spec.Backup == nil {
		return ""
	}
	var prefix string
	switch t := c.Spec.Backup.Target; {
	case t.S3 != nil:
		prefix = t.S3.Prefix
	case t.GCS != nil:
		prefix = t.GCS.Prefix
	case t.AzureBlob != nil:
		prefix = t.AzureBlob.Prefix
	default:
		return ""
	}
	parts := []string{}
	if p := strings.Trim(prefix, "/"); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(append(parts, member, c.Namespace, c.Name), "/")
}

// backupEnv configures the script. The root password is a reference to the credentials Secret; both dump tools
// read MYSQL_PWD (deprecated by MySQL but still honoured, and unlike a password option never visible in ps).
func backupEnv(c *v1alpha1.MySQLCluster, member string) []*corev1ac.EnvVarApplyConfiguration {
	b := c.Spec.Backup
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		// Ordinal 0, the Pod the client Service sends applications to.
		value("MYSQL_HOST", c.StatefulSetName()+"-0."+c.HeadlessServiceName()),
		secretEnv("MYSQL_PWD", c.CredentialsSecretName(), v1alpha1.RootPasswordKey),
		// Word-split by the script: the flavor's arguments hold no spaces.
		value("DUMP_COMMAND", strings.Join(flavor(c).DumpCommand(mysql.DumpOptions{User: "root"}), " ")),
		value("BACKUP_NAME", c.Name),
		value("BACKUP_DIR", BackupMountPath),
		value("BACKUP_RETENTION", strconv.Itoa(int(orDefault(b.Retention, defaultRetention)))),
		// Runs as a user without a home directory; the CLIs keep their configuration and caches under HOME.
		value("HOME", "/tmp"),
	}
	t := b.Target
	switch {
	case t.S3 != nil:
		env = append(env, value("BACKUP_BUCKET", t.S3.Bucket), value("BACKUP_PREFIX", BackupPrefix(c, member)))
		if t.S3.Endpoint != "" {
			env = append(env, value("BACKUP_ENDPOINT", t.S3.Endpoint))
		}
	case t.GCS != nil:
		env = append(env, value("BACKUP_BUCKET", t.GCS.Bucket), value("BACKUP_PREFIX", BackupPrefix(c, member)))
		if t.GCS.Endpoint != "" {
			env = append(env, value("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE", t.GCS.Endpoint))
		}
	case t.AzureBlob != nil:
		env = append(env, value("BACKUP_CONTAINER", t.AzureBlob.Container),
			value("BACKUP_PREFIX", BackupPrefix(c, member)))
		if t.AzureBlob.Endpoint != "" {
			env = append(env, value("BACKUP_ENDPOINT", t.AzureBlob.Endpoint))
		}
	}
	return env
}

// credentialsSecret is the Secret with the object store's credentials, or "" for a PVC target.
func credentialsSecret(t v1alpha1.BackupTarget) string {
	switch {
	case t.S3 != nil:
		return t.S3.CredentialsSecretRef.Name
	case t.GCS != nil:
		return t.GCS.CredentialsSecretRef.Name
	case t.AzureBlob != nil:
		return t.AzureBlob.CredentialsSecretRef.Name
	}
	return ""
}

// backupCronJob dumps every database from ordinal 0 on schedule (already H-expanded) and keeps the newest
// spec.backup.retention dumps, on the backup PVC or in the object store. For an object store the dump goes to an
// emptyDir first, so it needs node ephemeral storage of its compressed size; the image must bring the store's CLI
// (aws, gcloud or az) besides sh, mysqldump and gzip.
func backupCronJob(c *v1alpha1.MySQLCluster, m placement.Member, schedule string) *batchv1ac.CronJobApplyConfiguration {
	b := c.Spec.Backup
	image := orDefault(b.Image, Image(c))
	lbls := objectLabels(c, m.Name, ComponentBackup)

	container := corev1ac.Container().
		WithName(BackupContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", backupScript(b.Target)).
		WithEnv(backupEnv(c, m.Name)...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(backupVolumeName).WithMountPath(BackupMountPath),
			corev1ac.VolumeMount().WithName(tmpVolumeName).WithMountPath("/tmp"),
		).
		// Everything the script and the CLIs write goes to /backup or /tmp.
		WithSecurityContext(containerSecurityContext().WithReadOnlyRootFilesystem(true))
	if name := credentialsSecret(b.Target); name != "" {
		container.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(name)))
	}

	backupVolume := corev1ac.Volume().WithName(backupVolumeName)
	if b.Target.PVC != nil {
		backupVolume.WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().
			WithClaimName(c.BackupPVCName()))
	} else {
		backupVolume.WithEmptyDir(corev1ac.EmptyDirVolumeSource())
	}

	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(backupVolume, corev1ac.Volume().WithName(tmpVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource())).
		// Never: a retry gets a fresh Pod and scratch space, and the failed Pod's log stays for inspection.
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithSecurityContext(podSecurityContext()).
		WithEnableServiceLinks(false)

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
					WithTemplate(corev1ac.PodTemplateSpec().
						WithLabels(lbls).
						WithSpec(pod)))))
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
