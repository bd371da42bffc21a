package render

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

func mustRender(t *testing.T, c *v1alpha1.MySQLCluster, m placement.Member) *Objects {
	t.Helper()
	o, err := Render(c, m, creds)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return o
}

// toUnstructured turns an apply configuration into what the API server would receive.
func toUnstructured(t *testing.T, ac runtime.ApplyConfiguration) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(ac)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	NewWithT(t).Expect(u.UnmarshalJSON(b)).To(Succeed())
	return u
}

// fullCluster has every optional object: a user, spec.config and backups to a PVC.
func fullCluster(opts ...option) *v1alpha1.MySQLCluster {
	return cluster(append([]option{withUser("shop", "app"), withBackup("H 2 * * *", pvcTarget()),
		withConfig(map[string]string{"max_connections": "500"})}, opts...)...)
}

func TestStorageClass(t *testing.T) {
	withOverride := func(m placement.Member, class string) placement.Member {
		m.StorageClassOverride = class
		return m
	}
	tests := []struct {
		name    string
		cluster *v1alpha1.MySQLCluster
		member  placement.Member
		want    string
	}{
		{"aws built-in default", cluster(withByCloud("", "", "")), awsMember, "gp3"},
		{"azure built-in default", cluster(withByCloud("", "", "")), azureMember, "managed-csi"},
		{"gcp built-in default", cluster(withByCloud("", "", "")), gcpMember, "pd-ssd"},
		{"aws by cloud", cluster(withByCloud("io2", "premium", "hyperdisk")), awsMember, "io2"},
		{"azure by cloud", cluster(withByCloud("io2", "premium", "hyperdisk")), azureMember, "premium"},
		{"gcp by cloud", cluster(withByCloud("io2", "premium", "hyperdisk")), gcpMember, "hyperdisk"},
		{"member override beats by cloud", cluster(withByCloud("io2", "", "")), withOverride(awsMember, "local-nvme"), "local-nvme"},
		{"member override beats built-in default", cluster(withByCloud("", "", "")), withOverride(gcpMember, "standard"), "standard"},
		{"spec storageClassName beats member override", cluster(withStorageClassName("fast")), withOverride(azureMember, "local-nvme"), "fast"},
		{"spec storageClassName beats by cloud", cluster(withStorageClassName("fast"), withByCloud("io2", "", "")), awsMember, "fast"},
		{"empty spec storageClassName is ignored", cluster(withStorageClassName("")), awsMember, "gp3"},
		{"unknown cloud without override", cluster(), placement.Member{Name: "x", Cloud: "oracle"}, ""},
		{"unknown cloud with override", cluster(), placement.Member{Name: "x", Cloud: "oracle", StorageClassOverride: "oci-bv"}, "oci-bv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(StorageClass(tt.cluster, tt.member)).To(Equal(tt.want))
		})
	}
}

func TestRenderedDataVolumeClassPerCloud(t *testing.T) {
	tests := []struct {
		member placement.Member
		want   string
	}{
		{awsMember, "gp3"},
		{azureMember, "managed-csi"},
		{gcpMember, "pd-ssd"},
	}
	for _, tt := range tests {
		t.Run(string(tt.member.Cloud), func(t *testing.T) {
			g := NewWithT(t)
			sts := mustRender(t, cluster(), tt.member).StatefulSet
			g.Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
			vct := sts.Spec.VolumeClaimTemplates[0]
			g.Expect(*vct.Name).To(Equal(v1alpha1.DataVolumeName))
			g.Expect(vct.Namespace).To(BeNil(), "the server drops an empty namespace; sending one breaks the no-op check")
			g.Expect(*vct.Spec.StorageClassName).To(Equal(tt.want))
			g.Expect(vct.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
			g.Expect((*vct.Spec.Resources.Requests)[corev1.ResourceStorage]).To(Equal(resource.MustParse("20Gi")))
		})
	}
}

func TestBackupStorageClass(t *testing.T) {
	g := NewWithT(t)
	override := awsMember
	override.StorageClassOverride = "local-nvme"
	c := cluster(withBackup("@daily", pvcTarget()))

	g.Expect(BackupStorageClass(c, awsMember)).To(Equal("st1"), "the target's storageClassByCloud, not the data volume's")
	g.Expect(BackupStorageClass(c, gcpMember)).To(Equal("pd-ssd"))
	g.Expect(BackupStorageClass(c, override)).To(Equal("local-nvme"))
	c.Spec.Backup.Target.PVC.StorageClassName = ptrTo("backup-hdd")
	g.Expect(BackupStorageClass(c, override)).To(Equal("backup-hdd"))
	g.Expect(*mustRender(t, c, override).BackupPVC.Spec.StorageClassName).To(Equal("backup-hdd"))

	g.Expect(BackupStorageClass(cluster(), awsMember)).To(BeEmpty(), "no backup")
	g.Expect(BackupStorageClass(cluster(withBackup("@daily", s3Target(""))), awsMember)).To(BeEmpty(), "no volume")
}

func ptrTo[T any](v T) *T { return &v }

func TestNames(t *testing.T) {
	g := NewWithT(t)
	o := mustRender(t, fullCluster(), awsMember)
	names := map[string]string{}
	for _, ac := range o.All() {
		u := toUnstructured(t, ac)
		names[u.GetKind()+"/"+u.GetName()] = u.GetNamespace()
	}
	g.Expect(names).To(Equal(map[string]string{
		"Namespace/demo":                      "",
		"Secret/orders-credentials":           "demo",
		"ConfigMap/orders-config":             "demo",
		"Service/orders-headless":             "demo",
		"Service/orders":                      "demo",
		"Service/orders-primary":              "demo",
		"Service/orders-replicas":             "demo",
		"StatefulSet/orders":                  "demo",
		"PodDisruptionBudget/orders":          "demo",
		"PersistentVolumeClaim/orders-backup": "demo",
		"CronJob/orders-backup":               "demo",
	}))
}

func TestAllInApplyOrder(t *testing.T) {
	g := NewWithT(t)
	kinds := func(o *Objects) []string {
		var k []string
		for _, ac := range o.All() {
			k = append(k, toUnstructured(t, ac).GetKind())
		}
		return k
	}
	g.Expect(kinds(mustRender(t, fullCluster(), awsMember))).To(Equal([]string{
		"Namespace", "Secret", "ConfigMap", "Service", "Service", "Service", "Service", "StatefulSet",
		"PodDisruptionBudget", "PersistentVolumeClaim", "CronJob",
	}))
	o := mustRender(t, cluster(), awsMember)
	g.Expect(o.BackupPVC).To(BeNil())
	g.Expect(o.BackupCronJob).To(BeNil())
	g.Expect(kinds(o)).To(HaveLen(9))
	o = mustRender(t, cluster(withBackup("@daily", s3Target(""))), awsMember)
	g.Expect(o.BackupPVC).To(BeNil(), "an object store needs no volume")
	g.Expect(o.BackupCronJob).NotTo(BeNil())
}

func TestLabelsOnEveryObjectAndNoOwnerReferences(t *testing.T) {
	identifying := map[string]string{
		v1alpha1.ManagedByLabel:        "mysqlfleet",
		v1alpha1.NameLabel:             "mysql",
		v1alpha1.InstanceLabel:         "orders",
		v1alpha1.ClusterNameLabel:      "orders",
		v1alpha1.ClusterNamespaceLabel: "demo",
		v1alpha1.ClusterUIDLabel:       "8d3c1a52-0b7e-4e0f-9f59-2f3c1c6f0a11",
		v1alpha1.MemberLabel:           "gcp-us-central1",
	}
	for _, target := range map[string]v1alpha1.BackupTarget{"pvc": pvcTarget(), "s3": s3Target("")} {
		for _, ac := range mustRender(t, fullCluster(withBackup("H 2 * * *", target)), gcpMember).All() {
			u := toUnstructured(t, ac)
			t.Run(u.GetKind()+"/"+u.GetName(), func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(u.GetOwnerReferences()).To(BeEmpty(), "a member's garbage collector would delete it")
				if u.GetKind() == "Namespace" {
					g.Expect(u.GetLabels()).To(Equal(map[string]string{
						v1alpha1.ManagedByLabel: "mysqlfleet", v1alpha1.MemberLabel: "gcp-us-central1",
					}), "the namespace is shared: no cluster labels")
					return
				}
				for k, v := range identifying {
					g.Expect(u.GetLabels()).To(HaveKeyWithValue(k, v))
				}
				g.Expect(u.GetLabels()).To(HaveKey(v1alpha1.ComponentLabel))
			})
		}
	}
}

