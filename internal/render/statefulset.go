package render

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

const (
	// MySQLContainerName is the mysqld container of the StatefulSet's Pods.
	MySQLContainerName = "mysql"
	// PortName names the MySQL port on the container and the Services.
	PortName = "mysql"

	// mysqlUID is the mysql user and group of the official images (Oracle Linux and Debian based alike). Running
	// as it from the start, instead of letting the entrypoint drop from root, is what lets the Pods pass the
	// restricted Pod Security Standard.
	mysqlUID         int64 = 999
	configVolumeName       = "config"
	initVolumeName         = "init"
	// InitMountPath is where the official images look for scripts to run when they initialise a data directory.
	InitMountPath = "/docker-entrypoint-initdb.d"
	// initScriptFile is the credentials Secret's init script as a file there.
	initScriptFile = "mysqlfleet-accounts.sql"
)

// ServerIDScript sets server_id to the identity of the data directory $datadir on the volume mounted at
// $volume, for the StatefulSet ordinal $ordinal, and keeps it in a file on the volume beside the data directory:
//   - a new data directory (no system tables yet) gets a server_id of its own, random in 65536..2^32-1, whatever
//     the file held: a server rebuilt on an ordinal never shares its predecessor's identity. A receiver may
//     skip events that carry its own server_id (MySQL does unless replicate_same_server_id; MariaDB 10.11
//     does when it is not a semi-sync replica, measured), so a rebuilt former primary with its predecessor's
//     server_id could silently skip the predecessor's transactions; and the member controller tells a replaced
//     primary volume by its server_id (see clustering.Record.PrimaryServerID);
//   - an initialised data directory keeps the server_id in the file, or, for one that predates the file,
//     the 1000 + ordinal it has run with, written to the file so that it stays.
//
// The file is written with a rename, so that it is whole or absent. It is POSIX sh (dash and busybox run it).
// Test rigs that boot servers for Pods run it too (test/dbpods).
const ServerIDScript = `id_file="$volume/server-id"
if [ -d "$datadir/mysql" ] && [ -s "$id_file" ]; then
  server_id=$(cat "$id_file")
elif [ -d "$datadir/mysql" ]; then
  server_id=$((1000 + ordinal))
else
  server_id=$(( $(od -An -N4 -tu4 /dev/urandom) | 65536 ))
fi
case "$server_id" in
''|*[!0-9]*) echo "$id_file holds no server-id: '$server_id'" >&2; exit 1 ;;
esac
if [ "$(cat "$id_file" 2>/dev/null)" != "$server_id" ]; then
  printf '%s\n' "$server_id" >"$id_file.new"
  mv "$id_file.new" "$id_file"
fi
`

// serverScript starts the image's entrypoint with the data directory's own server-id (ServerIDScript, from the
// ordinal at the end of the Pod's name), and the Pod's name as report_host, by which replicas show in SHOW
// SLAVE HOSTS and backups record their source. The entrypoint then initialises the data directory on first start
// (root password, then the credentials Secret's init script) and execs the server (mysqld or mariadbd), which
// replaces the shell so that it receives SIGTERM.
//
// MySQL also gets its admin_address there, the Pod's IP (POD_IP, see mysqlEnv): MySQL takes one address and
// no wildcard, and the member controller reaches the admin interface from another Pod (see writeAdminPort).
// Not yet run against a real MySQL 8.4 (see mysql.MySQLFlavor).
//
// Kubernetes expands $(NAME) in command and args when NAME is a variable of the container; the $(( )) and $( )
// here name none, so they reach the shell unchanged.
func serverScript(c *v1alpha1.MySQLCluster) string {
	server, _ := binaries(c)
	args := ` --server-id="$server_id" --report-host="$POD_NAME"`
	if engine(c) == v1alpha1.EngineMySQL {
		args += ` --admin-address="$POD_IP"`
	}
	return `set -eu
ordinal="${POD_NAME##*-}"
case "$ordinal" in
''|*[!0-9]*) echo "cannot read the StatefulSet ordinal from Pod name $POD_NAME" >&2; exit 1 ;;
esac
volume=` + DataMountPath + `
datadir=` + DataDir + `
` + ServerIDScript + `exec docker-entrypoint.sh ` + server + args + `
`
}

