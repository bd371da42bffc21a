package render

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func withPhysicalBackups(c *v1alpha1.MySQLCluster) {
	c.Spec.Engine, c.Spec.Version = v1alpha1.EngineMariaDB, "10.11"
	c.Spec.Backup.Method = v1alpha1.BackupPhysical
}

func servicePortNames(svc *corev1ac.ServiceApplyConfiguration) []string {
	var names []string
	for _, p := range svc.Spec.Ports {
		names = append(names, *p.Name)
	}
	return names
}

// Physical backups: every database Pod runs the backup agent as a native sidecar (after the init container that
// copies the runner from the manager's image), reading the data volume read-only and logging in as the admin
// account on the administrative port; the primary and replicas Services publish it, and the backup Job asks
// them for the copy instead of dumping a server.
func TestPhysicalBackupsRunTheAgent(t *testing.T) {
	g := NewWithT(t)
	c := cluster(withBackup("H 2 * * *", s3Target("")), withPhysicalBackups)
	o, err := Render(c, awsMember, creds, WithRunnerImage("registry.example.com/mysqlfleet/manager:1.2.3"))
	g.Expect(err).NotTo(HaveOccurred())

	pod := o.StatefulSet.Spec.Template.Spec
	g.Expect(pod.InitContainers).To(HaveLen(2))
	install, agent := pod.InitContainers[0], pod.InitContainers[1]
	g.Expect(*install.Image).To(Equal("registry.example.com/mysqlfleet/manager:1.2.3"))
	g.Expect(install.RestartPolicy).To(BeNil(), "the runner is copied once, before the agent starts")
	g.Expect(*agent.Name).To(Equal(BackupAgentContainerName))
	g.Expect(*agent.RestartPolicy).To(Equal(corev1.ContainerRestartPolicyAlways), "a native sidecar")
	g.Expect(*agent.Image).To(Equal(*pod.Containers[0].Image), "the server's image, for its own mariadb-backup")
	g.Expect(agent.Command).To(Equal([]string{RunnerPath, "agent"}))
	g.Expect(*agent.Ports[0].ContainerPort).To(BeEquivalentTo(BackupAgentPort))
	env := envMap(agent.Env)
	g.Expect(*env["MYSQL_HOST"].Value).To(Equal("127.0.0.1"))
	g.Expect(*env["MYSQL_PORT"].Value).To(Equal("33062"), "the administrative port")
	g.Expect(*env["MYSQL_USER"].Value).To(Equal(v1alpha1.AdminUser))
	g.Expect(*env["MYSQL_PWD"].ValueFrom.SecretKeyRef.Key).To(Equal(v1alpha1.AdminPasswordKey))
	g.Expect(agent.EnvFrom).To(BeEmpty(), "no store credentials in the database Pod")
	mounts := map[string]bool{}
	for _, m := range agent.VolumeMounts {
		mounts[*m.Name+":"+*m.MountPath] = m.ReadOnly != nil && *m.ReadOnly
	}
	g.Expect(mounts).To(Equal(map[string]bool{"data:" + DataMountPath: true, "runner:/mysqlfleet": true,
		"backup-agent-tmp:/tmp": false}))
	g.Expect(*agent.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())

	g.Expect(servicePortNames(o.PrimaryService)).To(Equal([]string{PortName, BackupAgentPortName}))
	g.Expect(servicePortNames(o.ReplicasService)).To(Equal([]string{PortName, BackupAgentPortName}))
	g.Expect(servicePortNames(o.Service)).To(Equal([]string{PortName}), "the application's Service is SQL only")

	job := envMap(o.BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env)
	g.Expect(*job["BACKUP_METHOD"].Value).To(Equal("physical"))
	g.Expect(*job["BACKUP_AGENTS"].Value).To(Equal("orders-replicas:33064,orders-primary:33064"),
		"a replica's agent first, the primary's else")
	g.Expect(job).NotTo(HaveKey("MYSQL_HOST"))
	g.Expect(*job["MYSQL_PWD"].ValueFrom.SecretKeyRef.Key).To(Equal(v1alpha1.AdminPasswordKey), "for the agent's token")
}

// Logical backups, and no backups at all, leave the Pods and Services as they were before the agent existed:
// no Pod restarts for anyone who does not ask for physical backups.
func TestNoAgentWithoutPhysicalBackups(t *testing.T) {
	for name, c := range map[string]*v1alpha1.MySQLCluster{
		"logical":    cluster(withBackup("H 2 * * *", pvcTarget())),
		"no backups": cluster(),
		"MariaDB logical": cluster(withBackup("H 2 * * *", pvcTarget()), func(c *v1alpha1.MySQLCluster) {
			withPhysicalBackups(c)
			c.Spec.Backup.Method = v1alpha1.BackupLogical
		}),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := mustRender(t, c, awsMember)
			g.Expect(o.StatefulSet.Spec.Template.Spec.InitContainers).To(BeEmpty())
			g.Expect(servicePortNames(o.PrimaryService)).To(Equal([]string{PortName}))
			g.Expect(servicePortNames(o.ReplicasService)).To(Equal([]string{PortName}))
		})
	}
}
