package render

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func envMap(env []corev1ac.EnvVarApplyConfiguration) map[string]corev1ac.EnvVarApplyConfiguration {
	m := map[string]corev1ac.EnvVarApplyConfiguration{}
	for _, e := range env {
		m[*e.Name] = e
	}
	return m
}

func shells(t *testing.T) []string {
	var found []string
	for _, sh := range []string{"dash", "bash", "busybox"} {
		if p, err := exec.LookPath(sh); err == nil {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		t.Skip("no POSIX shell found")
	}
	return found
}

type scriptEnv struct {
	bin, store, log, backupDir, home string
}

func newScriptEnv(t *testing.T, fakes map[string]string) scriptEnv {
	t.Helper()
	root := t.TempDir()
	e := scriptEnv{
		bin: filepath.Join(root, "bin"), store: filepath.Join(root, "store"), log: filepath.Join(root, "log"),
		backupDir: filepath.Join(root, "backup"), home: filepath.Join(root, "home"),
	}
	for _, d := range []string{e.bin, e.store, e.log, e.backupDir, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(e.bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// run runs a container's sh -c script under shell with the container's literal env, the Secret's root password
// and the test's directories in place of the volumes.
func (e scriptEnv) run(shell string, ctr corev1ac.ContainerApplyConfiguration, extra ...string) (string, error) {
	cmd := exec.Command(shell, "-c", ctr.Command[2])
	if strings.HasSuffix(shell, "busybox") {
		cmd = exec.Command(shell, "sh", "-c", ctr.Command[2])
	}
	cmd.Env = []string{"PATH=" + e.bin + ":/usr/bin:/bin", "FAKE_LOG=" + e.log, "FAKE_STORE=" + e.store}
	for _, v := range ctr.Env {
		switch {
		case *v.Name == "BACKUP_DIR":
			cmd.Env = append(cmd.Env, "BACKUP_DIR="+e.backupDir)
		case *v.Name == "HOME":
			cmd.Env = append(cmd.Env, "HOME="+e.home)
		case v.Value != nil:
			cmd.Env = append(cmd.Env, *v.Name+"="+*v.Value)
		case v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil:
			cmd.Env = append(cmd.Env, *v.Name+"="+rootPassword)
		}
	}
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestBackupCronJob(t *testing.T) {
	g := NewWithT(t)
	c := cluster(withBackup("H 2 * * *", pvcTarget()))
	c.Spec.Backup.Suspend = true
	o, err := Render(c, awsMember, creds, WithRunnerImage("registry.example.com/mysqlfleet/manager:1.2.3"))
	g.Expect(err).NotTo(HaveOccurred())

	cj := o.BackupCronJob
	g.Expect(*cj.Name).To(Equal("orders-backup"))
	g.Expect(*cj.Spec.ConcurrencyPolicy).To(Equal(batchv1.ForbidConcurrent))
	g.Expect(*cj.Spec.SuccessfulJobsHistoryLimit).To(BeEquivalentTo(3))
	g.Expect(*cj.Spec.FailedJobsHistoryLimit).To(BeEquivalentTo(3))
	g.Expect(*cj.Spec.StartingDeadlineSeconds).To(BeEquivalentTo(300))
	g.Expect(*cj.Spec.Suspend).To(BeTrue())
	g.Expect(cj.Spec.TimeZone).To(BeNil())

	job := cj.Spec.JobTemplate.Spec
	g.Expect(*job.BackoffLimit).To(BeEquivalentTo(2))
	g.Expect(*job.ActiveDeadlineSeconds).To(BeEquivalentTo(24*3600), "the runner's own bound, backup.DefaultMaxRunDuration")
	pod := job.Template.Spec
	g.Expect(*pod.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*pod.SecurityContext.FSGroup).To(BeEquivalentTo(999), "the backup volume must be writable")

	// The runner comes from the manager's image, which has no shell: it copies itself.
	g.Expect(pod.InitContainers).To(HaveLen(1))
	install := pod.InitContainers[0]
	g.Expect(*install.Image).To(Equal("registry.example.com/mysqlfleet/manager:1.2.3"))
	g.Expect(install.Command).To(Equal([]string{"/mysqlfleet-backup", "install", RunnerPath}))

	ctr := pod.Containers[0]
	g.Expect(*ctr.Image).To(Equal("mysql:8.4"), "the server's image by default, for its dump tool")
	g.Expect(*ctr.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(ctr.Command).To(Equal([]string{RunnerPath, "backup"}))
	g.Expect(*ctr.TerminationMessagePolicy).To(Equal(corev1.TerminationMessageReadFile))
	g.Expect(ctr.EnvFrom).To(BeEmpty())
	env := envMap(ctr.Env)
	g.Expect(*env["BACKUP_ENGINE"].Value).To(Equal("MySQL"))
	g.Expect(*env["MYSQL_HOST"].Value).To(Equal("orders-replicas,orders-primary"), "a replica first, the primary else")
	g.Expect(*env["MYSQL_USER"].Value).To(Equal(v1alpha1.AdminUser))
	g.Expect(*env["MYSQL_PWD"].ValueFrom.SecretKeyRef.Name).To(Equal("orders-credentials"))
	g.Expect(*env["MYSQL_PWD"].ValueFrom.SecretKeyRef.Key).To(Equal(v1alpha1.AdminPasswordKey))
	g.Expect(*env["BACKUP_RETENTION"].Value).To(Equal("5"))
	g.Expect(*env["BACKUP_TARGET"].Value).To(Equal("dir"))
	g.Expect(*env["BACKUP_DIR"].Value).To(Equal(BackupMountPath))
	g.Expect(*env["BACKUP_MEMBER"].Value).To(Equal(awsMember.Name))
	g.Expect(*env["BACKUP_REPORT_FILE"].Value).To(Equal(corev1.TerminationMessagePathDefault))
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[*m.Name] = *m.MountPath
	}
	g.Expect(mounts).To(Equal(map[string]string{"runner": "/mysqlfleet", "tmp": "/tmp", "backup": BackupMountPath}))
	var claim string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = *v.PersistentVolumeClaim.ClaimName
		}
	}
	g.Expect(claim).To(Equal("orders-backup"))

	pvc := o.BackupPVC
	g.Expect(*pvc.Name).To(Equal("orders-backup"))
	g.Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	g.Expect((*pvc.Spec.Resources.Requests)[corev1.ResourceStorage]).To(Equal(resource.MustParse("50Gi")))
	g.Expect(*pvc.Spec.StorageClassName).To(Equal("st1"))

	// Retention defaults like the API server would.
	c.Spec.Backup.Retention = 0
	env = envMap(mustRender(t, c, awsMember).BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env)
	g.Expect(*env["BACKUP_RETENTION"].Value).To(Equal("7"))

	// A backup asked for now runs the same Job, with the same deadline.
	now, err := Render(c, awsMember, creds, WithBackupNow(time.Unix(1795000000, 0)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now.BackupNowJob.Spec.ActiveDeadlineSeconds).To(Equal(job.ActiveDeadlineSeconds))
}

func TestBackupCronJobObjectStores(t *testing.T) {
	tests := []struct {
		name   string
		target v1alpha1.BackupTarget
		secret string
		env    map[string]string
	}{
		{name: "s3 with endpoint", target: s3Target("https://minio.example.com"), secret: "s3-credentials",
			env: map[string]string{"BACKUP_TARGET": "s3", "BACKUP_BUCKET": "fleet-backups",
				"BACKUP_PREFIX": "mysql/aws-eu-west-1/demo/orders", "BACKUP_ENDPOINT": "https://minio.example.com"}},
		{name: "s3 without endpoint", target: s3Target(""), secret: "s3-credentials",
			env: map[string]string{"BACKUP_TARGET": "s3", "BACKUP_BUCKET": "fleet-backups",
				"BACKUP_PREFIX": "mysql/aws-eu-west-1/demo/orders"}},
		{name: "gcs", target: gcsTarget("https://storage.example.com"), secret: "gcs-credentials",
			env: map[string]string{"BACKUP_TARGET": "gcs", "BACKUP_BUCKET": "fleet-backups",
				"BACKUP_PREFIX": "aws-eu-west-1/demo/orders", "BACKUP_ENDPOINT": "https://storage.example.com"}},
		{name: "azure blob", target: azureTarget("https://acct.blob.core.windows.net"), secret: "azure-credentials",
			env: map[string]string{"BACKUP_TARGET": "azblob", "BACKUP_CONTAINER": "fleet-backups",
				"BACKUP_PREFIX": "prod/aws-eu-west-1/demo/orders", "BACKUP_ENDPOINT": "https://acct.blob.core.windows.net"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := cluster(withBackup("@daily", tt.target), withBackupImage("registry.example.com/backup:1"))
			o := mustRender(t, c, awsMember)
			g.Expect(o.BackupPVC).To(BeNil())
			pod := o.BackupCronJob.Spec.JobTemplate.Spec.Template.Spec
			for _, v := range pod.Volumes {
				g.Expect(v.PersistentVolumeClaim).To(BeNil(), "the dump streams straight into the store")
			}
			ctr := pod.Containers[0]
			g.Expect(*ctr.Image).To(Equal("registry.example.com/backup:1"))
			g.Expect(ctr.EnvFrom).To(HaveLen(1))
			g.Expect(*ctr.EnvFrom[0].SecretRef.Name).To(Equal(tt.secret))
			env := envMap(ctr.Env)
			for k, v := range tt.env {
				g.Expect(env).To(HaveKey(k))
				g.Expect(*env[k].Value).To(Equal(v), k)
			}
			g.Expect(BackupPrefix(c, awsMember.Name)).To(Equal(tt.env["BACKUP_PREFIX"]))
		})
	}
}

// spec.restore renders a Job that loads the resolved backup into ordinal 0, once, as root and as the set's own
// history, and marks the StatefulSet so that the member controller waits for it.
func TestRestoreJob(t *testing.T) {
	g := NewWithT(t)
	c := cluster()
	c.Spec.Restore = &v1alpha1.Restore{Source: v1alpha1.RestoreSource{Cluster: "old"}}
	_, err := Render(c, awsMember, creds)
	g.Expect(err).To(MatchError(ContainSubstring("not resolved")))

	src := &RestoreSource{Target: s3Target("https://minio.example.com"), Prefix: "mysql/aws-eu-west-1/demo/old",
		Backup: "20261124T051538123Z"}
	o, err := Render(c, awsMember, creds, WithRestore(src))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.StatefulSet.Annotations).To(HaveKeyWithValue(v1alpha1.RestoreJobAnnotation, "orders-restore"))
	job := o.RestoreJob
	g.Expect(*job.Name).To(Equal("orders-restore"))
	g.Expect(*job.Spec.BackoffLimit).To(BeEquivalentTo(0), "a restore that failed midway is not retried over itself")
	ctr := job.Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Command).To(Equal([]string{RunnerPath, "restore"}))
	env := envMap(ctr.Env)
	g.Expect(*env["MYSQL_HOST"].Value).To(Equal("orders-0.orders-headless"))
	g.Expect(*env["MYSQL_USER"].Value).To(Equal("root"))
	g.Expect(*env["MYSQL_PWD"].ValueFrom.SecretKeyRef.Key).To(Equal(v1alpha1.RootPasswordKey))
	g.Expect(*env["BACKUP_NEW_CLUSTER"].Value).To(Equal("true"))
	g.Expect(*env["BACKUP_RESTORE_NAME"].Value).To(Equal("20261124T051538123Z"))
	g.Expect(*env["BACKUP_PREFIX"].Value).To(Equal("mysql/aws-eu-west-1/demo/old"), "the source's backups")
	g.Expect(*ctr.EnvFrom[0].SecretRef.Name).To(Equal("s3-credentials"))

	// From a PVC: the source's backup volume, read-only.
	o, err = Render(c, awsMember, creds, WithRestore(&RestoreSource{Target: pvcTarget(), SourcePVC: "old-backup"}))
	g.Expect(err).NotTo(HaveOccurred())
	var claim *corev1ac.PersistentVolumeClaimVolumeSourceApplyConfiguration
	for _, v := range o.RestoreJob.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim
		}
	}
	g.Expect(claim).NotTo(BeNil())
	g.Expect(*claim.ClaimName).To(Equal("old-backup"))
	g.Expect(*claim.ReadOnly).To(BeTrue())
}