// readinessScript asks the server itself, over TCP: during first start the entrypoint runs a temporary server
// without networking, and a socket ping would report that server ready. It logs in as root (the password comes
// from the container's environment, never from the Pod spec) with status, which needs the login to succeed:
// ping exits 0 even when the login is refused, and a server that refuses its own root is not ready. Whether
// a ready server serves as primary or replica is the member controller's role label, which the Services
// select on.
//
// It logs in on AdminPort, so that a server whose application sessions fill max_connections stays ready. The
// probe asks whether the server is up, not whether applications can connect: a full primary taken out of its
// Services' endpoints would shed no session (those connected stay), would turn the overload into "no
// endpoints" for every new client, and would come back only after probes succeed again, once sessions end.
// MariaDB's extra_port listens on every address, like port, so loopback serves; MySQL's admin interface
// listens on the Pod's IP alone.
func readinessScript(c *v1alpha1.MySQLCluster) string {
	_, admin := binaries(c)
	host := "127.0.0.1"
	if engine(c) == v1alpha1.EngineMySQL {
		host = `"$POD_IP"`
	}
	return `MYSQL_PWD="$MYSQL_ROOT_PASSWORD" exec ` + admin + ` --user=root --host=` + host + ` --port=` +
		strconv.Itoa(AdminPort) + ` --connect-timeout=3 status`
}

