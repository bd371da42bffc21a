package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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

func TestBackupCronJob(t *testing.T) {
	g := NewWithT(t)
	c := cluster(withBackup("H 2 * * *", pvcTarget()))
	c.Spec.Backup.Suspend = true
	o := mustRender(t, c, awsMember)

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
	pod := job.Template.Spec
	g.Expect(*pod.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*pod.SecurityContext.FSGroup).To(BeEquivalentTo(999), "the backup volume must be writable")
	g.Expect(*pod.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("orders-backup"))

	ctr := pod.Containers[0]
	g.Expect(*ctr.Image).To(Equal("mysql:8.4"), "the MySQL image by default")
	g.Expect(*ctr.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(ctr.Command[:2]).To(Equal([]string{"sh", "-c"}))
	g.Expect(ctr.Command[2]).To(ContainSubstring(`$DUMP_COMMAND --host="$MYSQL_HOST"`))
	dump := *envMap(ctr.Env)["DUMP_COMMAND"].Value
	for _, flag := range []string{"mysqldump ", "--all-databases", "--single-transaction", "--routines", "--events", "--triggers",
		"--set-gtid-purged=ON", "--source-data=2"} {
		g.Expect(dump).To(ContainSubstring(flag))
	}
	g.Expect(ctr.EnvFrom).To(BeEmpty())
	env := envMap(ctr.Env)
	g.Expect(*env["MYSQL_HOST"].Value).To(Equal("orders-0.orders-headless"))
	g.Expect(*env["MYSQL_PWD"].ValueFrom.SecretKeyRef.Name).To(Equal("orders-credentials"))
	g.Expect(*env["MYSQL_PWD"].ValueFrom.SecretKeyRef.Key).To(Equal(v1alpha1.RootPasswordKey))
	g.Expect(*env["BACKUP_RETENTION"].Value).To(Equal("5"))
	g.Expect(*env["BACKUP_DIR"].Value).To(Equal(BackupMountPath))

	pvc := o.BackupPVC
	g.Expect(*pvc.Name).To(Equal("orders-backup"))
	g.Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	g.Expect((*pvc.Spec.Resources.Requests)[corev1.ResourceStorage]).To(Equal(resource.MustParse("50Gi")))
	g.Expect(*pvc.Spec.StorageClassName).To(Equal("st1"))

	// Retention defaults like the API server would.
	c.Spec.Backup.Retention = 0
	env = envMap(mustRender(t, c, awsMember).BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env)
	g.Expect(*env["BACKUP_RETENTION"].Value).To(Equal("7"))
}

func TestBackupCronJobObjectStores(t *testing.T) {
	tests := []struct {
		name       string
		target     v1alpha1.BackupTarget
		secret     string
		env        map[string]string
		scriptHas  []string
		scriptLack []string
	}{
		{
			name: "s3 with endpoint", target: s3Target("https://minio.example.com"), secret: "s3-credentials",
			env: map[string]string{
				"BACKUP_BUCKET": "fleet-backups", "BACKUP_PREFIX": "mysql/aws-eu-west-1/demo/orders",
				"BACKUP_ENDPOINT": "https://minio.example.com",
			},
			scriptHas: []string{`aws s3 cp --endpoint-url "$BACKUP_ENDPOINT"`, `aws s3 rm --endpoint-url "$BACKUP_ENDPOINT"`},
		},
		{
			name: "s3 without endpoint", target: s3Target(""), secret: "s3-credentials",
			env:        map[string]string{"BACKUP_BUCKET": "fleet-backups", "BACKUP_PREFIX": "mysql/aws-eu-west-1/demo/orders"},
			scriptHas:  []string{"aws s3 cp --only-show-errors"},
			scriptLack: []string{"--endpoint-url"},
		},
		{
			name: "gcs", target: gcsTarget("https://storage.example.com"), secret: "gcs-credentials",
			env: map[string]string{
				"BACKUP_BUCKET": "fleet-backups", "BACKUP_PREFIX": "aws-eu-west-1/demo/orders",
				"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "https://storage.example.com",
			},
			scriptHas: []string{"gcloud storage cp", "gcloud storage rm"},
		},
		{
			name: "azure blob", target: azureTarget("https://acct.blob.core.windows.net"), secret: "azure-credentials",
			env: map[string]string{
				"BACKUP_CONTAINER": "fleet-backups", "BACKUP_PREFIX": "prod/aws-eu-west-1/demo/orders",
				"BACKUP_ENDPOINT": "https://acct.blob.core.windows.net",
			},
			scriptHas: []string{`az storage blob upload --blob-endpoint "$BACKUP_ENDPOINT"`, "az storage blob delete"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := cluster(withBackup("@daily", tt.target), withBackupImage("registry.example.com/backup:1"))
			o := mustRender(t, c, awsMember)
			g.Expect(o.BackupPVC).To(BeNil())
			pod := o.BackupCronJob.Spec.JobTemplate.Spec.Template.Spec
			g.Expect(pod.Volumes[0].EmptyDir).NotTo(BeNil(), "the dump waits in scratch space for its upload")
			ctr := pod.Containers[0]
			g.Expect(*ctr.Image).To(Equal("registry.example.com/backup:1"))
			g.Expect(ctr.EnvFrom).To(HaveLen(1))
			g.Expect(*ctr.EnvFrom[0].SecretRef.Name).To(Equal(tt.secret))
			env := envMap(ctr.Env)
			for k, v := range tt.env {
				g.Expect(env).To(HaveKey(k))
				g.Expect(*env[k].Value).To(Equal(v), k)
			}
			for _, s := range tt.scriptHas {
				g.Expect(ctr.Command[2]).To(ContainSubstring(s))
			}
			for _, s := range tt.scriptLack {
				g.Expect(ctr.Command[2]).NotTo(ContainSubstring(s))
			}
			g.Expect(BackupPrefix(c, awsMember.Name)).To(Equal(tt.env["BACKUP_PREFIX"]))
		})
	}
}

// The scripts are run for real below, with stand-ins for mysqldump, date and the cloud CLIs, under every POSIX
// shell found here: dash has no pipefail, bash has.

const fakeDate = `#!/bin/sh
echo "$FAKE_STAMP"
`

const fakeMysqldump = `#!/bin/sh
echo "$*" > "$FAKE_LOG/mysqldump.args"
echo "$MYSQL_PWD" > "$FAKE_LOG/mysqldump.pwd"
printf -- '-- MySQL dump 10.13\nCREATE DATABASE shop;\n'
if [ -n "${FAKE_FAIL:-}" ]; then echo "mysqldump: Got error: 2013: Lost connection" >&2; exit 2; fi
printf -- '-- Dump completed on 2024-01-01 02:00:00\n'
`

const fakeAWS = `#!/bin/sh
echo "aws $*" >> "$FAKE_LOG/calls"
[ "$1" = s3 ] || exit 2
op=$2; shift 2
p1=; p2=
while [ $# -gt 0 ]; do
  case "$1" in
  --endpoint-url) shift 2 ;;
  --*) shift ;;
  *) if [ -z "$p1" ]; then p1=$1; else p2=$1; fi; shift ;;
  esac
done
local_path() { echo "$FAKE_STORE/${1#s3://}"; }
case "$op" in
cp) mkdir -p "$(dirname "$(local_path "$p2")")"; cp "$p1" "$(local_path "$p2")" ;;
rm) rm "$(local_path "$p1")" ;;
ls)
  found=
  for f in "$(local_path "$p1")"*; do
    if [ -f "$f" ]; then echo "2024-01-01 02:00:00         42 ${f##*/}"; found=1; fi
  done
  [ -n "$found" ] ;;
*) exit 2 ;;
esac
`

const fakeGcloud = `#!/bin/sh
echo "gcloud $*" >> "$FAKE_LOG/calls"
[ "$1" = storage ] || exit 2
local_path() { echo "$FAKE_STORE/${1#gs://}"; }
case "$2" in
cp) mkdir -p "$(dirname "$(local_path "$4")")"; cp "$3" "$(local_path "$4")" ;;
rm) rm "$(local_path "$3")" ;;
ls) for f in "$(local_path "$3")"*; do if [ -f "$f" ]; then echo "$3${f##*/}"; fi; done ;;
*) exit 2 ;;
esac
`

const fakeAz = `#!/bin/sh
echo "az $*" >> "$FAKE_LOG/calls"
[ "$1 $2" = "storage blob" ] || exit 2
op=$3; shift 3
while [ $# -gt 0 ]; do
  case "$1" in
  --container-name) c=$2; shift 2 ;;
  --name) n=$2; shift 2 ;;
  --file) f=$2; shift 2 ;;
  --prefix) p=$2; shift 2 ;;
  --blob-endpoint|--num-results|--query|--output) shift 2 ;;
  *) shift ;;
  esac
done
case "$op" in
upload) mkdir -p "$(dirname "$FAKE_STORE/$c/$n")"; cp "$f" "$FAKE_STORE/$c/$n" ;;
delete) rm "$FAKE_STORE/$c/$n" ;;
list) for x in "$FAKE_STORE/$c/$p"*; do if [ -f "$x" ]; then echo "$p${x##*/}"; fi; done ;;
*) exit 2 ;;
esac
`

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

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func TestBackupScriptsRun(t *testing.T) {
	tests := []struct {
		name   string
		target v1alpha1.BackupTarget
		cli    string
		fake   string
		// dir is where the member's backups land, relative to the fake store (or the backup directory for a PVC).
		dir string
	}{
		{name: "pvc", target: pvcTarget()},
		{name: "s3", target: s3Target("https://minio.example.com"), cli: "aws", fake: fakeAWS, dir: "fleet-backups/mysql/aws-eu-west-1/demo/orders"},
		{name: "gcs", target: gcsTarget(""), cli: "gcloud", fake: fakeGcloud, dir: "fleet-backups/aws-eu-west-1/demo/orders"},
		{name: "azure", target: azureTarget("https://acct.blob.core.windows.net"), cli: "az", fake: fakeAz, dir: "fleet-backups/prod/aws-eu-west-1/demo/orders"},
	}
	for _, shell := range shells(t) {
		for _, tt := range tests {
			t.Run(filepath.Base(shell)+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				ctr := mustRender(t, cluster(withBackup("@daily", tt.target)), awsMember).
					BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
				fakes := map[string]string{"date": fakeDate, "mysqldump": fakeMysqldump}
				if tt.cli != "" {
					fakes[tt.cli] = tt.fake
				}
				e := newScriptEnv(t, fakes)
				kept := filepath.Join(e.store, tt.dir)
				if tt.cli == "" {
					kept = e.backupDir
				}
				// Files that are not this MySQLCluster's dumps survive retention.
				g.Expect(os.MkdirAll(kept, 0o755)).To(Succeed())
				for _, other := range []string{"orders-notes.txt", "ordersx-20200101T000000Z.sql.gz"} {
					g.Expect(os.WriteFile(filepath.Join(kept, other), nil, 0o644)).To(Succeed())
				}

				stamps := []string{"20240101T020000Z", "20240102T020000Z", "20240103T020000Z", "20240104T020000Z",
					"20240105T020000Z", "20240106T020000Z", "20240107T020000Z"}
				// Run them out of order: retention goes by the name's timestamp.
				for _, i := range []int{2, 0, 1, 3, 4, 6, 5} {
					out, err := e.run(shell, ctr, "FAKE_STAMP="+stamps[i])
					g.Expect(err).NotTo(HaveOccurred(), out)
				}
				want := []string{"orders-notes.txt"}
				for _, s := range stamps[2:] { // retention 5
					want = append(want, "orders-"+s+".sql.gz")
				}
				want = append(want, "ordersx-20200101T000000Z.sql.gz")
				slices.Sort(want)
				g.Expect(listDir(t, kept)).To(Equal(want))

				args, err := os.ReadFile(filepath.Join(e.log, "mysqldump.args"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(args)).To(Equal("--user=root --single-transaction --source-data=2 --set-gtid-purged=ON " +
					"--all-databases --triggers --routines --events --flush-privileges --host=orders-0.orders-headless\n"))
				pwd, err := os.ReadFile(filepath.Join(e.log, "mysqldump.pwd"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(pwd)).To(Equal(rootPassword + "\n"))

				// A dump that breaks off is not kept, does not count towards retention, and fails the Job.
				out, err := e.run(shell, ctr, "FAKE_STAMP=20240108T020000Z", "FAKE_FAIL=1")
				g.Expect(err).To(HaveOccurred(), out)
				g.Expect(listDir(t, kept)).To(Equal(want))

				if tt.cli != "" {
					calls, _ := os.ReadFile(filepath.Join(e.log, "calls"))
					g.Expect(string(calls)).NotTo(ContainSubstring("20240108T020000Z"), "nothing uploaded")
				}
			})
		}
	}
}

func TestBackupScriptWithoutCLIFailsBeforeDumping(t *testing.T) {
	for _, shell := range shells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			g := NewWithT(t)
			ctr := mustRender(t, cluster(withBackup("@daily", s3Target(""))), awsMember).
				BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
			e := newScriptEnv(t, map[string]string{"date": fakeDate, "mysqldump": fakeMysqldump})
			for _, dir := range []string{"/usr/bin", "/bin"} { // the script's PATH besides the fakes
				if _, err := os.Stat(filepath.Join(dir, "aws")); err == nil {
					t.Skip("an aws CLI is installed in " + dir)
				}
			}
			out, err := e.run(shell, ctr, "FAKE_STAMP=20240101T020000Z")
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(ContainSubstring("the backup image has no aws command"))
			g.Expect(filepath.Join(e.log, "mysqldump.args")).NotTo(BeAnExistingFile())
		})
	}
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
			for pod, want := range map[string]string{"orders-0": "1000", "orders-2": "1002", "my-db-8": "1008"} {
				out, err := e.run(shell, ctr, "POD_NAME="+pod)
				g.Expect(err).NotTo(HaveOccurred(), out)
				g.Expect(out).To(Equal("mysqld --server-id=" + want + "\n"))
			}
			out, err := e.run(shell, ctr, "POD_NAME=orders")
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(ContainSubstring("cannot read the StatefulSet ordinal"))

			probe := ctr.ReadinessProbe.Exec.Command
			cmd := exec.Command(shell, "-c", probe[2])
			if strings.HasSuffix(shell, "busybox") {
				cmd = exec.Command(shell, "sh", "-c", probe[2])
			}
			cmd.Env = []string{"PATH=" + e.bin + ":/usr/bin:/bin", "MYSQL_ROOT_PASSWORD=" + rootPassword}
			b, err := cmd.CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), string(b))
			g.Expect(string(b)).To(Equal(rootPassword + " --user=root --host=127.0.0.1 --connect-timeout=3 ping\n"))
		})
	}
}
