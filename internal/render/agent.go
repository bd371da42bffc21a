package render

import (
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// The backup agent of physical backups (spec.backup.method Physical; see internal/backup.Agent). mariadb-backup
// reads the data directory, which only the database Pod mounts, so every database Pod of such a MySQLCluster
// runs the agent as a native sidecar (an init container that restarts always): the backup runner, copied from
// the manager's image by an init container as in the backup Jobs, run as `mysqlfleet-backup agent` in the
// database image (whose mariadb-backup is the server's own version), with the data volume mounted read-only
// and the admin account over loopback. The backup Job asks the agent behind <name>-replicas, then
// <name>-primary, on BackupAgentPort, and stores what it streams back. The agent holds no store credentials.
//
// Adding or removing the agent changes the Pod template, so the Pods are restarted once (one at a time, by the
// StatefulSet's rolling update) when spec.backup.method changes to or from Physical.

const (
	// BackupAgentContainerName is the backup agent's container in a database Pod.
	BackupAgentContainerName = "backup-agent"
	// BackupAgentPortName names BackupAgentPort on the container and the primary and replicas Services.
	BackupAgentPortName = "backup-agent"
	// BackupAgentPort is where the agent listens.
	BackupAgentPort = 33064

	installRunnerContainerName = "install-runner"
	agentTmpVolumeName         = "backup-agent-tmp"
)

// PhysicalBackups tells whether c's backups are physical (and so whether its database Pods run the backup
// agent): spec.backup.method Physical, which the API allows for MariaDB only.
func PhysicalBackups(c *v1alpha1.MySQLCluster) bool {
	return c.Spec.Backup != nil && c.Spec.Backup.Method == v1alpha1.BackupPhysical &&
		engine(c) == v1alpha1.EngineMariaDB
}

// backupAgentAddrs are the agents a physical backup Job asks, in order: a replica in sync, else the primary.
func backupAgentAddrs(c *v1alpha1.MySQLCluster) string {
	port := ":" + strconv.Itoa(BackupAgentPort)
	return c.ReplicasServiceName() + port + "," + c.PrimaryServiceName() + port
}

// installRunner copies the backup runner from the manager's image (static, FROM scratch) into the runner volume.
func installRunner(runnerImage string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(installRunnerContainerName).
		WithImage(runnerImage).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("/mysqlfleet-backup", "install", RunnerPath).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(runnerVolumeName).WithMountPath(path.Dir(RunnerPath))).
		WithSecurityContext(containerSecurityContext().WithReadOnlyRootFilesystem(true))
}

// withBackupAgent adds the backup agent to the database Pod spec of c, whose image is image.
func withBackupAgent(c *v1alpha1.MySQLCluster, spec *corev1ac.PodSpecApplyConfiguration, image, runnerImage string) {
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	agent := corev1ac.Container().
		WithName(BackupAgentContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		// A native sidecar: started before the server, restarted whenever it ends, stopped after it.
		WithRestartPolicy(corev1.ContainerRestartPolicyAlways).
		WithCommand(RunnerPath, "agent").
		WithPorts(corev1ac.ContainerPort().WithName(BackupAgentPortName).WithContainerPort(BackupAgentPort).
			WithProtocol(corev1.ProtocolTCP)).
		WithEnv(
			value("BACKUP_ENGINE", string(engine(c))),
			// The admin account on the administrative port, over the Pod's loopback: it needs no Service and
			// stays open when application sessions fill max_connections.
			value("MYSQL_HOST", "127.0.0.1"),
			value("MYSQL_PORT", strconv.Itoa(AdminPort)),
			value("MYSQL_USER", v1alpha1.AdminUser),
			secretEnv("MYSQL_PWD", c.CredentialsSecretName(), v1alpha1.AdminPasswordKey),
			fieldEnv("POD_NAME", "metadata.name"),
			value("BACKUP_AGENT_LISTEN", ":"+strconv.Itoa(BackupAgentPort)),
			value("TMPDIR", "/tmp"),
			value("HOME", "/tmp"),
		).
		// The data directory is read, never written: mariadb-backup copies the files and asks the server for
		// its locks. Mounted where the server mounts it, so that the paths the server reports hold.
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(v1alpha1.DataVolumeName).WithMountPath(DataMountPath).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(runnerVolumeName).WithMountPath(path.Dir(RunnerPath)).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(agentTmpVolumeName).WithMountPath("/tmp"),
		).
		// Idle it holds a few MiB; during a copy mariadb-backup reads at disk speed and buffers little.
		WithResources(corev1ac.ResourceRequirements().WithRequests(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		})).
		WithSecurityContext(containerSecurityContext().WithReadOnlyRootFilesystem(true))
	spec.WithInitContainers(installRunner(runnerImage), agent).
		WithVolumes(
			corev1ac.Volume().WithName(runnerVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName(agentTmpVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		)
}

// backupAgentServicePort publishes the agent on the primary and replicas Services.
func backupAgentServicePort() *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().
		WithName(BackupAgentPortName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(BackupAgentPort).
		WithTargetPort(intstr.FromString(BackupAgentPortName))
}