// statefulSet is the MySQL StatefulSet, with held Pods instead of spec.replicas when held is larger.
// The Pods of a MySQLCluster with physical backups also run the backup agent (agent.go), copied from
// runnerImage.
func statefulSet(c *v1alpha1.MySQLCluster, m placement.Member, cnf string, held int32, runnerImage string) *appsv1ac.StatefulSetApplyConfiguration {
	sel := Selector(c)
	container := corev1ac.Container().
		WithName(MySQLContainerName).
		WithImage(Image(c)).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", serverScript(c)).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(MySQLPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(AdminPortName).WithContainerPort(AdminPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(mysqlEnv(c)...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(v1alpha1.DataVolumeName).WithMountPath(DataMountPath),
			corev1ac.VolumeMount().WithName(configVolumeName).WithMountPath(ConfigMountPath).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(initVolumeName).WithMountPath(InitMountPath).WithReadOnly(true),
		).
		// The startup probe covers first initialisation and InnoDB crash recovery (up to 10 minutes), during
		// which mysqld does not listen; only then do liveness and readiness start.
		WithStartupProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(PortName))).
			WithPeriodSeconds(10).WithTimeoutSeconds(5).WithFailureThreshold(60)).
		// Liveness only checks that mysqld accepts connections: restarting a database is drastic, and a busy
		// server that is slow to answer queries must not be killed for it. A TCP connection is accepted even
		// when max_connections is exhausted (the server then answers ERROR 1040), so the MySQL port serves.
		WithLivenessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(PortName))).
			WithPeriodSeconds(10).WithTimeoutSeconds(5).WithFailureThreshold(6)).
		WithReadinessProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand("sh", "-c", readinessScript(c))).
			WithPeriodSeconds(5).WithTimeoutSeconds(5).WithFailureThreshold(3)).
		WithSecurityContext(containerSecurityContext())
	if r := resources(c.Spec.Resources); r != nil {
		container.WithResources(r)
	}

	// The Pod template carries the selector labels only, no UID and no hub annotations: a hub object recreated
	// with the same name must find the same Pods running, not roll them.
	podSpec := corev1ac.PodSpec()
	if PhysicalBackups(c) {
		withBackupAgent(c, podSpec, Image(c), runnerImage)
	}
	template := corev1ac.PodTemplateSpec().
		WithLabels(sel).
		WithAnnotations(map[string]string{ConfigHashAnnotation: configHash(cnf)}).
		WithSpec(podSpec.
			WithContainers(container).
			WithVolumes(
				corev1ac.Volume().WithName(configVolumeName).
					WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(c.ConfigMapName())),
				// Only the init script, readable by the mysql user alone (fsGroup), so that no password lies
				// about in the image's init directory beyond it. defaultMode is stated: the server defaults it.
				corev1ac.Volume().WithName(initVolumeName).
					WithSecret(corev1ac.SecretVolumeSource().WithSecretName(c.CredentialsSecretName()).
						WithItems(corev1ac.KeyToPath().WithKey(v1alpha1.InitScriptKey).WithPath(initScriptFile)).
						WithDefaultMode(0o440))).
			WithSecurityContext(podSecurityContext()).
			WithTopologySpreadConstraints(spread(sel)...).
			// Service links would add variables for every Service in a namespace that other MySQLClusters
			// share; one named "mysql" would even set MYSQL_PORT to a URL.
			WithEnableServiceLinks(false).
			// Time for mysqld to flush dirty pages on shutdown, so that the next start needs no crash recovery.
			WithTerminationGracePeriodSeconds(60))

	// The replicas asked for are always announced: the member controller prepares a scale-down when the
	// StatefulSet has more (held), and the hub lowers spec.replicas only once it has.
	sts := appsv1ac.StatefulSet(c.StatefulSetName(), c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentDatabase)).
		WithAnnotations(contractAnnotations(c)).
		WithAnnotations(map[string]string{v1alpha1.ReplicasAnnotation: strconv.Itoa(int(replicas(c)))})
	// A planned switchover is asked of the member controller on the StatefulSet's own metadata (not its Pod
	// template, which would roll the Pods); an entry removed from spec.primaries drops the annotation.
	if ordinal, ok := c.Spec.Primaries[m.Name]; ok {
		sts.WithAnnotations(map[string]string{v1alpha1.PrimaryAnnotation: strconv.Itoa(int(ordinal))})
	}
	// Durability goes the same way, and only when Preferred: a Required StatefulSet, the default, stays as it
	// was before the field existed.
	if c.Spec.Durability == v1alpha1.DurabilityPreferred {
		sts.WithAnnotations(map[string]string{v1alpha1.DurabilityAnnotation: string(v1alpha1.DurabilityPreferred)})
	}
	// spec.errantServers too, and only when Fence: RebuildWhenSafe, the default, adds nothing.
	if c.Spec.ErrantServers == v1alpha1.ErrantServersFence {
		sts.WithAnnotations(map[string]string{v1alpha1.ErrantServersAnnotation: string(v1alpha1.ErrantServersFence)})
	}
	// Rebuild requests for this member's Pods, and only those: another member's request is no business of this
	// one, and a request for another member must not change (and so write) this StatefulSet.
	if v := memberRebuildRequests(c, m.Name); v != "" {
		sts.WithAnnotations(map[string]string{v1alpha1.RebuildAnnotation: v})
	}
	// The archive of spec.backup.archive, run by the member controller, on the metadata too.
	if v := archiveRequest(c, m.Name); v != "" {
		sts.WithAnnotations(map[string]string{v1alpha1.ArchiveAnnotation: v})
	}
	return sts.
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(max(replicas(c), held)).
			WithServiceName(c.HeadlessServiceName()).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)).
			// Parallel: each Pod initialises its own data directory and depends on no other Pod, so one slow or
			// stuck Pod must not hold the others back. The field is immutable; ordering that replication may
			// need later belongs to the controller, not to the StatefulSet.
			WithPodManagementPolicy(appsv1.ParallelPodManagement).
			WithTemplate(template).
			WithVolumeClaimTemplates(dataVolumeClaimTemplate(c, m)).
			WithPersistentVolumeClaimRetentionPolicy(retentionPolicy()))
}

// contractAnnotations are what the member controller must be told of every StatefulSet (see
// v1alpha1.EngineAnnotation): it reads them, never the Pod template this file builds.
func contractAnnotations(c *v1alpha1.MySQLCluster) map[string]string {
	return map[string]string{
		v1alpha1.EngineAnnotation:            string(engine(c)),
		v1alpha1.CredentialsSecretAnnotation: c.CredentialsSecretName(),
	}
}