func TestComponentsAndSelectors(t *testing.T) {
	g := NewWithT(t)
	o := mustRender(t, fullCluster(), awsMember)
	sel := map[string]string{
		v1alpha1.ManagedByLabel: "mysqlfleet", v1alpha1.NameLabel: "mysql", v1alpha1.InstanceLabel: "orders",
		v1alpha1.ComponentLabel: ComponentDatabase,
	}
	g.Expect(Selector(cluster())).To(Equal(sel))
	g.Expect(o.StatefulSet.Spec.Selector.MatchLabels).To(Equal(sel))
	g.Expect(o.StatefulSet.Spec.Template.Labels).To(Equal(sel), "pod labels stay stable: no uid, no member")
	g.Expect(o.PodDisruptionBudget.Spec.Selector.MatchLabels).To(Equal(sel))
	g.Expect(o.HeadlessService.Spec.Selector).To(Equal(sel))

	g.Expect(o.StatefulSet.Labels).To(HaveKeyWithValue(v1alpha1.ComponentLabel, ComponentDatabase))
	g.Expect(o.BackupCronJob.Labels).To(HaveKeyWithValue(v1alpha1.ComponentLabel, ComponentBackup))
	g.Expect(o.BackupPVC.Labels).To(HaveKeyWithValue(v1alpha1.ComponentLabel, ComponentBackup))
	podLabels := o.BackupCronJob.Spec.JobTemplate.Spec.Template.Labels
	g.Expect(podLabels).To(HaveKeyWithValue(v1alpha1.ComponentLabel, ComponentBackup),
		"backup Pods must not match the database selector of the Services and the PodDisruptionBudget")

	// Claims are born with the hub object's UID: teardown and counting select them by it, never by name.
	vct := o.StatefulSet.Spec.VolumeClaimTemplates[0]
	g.Expect(vct.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, "8d3c1a52-0b7e-4e0f-9f59-2f3c1c6f0a11"))
	g.Expect(vct.Labels).To(HaveKeyWithValue(v1alpha1.ClusterNameLabel, "orders"))
	g.Expect(vct.Labels).To(HaveKeyWithValue(v1alpha1.MemberLabel, "aws-eu-west-1"))
}

func TestRecreatedHubObjectKeepsPodTemplateAndSelector(t *testing.T) {
	g := NewWithT(t)
	before := mustRender(t, fullCluster(), awsMember).StatefulSet
	recreated := fullCluster()
	recreated.UID = "0f2b5e8e-1111-2222-3333-444455556666"
	after := mustRender(t, recreated, awsMember).StatefulSet
	g.Expect(after.Spec.Template).To(Equal(before.Spec.Template))
	g.Expect(after.Spec.Selector).To(Equal(before.Spec.Selector))
	g.Expect(after.Spec.VolumeClaimTemplates[0].Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, string(recreated.UID)),
		"a successor's claims carry its own UID, so that it never counts or deletes its predecessor's")
	g.Expect(after.Labels).NotTo(Equal(before.Labels), "object labels do carry the new UID")
}