func TestMySQLScriptsRun(t *testing.T) {
	for _, shell := range shells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			g := NewWithT(t)
			ctr := mustRender(t, cluster(), awsMember).StatefulSet.Spec.Template.Spec.Containers[0]
			e := newScriptEnv(t, map[string]string{
				"docker-entrypoint.sh": "#!/bin/sh\necho \"$@\"\n",
				"mysqladmin":           "#!/bin/sh\necho \"$MYSQL_PWD $*\"\n",
			})
			// The volume is a directory of the test's: the script names the mount path once.
			volume := t.TempDir()
			ctr.Command[2] = strings.ReplaceAll(ctr.Command[2], DataMountPath, volume)
			idFile := filepath.Join(volume, "server-id")
			start := func(pod string) (id int) {
				out, err := e.run(shell, ctr, "POD_NAME="+pod, "POD_IP=10.1.2.3")
				g.Expect(err).NotTo(HaveOccurred(), out)
				_, err = fmt.Sscanf(out, "mysqld --server-id=%d --report-host="+pod+" --admin-address=10.1.2.3\n", &id)
				g.Expect(err).NotTo(HaveOccurred(), out)
				kept, err := os.ReadFile(idFile)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(kept)).To(Equal(fmt.Sprintf("%d\n", id)), "the server-id is kept on the volume")
				return id
			}
			initialise := func() { g.Expect(os.MkdirAll(filepath.Join(volume, "data", "mysql"), 0o755)).To(Succeed()) }

			// A new data directory gets an identity of its own each time it is new, never the ordinal's.
			first := start("orders-0")
			g.Expect(first).To(BeNumerically(">=", 65536))
			g.Expect(first).To(BeNumerically("<=", uint32(1<<32-1)))
			second := start("orders-0")
			g.Expect(second).NotTo(Equal(first), "a data directory that was never initialised is a new one")
			// Once initialised, it keeps it across restarts.
			initialise()
			g.Expect(start("orders-0")).To(Equal(second))
			g.Expect(start("orders-0")).To(Equal(second))
			// Wiped: a new identity.
			g.Expect(os.RemoveAll(filepath.Join(volume, "data"))).To(Succeed())
			third := start("orders-0")
			g.Expect(third).NotTo(BeElementOf(first, second))
			// A data directory from before the file keeps the server-id it ran with, 1000 + ordinal.
			initialise()
			for pod, want := range map[string]int{"orders-0": 1000, "orders-2": 1002, "my-db-8": 1008} {
				g.Expect(os.Remove(idFile)).To(Succeed())
				g.Expect(start(pod)).To(Equal(want))
				g.Expect(start(pod)).To(Equal(want))
			}
			g.Expect(os.WriteFile(idFile, []byte("x1\n"), 0o644)).To(Succeed())
			out, err := e.run(shell, ctr, "POD_NAME=orders-0")
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(ContainSubstring("holds no server-id"))

			out, err = e.run(shell, ctr, "POD_NAME=orders")
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(ContainSubstring("cannot read the StatefulSet ordinal"))

			probe := ctr.ReadinessProbe.Exec.Command
			cmd := exec.Command(shell, "-c", probe[2])
			if strings.HasSuffix(shell, "busybox") {
				cmd = exec.Command(shell, "sh", "-c", probe[2])
			}
			cmd.Env = []string{"PATH=" + e.bin + ":/usr/bin:/bin", "MYSQL_ROOT_PASSWORD=" + rootPassword, "POD_IP=10.1.2.3"}
			b, err := cmd.CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), string(b))
			g.Expect(string(b)).To(Equal(rootPassword + " --user=root --host=10.1.2.3 --port=33062 --connect-timeout=3 status\n"))
		})
	}
}