// memberRebuildRequests is the value of the MySQLCluster's RebuildAnnotation reduced to the member's entries, in
// their order there; "" when it has none.
func memberRebuildRequests(c *v1alpha1.MySQLCluster, member string) string {
	var mine []v1alpha1.RebuildRequest
	for _, r := range v1alpha1.RebuildRequests(c.Annotations[v1alpha1.RebuildAnnotation]) {
		if r.Member == member {
			mine = append(mine, r)
		}
	}
	return v1alpha1.FormatRebuildRequests(mine)
}

// dataVolumeClaimTemplate carries every label that names the hub object, its UID included: the claims are born
// belonging to this MySQLCluster, so that teardown, counting and adoption find them by UID and never by name. The
// template is immutable, but so is the UID for the life of the StatefulSet (a successor gets a new one).
func dataVolumeClaimTemplate(c *v1alpha1.MySQLCluster, m placement.Member) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	lbls := DataVolumeLabels(c, m.Name)
	// volumeClaimTemplates is an atomic list: what the API server defaults in it (volumeMode, status.phase) is
	// owned by the applier and shows up when the live StatefulSet is extracted. The template states those
	// defaults so that an unchanged StatefulSet compares equal. It is built without the constructor, which would
	// set an empty namespace that the server drops.
	return (&corev1ac.PersistentVolumeClaimApplyConfiguration{}).
		WithName(v1alpha1.DataVolumeName).
		WithLabels(lbls).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithStorageClassName(StorageClass(c, m)).
			WithVolumeMode(corev1.PersistentVolumeFilesystem).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: c.Spec.Storage.Size.DeepCopy()}))).
		WithStatus(corev1ac.PersistentVolumeClaimStatus().WithPhase(corev1.ClaimPending))
}

// retentionPolicy keeps the claims whatever the deletionPolicy. With whenDeleted Delete the StatefulSet
// controller makes itself the controller owner of every claim with a template name, including one a user made
// by hand or one a predecessor kept, and garbage collection then deletes it with the StatefulSet: a deletion
// mysqlfleet could not see. Under deletionPolicy Delete, mysqlfleet deletes the claims itself, once the
// StatefulSet is gone, choosing them by this MySQLCluster's UID label. Scaling down never deletes data either.
func retentionPolicy() *appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicyApplyConfiguration {
	return appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
		WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
		WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
}

func replicas(c *v1alpha1.MySQLCluster) int32 {
	if c.Spec.Replicas < 1 {
		return 1 // the API server defaults replicas to 1; this covers an object that was never defaulted
	}
	return c.Spec.Replicas
}

// mysqlEnv feeds the official image's entrypoint. Passwords are references to the credentials Secret, so that
// they never appear in the StatefulSet.
func mysqlEnv(c *v1alpha1.MySQLCluster) []*corev1ac.EnvVarApplyConfiguration {
	env := []*corev1ac.EnvVarApplyConfiguration{
		// apiVersion is the server's default, stated because a fieldRef is atomic (see dataVolumeClaimTemplate).
		corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath("metadata.name"))),
		secretEnv("MYSQL_ROOT_PASSWORD", c.CredentialsSecretName(), v1alpha1.RootPasswordKey),
	}
	if engine(c) == v1alpha1.EngineMySQL {
		// MySQL's admin_address and the readiness probe's host (see serverScript).
		env = append(env, corev1ac.EnvVar().WithName("POD_IP").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath("status.podIP"))))
	}
	// Not MYSQL_DATABASE and MYSQL_USER: the images' entrypoints create those with the binary log on, which
	// would give every new server transactions of its own (errant on a replica, and a new primary volume
	// that does not look empty). The init script creates them, unlogged (see secret).
	return env
}

func secretEnv(name, secret, key string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
		WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
}