// Whatever the deletionPolicy, the StatefulSet keeps its claims: with whenDeleted Delete the StatefulSet
// controller would own, and garbage collection delete, any claim with a template name, a hand-made one included.
func TestRetentionPolicyAlwaysRetains(t *testing.T) {
	for _, policy := range []v1alpha1.DeletionPolicy{v1alpha1.DeletionPolicyRetain, v1alpha1.DeletionPolicyDelete, ""} {
		t.Run(string(policy), func(t *testing.T) {
			g := NewWithT(t)
			p := mustRender(t, cluster(withDeletionPolicy(policy)), awsMember).
				StatefulSet.Spec.PersistentVolumeClaimRetentionPolicy
			g.Expect(*p.WhenDeleted).To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
			g.Expect(*p.WhenScaled).To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType),
				"scaling down never deletes data")
		})
	}
}

func TestDataVolumeClaimNames(t *testing.T) {
	g := NewWithT(t)
	c := cluster()
	c.Spec.Replicas = 3
	g.Expect(DataVolumeClaimNames(c)).To(Equal([]string{"data-orders-0", "data-orders-1", "data-orders-2"}))
}

func TestDeterministic(t *testing.T) {
	many := map[string]string{}
	for _, k := range []string{"max_connections", "innodb_buffer_pool_size", "sql_mode", "wait_timeout",
		"long_query_time", "slow_query_log", "tmp_table_size", "max_heap_table_size", "table_open_cache"} {
		many[k] = "1"
	}
	for name, target := range map[string]v1alpha1.BackupTarget{
		"pvc": pvcTarget(), "s3": s3Target("https://minio.example.com"), "gcs": gcsTarget(""),
		"azure": azureTarget("https://acct.blob.core.windows.net"),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			first := mustRender(t, fullCluster(withConfig(many), withBackup("H H(1-5) * * *", target)), azureMember)
			for range 20 {
				again := mustRender(t, fullCluster(withConfig(many), withBackup("H H(1-5) * * *", target)), azureMember)
				g.Expect(again).To(Equal(first))
			}
		})
	}
}

func TestSecret(t *testing.T) {
	g := NewWithT(t)
	s := mustRender(t, cluster(withUser("shop", "app")), awsMember).Secret
	g.Expect(*s.Type).To(Equal(corev1.SecretTypeOpaque))
	g.Expect(s.StringData).To(BeEmpty(), "stringData is write-only and would never compare equal")
	script := string(s.Data[v1alpha1.InitScriptKey])
	delete(s.Data, v1alpha1.InitScriptKey)
	g.Expect(s.Data).To(Equal(map[string][]byte{
		v1alpha1.RootPasswordKey:        []byte(rootPassword),
		v1alpha1.PasswordKey:            []byte(userPassword),
		v1alpha1.AdminPasswordKey:       []byte(creds.AdminPassword),
		v1alpha1.ReplicationPasswordKey: []byte(creds.ReplicationPassword),
	}))
	// The accounts' script: the binary log off first, so that no server holds the accounts, the database or
	// the application's user as a transaction of its own; then the admin and replication accounts with their
	// passwords, the database and the application's user.
	lines := strings.Split(strings.TrimSpace(script), "\n")
	g.Expect(lines[2]).To(Equal("SET SESSION sql_log_bin = 0;"))
	g.Expect(script).To(ContainSubstring("\nCREATE DATABASE IF NOT EXISTS `shop`;\n"))
	g.Expect(script).To(ContainSubstring("CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY '" + userPassword + "';"))
	g.Expect(script).To(ContainSubstring("GRANT ALL PRIVILEGES ON `shop`.* TO 'app'@'%';"))
	g.Expect(script).To(ContainSubstring("CREATE USER IF NOT EXISTS 'mysqlfleet_admin'@'%' IDENTIFIED BY '" +
		creds.AdminPassword + "';"))
	g.Expect(script).To(ContainSubstring("GRANT REPLICATION SLAVE ON *.* TO 'mysqlfleet_repl'@'%';"))
	g.Expect(script).NotTo(ContainSubstring(rootPassword))

	s = mustRender(t, cluster(), awsMember).Secret
	g.Expect(s.Data).NotTo(HaveKey(v1alpha1.PasswordKey), "no user, no user password")
	g.Expect(string(s.Data[v1alpha1.InitScriptKey])).NotTo(ContainSubstring("CREATE DATABASE"))
}

func TestPasswordsOnlyInSecret(t *testing.T) {
	for name, target := range map[string]v1alpha1.BackupTarget{
		"pvc": pvcTarget(), "s3": s3Target(""), "gcs": gcsTarget(""), "azure": azureTarget(""),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := mustRender(t, fullCluster(withBackup("H 2 * * *", target)), awsMember)
			for _, ac := range o.All() {
				b, err := json.Marshal(ac)
				g.Expect(err).NotTo(HaveOccurred())
				text := string(b)
				kind := toUnstructured(t, ac).GetKind()
				for _, pw := range []string{rootPassword, userPassword, creds.AdminPassword, creds.ReplicationPassword} {
					encoded := base64.StdEncoding.EncodeToString([]byte(pw))
					g.Expect(text).NotTo(ContainSubstring(pw), "%s holds a password in plain text", kind)
					if kind == "Secret" {
						g.Expect(text).To(ContainSubstring(encoded))
					} else {
						g.Expect(text).NotTo(ContainSubstring(encoded), "%s holds a password", kind)
					}
				}
			}
		})
	}
}

func TestConfigMap(t *testing.T) {
	g := NewWithT(t)
	c := cluster(withConfig(map[string]string{
		"wait_timeout": "600", "innodb_buffer_pool_size": "1G", "sql_mode": `"STRICT_TRANS_TABLES,NO_ZERO_DATE"`,
		"character-set-server": "latin1",
	}))
	cm := mustRender(t, c, awsMember).ConfigMap
	g.Expect(cm.Data).To(HaveLen(1))
	cnf := cm.Data[MyCnfKey]
	g.Expect(strings.SplitN(cnf, "[mysqld]\n", 2)).To(HaveLen(2), "one [mysqld] section")
	for _, line := range []string{
		"datadir = /var/lib/mysql/data", "skip-name-resolve", "character-set-server = utf8mb4", "gtid_mode = ON",
		"enforce_gtid_consistency = ON", "log_bin = binlog", "read_only = ON", "skip_replica_start = ON",
		"plugin_load_add = semisync_source.so",
	} {
		g.Expect(cnf).To(ContainSubstring("\n" + line + "\n"))
	}
	g.Expect(cnf).NotTo(MatchRegexp(`(?m)^server[-_]id`), "server-id differs per Pod: it is on the command line")
	// spec.config follows the defaults (later lines win) and is sorted by key.
	g.Expect(cnf).To(HaveSuffix("# spec.config\n" +
		"character-set-server = latin1\n" +
		"innodb_buffer_pool_size = 1G\n" +
		`sql_mode = "STRICT_TRANS_TABLES,NO_ZERO_DATE"` + "\n" +
		"wait_timeout = 600\n"))

	// A config change changes the Pod template, which rolls the Pods; mysqld reads my.cnf only at start.
	before := mustRender(t, cluster(), awsMember).StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation]
	after := mustRender(t, c, awsMember).StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation]
	g.Expect(before).NotTo(BeEmpty())
	g.Expect(after).NotTo(Equal(before))
}

func TestStatefulSet(t *testing.T) {
	g := NewWithT(t)
	c := fullCluster()
	c.Spec.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	sts := mustRender(t, c, awsMember).StatefulSet
	spec := sts.Spec
	g.Expect(*spec.Replicas).To(BeEquivalentTo(3))
	g.Expect(*spec.ServiceName).To(Equal("orders-headless"))
	g.Expect(*spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))

	pod := spec.Template.Spec
	g.Expect(*pod.EnableServiceLinks).To(BeFalse())
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*pod.SecurityContext.RunAsUser).To(BeEquivalentTo(999))
	g.Expect(*pod.SecurityContext.FSGroup).To(BeEquivalentTo(999))
	g.Expect(*pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	// Spread over nodes and zones where the scheduler can, never refused where it cannot.
	g.Expect(pod.TopologySpreadConstraints).To(HaveLen(2))
	for i, key := range []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"} {
		tsc := pod.TopologySpreadConstraints[i]
		g.Expect(*tsc.TopologyKey).To(Equal(key))
		g.Expect(*tsc.MaxSkew).To(BeEquivalentTo(1))
		g.Expect(*tsc.WhenUnsatisfiable).To(Equal(corev1.ScheduleAnyway))
		g.Expect(tsc.LabelSelector.MatchLabels).To(Equal(spec.Selector.MatchLabels))
	}
	g.Expect(pod.Volumes).To(HaveLen(2))
	g.Expect(*pod.Volumes[0].ConfigMap.Name).To(Equal("orders-config"))
	// Only the accounts' script of the credentials Secret, in the image's init directory.
	g.Expect(*pod.Volumes[1].Secret.SecretName).To(Equal("orders-credentials"))
	g.Expect(pod.Volumes[1].Secret.Items).To(HaveLen(1))
	g.Expect(*pod.Volumes[1].Secret.Items[0].Key).To(Equal(v1alpha1.InitScriptKey))

	g.Expect(pod.Containers).To(HaveLen(1))
	ctr := pod.Containers[0]
	g.Expect(*ctr.Image).To(Equal("mysql:8.4"))
	g.Expect(*ctr.ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
	g.Expect(*ctr.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(ctr.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(*ctr.Resources.Requests).To(Equal(c.Spec.Resources.Requests))
	g.Expect(*ctr.Resources.Limits).To(Equal(c.Spec.Resources.Limits))
	g.Expect(*ctr.Ports[0].ContainerPort).To(BeEquivalentTo(3306))
	g.Expect(*ctr.StartupProbe.TCPSocket.Port).To(Equal(intstr.FromString("mysql")))
	g.Expect(*ctr.LivenessProbe.TCPSocket.Port).To(Equal(intstr.FromString("mysql")))
	g.Expect(ctr.ReadinessProbe.Exec.Command).To(ContainElement(ContainSubstring("mysqladmin")))

	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[*m.Name] = *m.MountPath
	}
	g.Expect(mounts).To(Equal(map[string]string{"data": "/var/lib/mysql", "config": "/etc/mysql/conf.d",
		"init": "/docker-entrypoint-initdb.d"}))

	env := map[string]*corev1ac.EnvVarApplyConfiguration{}
	for _, e := range ctr.Env {
		env[*e.Name] = &e
	}
	g.Expect(env).To(HaveKey("POD_NAME"))
	g.Expect(*env["MYSQL_ROOT_PASSWORD"].ValueFrom.SecretKeyRef.Name).To(Equal("orders-credentials"))
	g.Expect(*env["MYSQL_ROOT_PASSWORD"].ValueFrom.SecretKeyRef.Key).To(Equal(v1alpha1.RootPasswordKey))
	// Database and user are the init script's, never the image's MYSQL_DATABASE and MYSQL_USER, which its
	// entrypoint would create with the binary log on (see TestSecret). POD_IP is MySQL's admin_address.
	g.Expect(env).To(HaveLen(3))
	g.Expect(env).To(HaveKey("POD_IP"))

	ctr = mustRender(t, cluster(), awsMember).StatefulSet.Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Resources).To(BeNil())
}

func TestStatefulSetDefaultsAndImage(t *testing.T) {
	g := NewWithT(t)
	c := cluster()
	c.Spec.Replicas = 0
	c.Spec.Image = "registry.example.com/mysql:8.4.3"
	sts := mustRender(t, c, awsMember).StatefulSet
	g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(1))
	g.Expect(*sts.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/mysql:8.4.3"))
}