func resources(r corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	if len(r.Limits) == 0 && len(r.Requests) == 0 && len(r.Claims) == 0 {
		return nil
	}
	ac := corev1ac.ResourceRequirements()
	if len(r.Limits) > 0 {
		ac.WithLimits(r.Limits.DeepCopy())
	}
	if len(r.Requests) > 0 {
		ac.WithRequests(r.Requests.DeepCopy())
	}
	for _, claim := range r.Claims {
		rc := corev1ac.ResourceClaim().WithName(claim.Name)
		if claim.Request != "" {
			rc.WithRequest(claim.Request)
		}
		ac.WithClaims(rc)
	}
	return ac
}

// podSecurityContext runs as the image's mysql user and group; fsGroup makes the volumes writable by it.
func podSecurityContext() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(mysqlUID).
		WithRunAsGroup(mysqlUID).
		WithFSGroup(mysqlUID).
		// Only walk a volume to change ownership when its root does not match already: data volumes are large.
		WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// containerSecurityContext is what the restricted Pod Security Standard asks of a container. The mysqld container
// keeps a writable root filesystem: mysqld and the entrypoint write to the image's /var/run/mysqld,
// /var/lib/mysql-files and /tmp. The backup container adds readOnlyRootFilesystem.
func containerSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// headlessService governs the StatefulSet and gives each Pod a DNS name (<name>-<ordinal>.<name>-headless). It
// publishes Pods that are not ready, so that peers and the backup Job can reach a Pod by name while it starts.
func headlessService(c *v1alpha1.MySQLCluster, m placement.Member) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(c.HeadlessServiceName(), c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentDatabase)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(Selector(c)).
			WithPorts(servicePort()))
}

// service selects the Pods of one role, by the role label the member controller sets: role primary for <name>
// and <name>-primary (read-write), role replica for <name>-replicas (read-only). A Pod without the label (not
// yet given a role, unreachable, errant, or a replica out of sync) is in no Service. Before replication, the
// client Service selected the Pod of ordinal 0; it now follows the primary wherever it moves.
//
// With selectorless (WithPrimaryEndpoints, for the primary's two Services), the Service has no selector: the
// member controller writes its EndpointSlice itself, naming the primary, so that a change of primary changes
// the endpoints once instead of twice (controllers/member/endpoints.go says why that matters).
func service(c *v1alpha1.MySQLCluster, m placement.Member, name, role string, selectorless bool) *corev1ac.ServiceApplyConfiguration {
	spec := corev1ac.ServiceSpec().
		WithType(orDefault(c.Spec.ServiceType, corev1.ServiceTypeClusterIP)).
		WithPorts(servicePort())
	if !selectorless {
		sel := Selector(c)
		sel[v1alpha1.RoleLabel] = role
		spec.WithSelector(sel)
	}
	return corev1ac.Service(name, c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentDatabase)).
		WithSpec(spec)
}

func servicePort() *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().
		WithName(PortName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(MySQLPort).
		WithTargetPort(intstr.FromString(PortName))
}

// podDisruptionBudget lets drains evict one MySQL Pod at a time. maxUnavailable rather than minAvailable: with one
// replica, minAvailable 1 would block every node drain for good.
func podDisruptionBudget(c *v1alpha1.MySQLCluster, m placement.Member) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(c.PodDisruptionBudgetName(), c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentDatabase)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(Selector(c))))
}

// spread asks the scheduler to put a set's servers on different nodes, and zones, where it can: a node or zone
// lost then takes one server, which the member controller replaces by promoting another, rather than the set.
// It is a preference (ScheduleAnyway), not a rule: a Pod whose volume is bound to a node must go to that node,
// and a rule that the node then breaks (a worker added since, or a set placed unevenly while a node was away)
// would leave that server pending for ever. A member with fewer nodes than servers still runs them all.
func spread(sel map[string]string) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	var out []*corev1ac.TopologySpreadConstraintApplyConfiguration
	for _, key := range []string{corev1.LabelHostname, corev1.LabelTopologyZone} {
		out = append(out, corev1ac.TopologySpreadConstraint().
			WithMaxSkew(1).
			WithTopologyKey(key).
			WithWhenUnsatisfiable(corev1.ScheduleAnyway).
			WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(sel)))
	}
	return out
}