func TestServices(t *testing.T) {
	g := NewWithT(t)
	o := mustRender(t, cluster(), awsMember)
	h := o.HeadlessService.Spec
	g.Expect(*h.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(*h.PublishNotReadyAddresses).To(BeTrue())
	g.Expect(h.Ports).To(HaveLen(1))
	g.Expect(*h.Ports[0].Name).To(Equal("mysql"))
	g.Expect(*h.Ports[0].Port).To(BeEquivalentTo(3306))

	s := o.Service.Spec
	g.Expect(*s.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(*s.Ports[0].Port).To(BeEquivalentTo(3306))
	// The read-write names select the primary, the read-only name the replicas in sync, by the role label the
	// member controller sets; never a Pod by ordinal.
	withRole := func(role string) map[string]string {
		sel := Selector(cluster())
		sel[v1alpha1.RoleLabel] = role
		return sel
	}
	g.Expect(s.Selector).To(Equal(withRole("primary")))
	g.Expect(*o.PrimaryService.Name).To(Equal("orders-primary"))
	g.Expect(o.PrimaryService.Spec.Selector).To(Equal(withRole("primary")))
	g.Expect(*o.ReplicasService.Name).To(Equal("orders-replicas"))
	g.Expect(o.ReplicasService.Spec.Selector).To(Equal(withRole("replica")))
	g.Expect(s.Selector).NotTo(HaveKey(appsv1.StatefulSetPodNameLabel))

	c := cluster()
	c.Spec.ServiceType = corev1.ServiceTypeLoadBalancer
	g.Expect(*mustRender(t, c, awsMember).Service.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
	c.Spec.ServiceType = ""
	g.Expect(*mustRender(t, c, awsMember).Service.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))

	// For a member controller that writes the primary's endpoints, the two read-write names have no selector
	// (the controller's EndpointSlice names the primary), with the same ports and type; the replicas' keeps its.
	c.Spec.ServiceType = corev1.ServiceTypeLoadBalancer
	sl, err := Render(c, awsMember, creds, WithPrimaryEndpoints())
	g.Expect(err).NotTo(HaveOccurred())
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{sl.Service, sl.PrimaryService} {
		g.Expect(svc.Spec.Selector).To(BeNil(), *svc.Name)
		g.Expect(*svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		g.Expect(svc.Spec.Ports).To(Equal(o.PrimaryService.Spec.Ports), *svc.Name)
	}
	g.Expect(sl.ReplicasService.Spec.Selector).To(Equal(withRole("replica")))
}

func TestPodDisruptionBudget(t *testing.T) {
	g := NewWithT(t)
	pdb := mustRender(t, cluster(), awsMember).PodDisruptionBudget
	g.Expect(*pdb.Spec.MaxUnavailable).To(Equal(intstr.FromInt32(1)))
	g.Expect(pdb.Spec.MinAvailable).To(BeNil())
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name    string
		cluster *v1alpha1.MySQLCluster
		member  placement.Member
		creds   Credentials
		wantErr string
	}{
		{"nil cluster", nil, awsMember, creds, "nil"},
		{"no uid", func() *v1alpha1.MySQLCluster { c := cluster(); c.UID = ""; return c }(), awsMember, creds, "no UID"},
		{"no namespace", func() *v1alpha1.MySQLCluster { c := cluster(); c.Namespace = ""; return c }(), awsMember, creds, "namespace"},
		{"no member name", cluster(), placement.Member{Cloud: v1alpha1.CloudAWS}, creds, "member has no name"},
		{"no version or image", func() *v1alpha1.MySQLCluster { c := cluster(); c.Spec.Version = ""; return c }(), awsMember, creds, "spec.version"},
		{"no root password", cluster(), awsMember, Credentials{}, "root password"},
		{"no admin password", cluster(), awsMember, Credentials{RootPassword: "x", ReplicationPassword: "y"}, "admin or replication password"},
		{"user without password", cluster(withUser("shop", "app")), awsMember, Credentials{RootPassword: "x", AdminPassword: "a", ReplicationPassword: "r"}, `spec.user "app"`},
		{"unknown cloud", cluster(), placement.Member{Name: "x", Cloud: "oracle"}, creds, `unknown cloud "oracle"`},
		{"unknown cloud for the backup volume", cluster(withStorageClassName("fast"), withBackup("@daily", pvcTarget())), placement.Member{Name: "x", Cloud: "oracle"}, creds, "no backup storage class"},
		{"managed option", cluster(withConfig(map[string]string{"gtid-mode": "OFF"})), awsMember, creds, "mysqlfleet manages gtid_mode"},
		{"administrative port", cluster(withConfig(map[string]string{"extra-port": "3307"})), awsMember, creds, "mysqlfleet manages extra_port"},
		{"loose admin address", cluster(withConfig(map[string]string{"loose-admin-address": "0.0.0.0"})), awsMember, creds, "mysqlfleet manages admin_address"},
		{"managed option with prefix", cluster(withConfig(map[string]string{"skip-log-bin": ""})), awsMember, creds, "mysqlfleet manages log_bin"},
		{"loose managed option", cluster(withConfig(map[string]string{"loose_server_id": "7"})), awsMember, creds, "mysqlfleet manages server_id"},
		{"option key injection", cluster(withConfig(map[string]string{"a\n[client]": "x"})), awsMember, creds, "not a mysqld option name"},
		{"option value injection", cluster(withConfig(map[string]string{"sql_mode": "x\n[client]"})), awsMember, creds, "line breaks"},
		{"invalid schedule", cluster(withBackup("H * H * *", pvcTarget())), awsMember, creds, `backup.schedule "H * H * *"`},
		{"two backup targets", cluster(withBackup("@daily", v1alpha1.BackupTarget{PVC: pvcTarget().PVC, S3: s3Target("").S3})), awsMember, creds, "exactly one"},
		{"no backup target", cluster(withBackup("@daily", v1alpha1.BackupTarget{})), awsMember, creds, "exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := Render(tt.cluster, tt.member, tt.creds)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(errors.Is(err, ErrInvalid)).To(BeTrue())
			g.Expect(o).To(BeNil())
		})
	}
}

func TestRenderKeepsNonManagedOptionsWithPrefixes(t *testing.T) {
	g := NewWithT(t)
	cm := mustRender(t, cluster(withConfig(map[string]string{"skip-name-resolve": "", "loose-innodb-foo": "1"})), awsMember).ConfigMap
	g.Expect(cm.Data[MyCnfKey]).To(ContainSubstring("loose-innodb-foo = 1\n"))
}

// Kubernetes replaces $(NAME) in command and args when NAME is one of the container's variables. The scripts must
// not contain such a reference, or the shell would receive something else than what was written.
func TestScriptsHaveNoKubernetesVariableReferences(t *testing.T) {
	ref := regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_.-]*\)`)
	for name, target := range map[string]v1alpha1.BackupTarget{
		"pvc": pvcTarget(), "s3": s3Target("https://minio"), "gcs": gcsTarget("https://gcs"), "azure": azureTarget("https://az"),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := mustRender(t, fullCluster(withBackup("@daily", target)), awsMember)
			containers := slices.Concat(o.StatefulSet.Spec.Template.Spec.Containers,
				o.BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers)
			for _, ctr := range containers {
				for _, arg := range append(ctr.Command, ctr.Args...) {
					g.Expect(ref.FindAllString(arg, -1)).To(BeEmpty(), "container %s", *ctr.Name)
				}
			}
		})
	}
}

// Each engine gets its own image, server and admin binaries, replication options and dump tool; nothing of the
// other engine's leaks in (mariadbd refuses to start on an unknown option such as gtid_mode).
func TestEngines(t *testing.T) {
	tests := []struct {
		engine                     v1alpha1.Engine
		image, server, admin, dump string
		cnf, notCnf                []string
	}{
		{engine: "", image: "mysql:8.4", server: "exec docker-entrypoint.sh mysqld --server-id", admin: "exec mysqladmin ",
			dump: "mysqldump", cnf: []string{"gtid_mode = ON", "enforce_gtid_consistency = ON", "log_bin = binlog"},
			notCnf: []string{"gtid_strict_mode"}},
		{engine: v1alpha1.EngineMySQL, image: "mysql:8.4", server: "exec docker-entrypoint.sh mysqld --server-id",
			admin: "exec mysqladmin ", dump: "mysqldump", cnf: []string{"gtid_mode = ON"}, notCnf: []string{"gtid_strict_mode"}},
		{engine: v1alpha1.EngineMariaDB, image: "mariadb:11.4", server: "exec docker-entrypoint.sh mariadbd --server-id",
			admin: "exec mariadb-admin ", dump: "mariadb-dump", cnf: []string{"gtid_strict_mode = ON", "log_bin = binlog"},
			notCnf: []string{"gtid_mode", "enforce_gtid_consistency"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.engine), func(t *testing.T) {
			g := NewWithT(t)
			c := cluster(withBackup("@daily", pvcTarget()))
			c.Spec.Engine = tt.engine
			if tt.engine == v1alpha1.EngineMariaDB {
				c.Spec.Version = "11.4"
			}
			o := mustRender(t, c, awsMember)
			ctr := o.StatefulSet.Spec.Template.Spec.Containers[0]
			g.Expect(*ctr.Image).To(Equal(tt.image))
			g.Expect(ctr.Command[2]).To(ContainSubstring(tt.server))
			g.Expect(ctr.ReadinessProbe.Exec.Command[2]).To(ContainSubstring(tt.admin))
			cnf := o.ConfigMap.Data[MyCnfKey]
			for _, line := range tt.cnf {
				g.Expect(cnf).To(ContainSubstring(line))
			}
			for _, word := range tt.notCnf {
				g.Expect(cnf).NotTo(ContainSubstring(word))
			}
			// The runner runs the engine's dump tool, found in the image it runs in.
			env := envMap(o.BackupCronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env)
			g.Expect(*env["BACKUP_ENGINE"].Value).To(Equal(string(orDefault(tt.engine, v1alpha1.EngineMySQL))))
		})
	}
}

// Each engine opens the reserved administrative port (AdminPort) its own way, the readiness probe logs in there,
// and no Service publishes it. MySQL's admin interface is rendered only: it has not run against a real MySQL 8.4.
func TestAdminPort(t *testing.T) {
	tests := []struct {
		engine       v1alpha1.Engine
		cnf          []string
		probeHost    string
		adminAddress bool
		notCnf       []string
	}{
		{engine: v1alpha1.EngineMariaDB, cnf: []string{"extra_port = 33062", "extra_max_connections = 20"},
			probeHost: "--host=127.0.0.1 ", notCnf: []string{"admin_port", "admin_address"}},
		{engine: v1alpha1.EngineMySQL, cnf: []string{"admin_port = 33062"}, probeHost: `--host="$POD_IP" `,
			adminAddress: true, notCnf: []string{"extra_port", "extra_max_connections"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.engine), func(t *testing.T) {
			g := NewWithT(t)
			c := cluster()
			c.Spec.Engine = tt.engine
			if tt.engine == v1alpha1.EngineMariaDB {
				c.Spec.Version = "10.11"
			}
			o := mustRender(t, c, awsMember)
			cnf := o.ConfigMap.Data[MyCnfKey]
			for _, line := range tt.cnf {
				g.Expect(cnf).To(ContainSubstring("\n" + line + "\n"))
			}
			for _, word := range tt.notCnf {
				g.Expect(cnf).NotTo(ContainSubstring(word))
			}
			ctr := o.StatefulSet.Spec.Template.Spec.Containers[0]
			ports := map[string]int32{}
			for _, p := range ctr.Ports {
				ports[*p.Name] = *p.ContainerPort
			}
			g.Expect(ports).To(Equal(map[string]int32{"mysql": 3306, "admin": 33062}))
			probe := ctr.ReadinessProbe.Exec.Command[2]
			g.Expect(probe).To(ContainSubstring(tt.probeHost + "--port=33062 "))
			env := envMap(ctr.Env)
			if tt.adminAddress {
				g.Expect(ctr.Command[2]).To(ContainSubstring(` --admin-address="$POD_IP"` + "\n"))
				g.Expect(*env["POD_IP"].ValueFrom.FieldRef.FieldPath).To(Equal("status.podIP"))
			} else {
				g.Expect(ctr.Command[2]).NotTo(ContainSubstring("admin-address"))
				g.Expect(env).NotTo(HaveKey("POD_IP"))
			}
			for _, svc := range []*corev1ac.ServiceApplyConfiguration{o.HeadlessService, o.Service, o.PrimaryService,
				o.ReplicasService} {
				for _, p := range svc.Spec.Ports {
					g.Expect(*p.Port).NotTo(BeEquivalentTo(AdminPort), "Service %s publishes the admin port", *svc.Name)
					g.Expect(*p.TargetPort).NotTo(Equal(intstr.FromString(AdminPortName)))
				}
			}
		})
	}
}

// spec.primaries reaches the member controller as an annotation on that member's StatefulSet only, never on the
// Pod template (which would roll the Pods).
func TestPrimaryRequestAnnotatesOnlyThatMembersStatefulSet(t *testing.T) {
	g := NewWithT(t)
	c := cluster()
	c.Spec.Replicas = 3
	c.Spec.Primaries = map[string]int32{awsMember.Name: 2}
	sts := mustRender(t, c, awsMember).StatefulSet
	g.Expect(sts.Annotations).To(HaveKeyWithValue(v1alpha1.PrimaryAnnotation, "2"))
	g.Expect(sts.Spec.Template.Annotations).NotTo(HaveKey(v1alpha1.PrimaryAnnotation))
	g.Expect(mustRender(t, c, gcpMember).StatefulSet.Annotations).NotTo(HaveKey(v1alpha1.PrimaryAnnotation))
	before := mustRender(t, cluster(), awsMember).StatefulSet.Spec.Template
	g.Expect(sts.Spec.Template).To(Equal(before), "a switchover request changes no Pod")
}

// spec.durability reaches the member controller on the StatefulSet's own metadata, and only when Preferred:
// a Required (or unset) one renders as before the field existed, and no choice rolls the Pods.
func TestDurabilityAnnotatesOnlyPreferred(t *testing.T) {
	g := NewWithT(t)
	base := mustRender(t, cluster(), awsMember).StatefulSet
	g.Expect(base.Annotations).NotTo(HaveKey(v1alpha1.DurabilityAnnotation))
	required := cluster(func(c *v1alpha1.MySQLCluster) { c.Spec.Durability = v1alpha1.DurabilityRequired })
	g.Expect(mustRender(t, required, awsMember).StatefulSet).To(Equal(base), "Required is the default")
	c := cluster(func(c *v1alpha1.MySQLCluster) { c.Spec.Durability = v1alpha1.DurabilityPreferred })
	sts := mustRender(t, c, awsMember).StatefulSet
	g.Expect(sts.Annotations).To(HaveKeyWithValue(v1alpha1.DurabilityAnnotation, "Preferred"))
	g.Expect(sts.Spec.Template).To(Equal(base.Spec.Template), "the choice changes no Pod")
}

// spec.errantServers reaches the member controller as DurabilityAnnotation does: on the StatefulSet's own
// metadata, and only when Fence, so that RebuildWhenSafe (the default, or unset) renders as before the field
// existed and no choice rolls the Pods.
func TestErrantServersAnnotatesOnlyFence(t *testing.T) {
	g := NewWithT(t)
	base := mustRender(t, cluster(), awsMember).StatefulSet
	g.Expect(base.Annotations).NotTo(HaveKey(v1alpha1.ErrantServersAnnotation))
	safe := cluster(func(c *v1alpha1.MySQLCluster) { c.Spec.ErrantServers = v1alpha1.ErrantServersRebuildWhenSafe })
	g.Expect(mustRender(t, safe, awsMember).StatefulSet).To(Equal(base), "RebuildWhenSafe is the default")
	c := cluster(func(c *v1alpha1.MySQLCluster) { c.Spec.ErrantServers = v1alpha1.ErrantServersFence })
	sts := mustRender(t, c, awsMember).StatefulSet
	g.Expect(sts.Annotations).To(HaveKeyWithValue(v1alpha1.ErrantServersAnnotation, "Fence"))
	g.Expect(sts.Spec.Template).To(Equal(base.Spec.Template), "the choice changes no Pod")
}

// The hub object's rebuild requests reach each member's StatefulSet, that member's entries only and in the same
// format, on the StatefulSet's own metadata: a request changes no Pod, and a member with no request (or only
// unreadable ones) renders as if there were none.
func TestRebuildRequestsAnnotateOnlyThatMembersStatefulSet(t *testing.T) {
	withRequests := func(v string) option {
		return func(c *v1alpha1.MySQLCluster) { c.Annotations = map[string]string{v1alpha1.RebuildAnnotation: v} }
	}
	aws, gcp := awsMember.Name, gcpMember.Name
	tests := []struct {
		name     string
		value    string
		member   placement.Member
		want     string
		wantNone bool
	}{
		{"one request for the member", aws + "/orders-1=2026-11-28T10:00:00Z", awsMember,
			aws + "/orders-1=2026-11-28T10:00:00Z", false},
		{"the member's entries among others', in order",
			gcp + "/orders-0=a," + aws + "/orders-2=b, " + aws + "/orders-1=c," + gcp + "/orders-2=d", awsMember,
			aws + "/orders-2=b," + aws + "/orders-1=c", false},
		{"only another member's", gcp + "/orders-0=a", awsMember, "", true},
		{"unreadable entries are left out", aws + "/=a," + aws + "/orders-1," + aws + "=b,garbage", awsMember, "", true},
		{"empty", "", awsMember, "", true},
	}
	base := mustRender(t, cluster(), awsMember).StatefulSet
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sts := mustRender(t, cluster(withRequests(tt.value)), tt.member).StatefulSet
			if tt.wantNone {
				g.Expect(sts).To(Equal(mustRender(t, cluster(), tt.member).StatefulSet), "as without a request")
				return
			}
			g.Expect(sts.Annotations).To(HaveKeyWithValue(v1alpha1.RebuildAnnotation, tt.want))
			g.Expect(v1alpha1.RebuildRequests(sts.Annotations[v1alpha1.RebuildAnnotation])).
				To(HaveEach(HaveField("Member", aws)))
			g.Expect(sts.Spec.Template).To(Equal(base.Spec.Template), "a request changes no Pod")
			g.Expect(sts.Spec.Template.Annotations).NotTo(HaveKey(v1alpha1.RebuildAnnotation))
		})
	}
}

// The StatefulSet always announces spec.replicas to the member controller, on its own metadata; a held count
// (the hub waiting for the member controller to prepare a scale-down) keeps more Pods, never fewer, and changes
// neither the announcement nor the Pods.
// The member controller learns a StatefulSet's engine and credentials Secret from these annotations alone, so they
// say what the MySQLCluster says whatever the image is called, name the Secret render writes, and stay off the Pod
// template (a change there would roll the Pods).
func TestContractAnnotations(t *testing.T) {
	withEngine := func(e v1alpha1.Engine, image string) option {
		return func(c *v1alpha1.MySQLCluster) { c.Spec.Engine, c.Spec.Image = e, image }
	}
	tests := []struct {
		name    string
		cluster *v1alpha1.MySQLCluster
		engine  string
		secret  string
	}{
		{"never defaulted", cluster(withEngine("", "")), "MySQL", "orders-credentials"},
		{"MySQL", cluster(withEngine(v1alpha1.EngineMySQL, "")), "MySQL", "orders-credentials"},
		{"MariaDB", cluster(withEngine(v1alpha1.EngineMariaDB, "")), "MariaDB", "orders-credentials"},
		{"MariaDB in an image named mysql", cluster(withEngine(v1alpha1.EngineMariaDB, "registry.example/mysql:8.4")),
			"MariaDB", "orders-credentials"},
		{"MySQL in an image named mariadb", cluster(withEngine(v1alpha1.EngineMySQL, "mariadb:11.4")), "MySQL",
			"orders-credentials"},
		{"another name", cluster(func(c *v1alpha1.MySQLCluster) { c.Name = "billing" }), "MySQL",
			"billing-credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := mustRender(t, tt.cluster, awsMember)
			g.Expect(o.StatefulSet.Annotations).To(HaveKeyWithValue(v1alpha1.EngineAnnotation, tt.engine))
			g.Expect(o.StatefulSet.Annotations).To(HaveKeyWithValue(v1alpha1.CredentialsSecretAnnotation, tt.secret))
			g.Expect(*o.Secret.Name).To(Equal(tt.secret), "the Secret render writes")
			for _, k := range []string{v1alpha1.EngineAnnotation, v1alpha1.CredentialsSecretAnnotation} {
				g.Expect(o.StatefulSet.Spec.Template.Annotations).NotTo(HaveKey(k), "would roll the Pods")
				g.Expect(o.StatefulSet.Spec.Template.Labels).NotTo(HaveKey(k))
			}
		})
	}
}

func TestReplicasAnnouncedAndHeld(t *testing.T) {
	withReplicas := func(n int32) option { return func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = n } }
	tests := []struct {
		name            string
		cluster         *v1alpha1.MySQLCluster
		opts            []Option
		wantReplicas    int32
		wantAnnotations map[string]string
	}{
		{"spec.replicas", cluster(withReplicas(2)), nil, 2, map[string]string{v1alpha1.ReplicasAnnotation: "2"}},
		{"held above spec.replicas", cluster(withReplicas(2)), []Option{WithHeldReplicas(3)}, 3,
			map[string]string{v1alpha1.ReplicasAnnotation: "2"}},
		{"held at spec.replicas", cluster(withReplicas(2)), []Option{WithHeldReplicas(2)}, 2,
			map[string]string{v1alpha1.ReplicasAnnotation: "2"}},
		{"held below spec.replicas removes nothing", cluster(withReplicas(3)), []Option{WithHeldReplicas(1)}, 3,
			map[string]string{v1alpha1.ReplicasAnnotation: "3"}},
		{"never defaulted", cluster(withReplicas(0)), nil, 1, map[string]string{v1alpha1.ReplicasAnnotation: "1"}},
		{"beside a switchover request", cluster(withReplicas(1), func(c *v1alpha1.MySQLCluster) {
			c.Spec.Primaries = map[string]int32{awsMember.Name: 0}
		}), []Option{WithHeldReplicas(2)}, 2,
			map[string]string{v1alpha1.ReplicasAnnotation: "1", v1alpha1.PrimaryAnnotation: "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := Render(tt.cluster, awsMember, creds, tt.opts...)
			g.Expect(err).NotTo(HaveOccurred())
			sts := o.StatefulSet
			g.Expect(*sts.Spec.Replicas).To(Equal(tt.wantReplicas))
			want := map[string]string{v1alpha1.EngineAnnotation: "MySQL",
				v1alpha1.CredentialsSecretAnnotation: "orders-credentials"}
			maps.Copy(want, tt.wantAnnotations)
			g.Expect(sts.Annotations).To(Equal(want))
			g.Expect(sts.Spec.Template.Annotations).NotTo(HaveKey(v1alpha1.ReplicasAnnotation), "would roll the Pods")
			g.Expect(sts.Spec.Template).To(Equal(mustRender(t, cluster(), awsMember).StatefulSet.Spec.Template))
		})
	}
}
