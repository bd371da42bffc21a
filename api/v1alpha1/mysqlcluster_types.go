package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cloud is the cloud a member runs on. It picks the default storage class.
// +kubebuilder:validation:Enum=aws;azure;gcp
type Cloud string

const (
	CloudAWS   Cloud = "aws"
	CloudAzure Cloud = "azure"
	CloudGCP   Cloud = "gcp"
)

// DeletionPolicy says what happens to data when a MySQLCluster is deleted. A member that leaves the placement
// always keeps the volumes, under either policy: leaving is no request to destroy data.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps PersistentVolumeClaims, backups and the namespace; workloads are removed.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete removes everything, PersistentVolumeClaims and backup volumes included: those that
	// carry this MySQLCluster's UID, in every member, never an object of the same name that it did not create.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// Engine is the database server: Oracle's MySQL or MariaDB.
// +kubebuilder:validation:Enum=MySQL;MariaDB
type Engine string

const (
	// EngineMySQL is MySQL 8.0 and later (8.4 LTS the reference); the default image is mysql:<version>.
	EngineMySQL Engine = "MySQL"
	// EngineMariaDB is MariaDB 10.6 and later (10.11 and 11.4 LTS included); the default image is
	// mariadb:<version>.
	EngineMariaDB Engine = "MariaDB"
)

// Durability is what a commit's return promises when no replica can acknowledge it.
// +kubebuilder:validation:Enum=Required;Preferred
type Durability string

const (
	// DurabilityRequired: a commit returns only once a replica holds it (semi-sync that never falls back), so a
	// failover never loses an acknowledged commit; while no replica can acknowledge, commits wait.
	DurabilityRequired Durability = "Required"
	// DurabilityPreferred: as Required while enough replicas are in sync; while none can acknowledge, the member
	// controller switches semi-sync off and commits return from the primary alone (a failover then can lose
	// them), and switches it back on once enough replicas are in sync. The window is reported in
	// status.members[].replication.
	DurabilityPreferred Durability = "Preferred"
)

// ErrantServers is what the member controller does with a server that holds transactions the primary lacks.
// +kubebuilder:validation:Enum=RebuildWhenSafe;Fence
type ErrantServers string

const (
	// ErrantServersRebuildWhenSafe rebuilds an errant server by itself when that provably discards nothing a
	// client was told was committed: the server is a primary that a failover replaced, its data directory is the
	// one it served with, semi-sync never let a commit return unacknowledged during its term, and every
	// transaction the primary lacks is its own and held by no other server. Its data are emptied and it is
	// seeded again, with an Event and the discarded transactions in
	// status.members[].replication.rebuilds. Any other errant server stays fenced for a human
	// (`mysqlfleet rebuild`).
	ErrantServersRebuildWhenSafe ErrantServers = "RebuildWhenSafe"
	// ErrantServersFence fences every errant server until a human rebuilds it (`mysqlfleet rebuild`).
	ErrantServersFence ErrantServers = "Fence"
)

// MySQLClusterSpec is what a database needs, and where.
//
// +kubebuilder:validation:XValidation:rule="!has(self.backup) || !has(self.backup.method) || self.backup.method != 'Physical' || (has(self.engine) && self.engine == 'MariaDB')",message="backup.method Physical needs engine MariaDB: MySQL's physical backups (XtraBackup, CLONE) are not implemented",fieldPath=".backup.method"
// +kubebuilder:validation:XValidation:rule="!has(self.backup) || !has(self.backup.archive) || (has(self.engine) && self.engine == 'MariaDB')",message="backup.archive needs engine MariaDB: archiving MySQL's binary log (its GTID sets, mysqlbinlog) is not implemented",fieldPath=".backup.archive"
// +kubebuilder:validation:XValidation:rule="!has(self.user) || has(self.database)",message="user needs database: the user is granted all privileges on it",fieldPath=".user"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.restore) == has(self.restore)",message="restore can only be set when the MySQLCluster is created",fieldPath=".restore"
// +kubebuilder:validation:XValidation:rule="!has(self.primaries) || self.primaries.all(k, self.primaries[k] < (has(self.replicas) ? self.replicas : 1))",message="primaries name an ordinal below replicas: the Pods are <name>-0 to <name>-(replicas-1)",fieldPath=".primaries"
// +kubebuilder:validation:XValidation:rule="!self.version.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$') || ((has(self.engine) && self.engine == 'MariaDB') ? self.version.matches('^(10[.]([6-9]|[1-9][0-9])|(1[1-9]|[2-9][0-9])[.][0-9]+)([.][0-9]+)?$') : self.version.matches('^(8|9|[1-9][0-9])[.][0-9]+([.][0-9]+)?$'))",messageExpression="(has(self.engine) && self.engine == 'MariaDB') ? 'MariaDB version must be 10.6 or later, such as 10.11 or 11.4, not ' + self.version : 'MySQL version must be 8.0 or later, such as 8.0 or 8.4, not ' + self.version",fieldPath=".version",reason=FieldValueInvalid
type MySQLClusterSpec struct {
	// Engine is the database server. It cannot change: one engine's data directory is not the other's.
	// +optional
	// +kubebuilder:default=MySQL
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine is immutable: the data of one engine cannot be served by the other"
	Engine Engine `json:"engine,omitempty"`

	// Version is the server version: MySQL 8.0 or later, MariaDB 10.6 or later. The image is mysql:<version> or
	// mariadb:<version> unless image is set.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$')",message="version must be a MySQL version number such as 8.4 or 8.4.3, not an image tag such as latest"
	Version string `json:"version"`

	// Image overrides the server image, e.g. a mirror or a MySQL-compatible server.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Replicas is the number of MySQL Pods in each member.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Replicas int32 `json:"replicas,omitempty"`

	// Primaries requests planned switchovers: member name to the ordinal of the Pod that should be the primary
	// there (1 for <name>-1). The member controller moves the primary once the target is a healthy replica in
	// sync, fencing the old primary (read-only, connections ended) and promoting the target when it holds every
	// transaction; it refuses a target that is unhealthy, errant or behind, and the member's PrimaryAsRequested
	// condition says why. The entry may stay after the switch; removing it leaves the primary where it is.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(k) <= 63)",message="primaries keys are member names"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",message="primaries values are Pod ordinals: 0 or more"
	Primaries map[string]int32 `json:"primaries,omitempty"`

	// Durability says what happens to writes while no replica can acknowledge them (every replica of a member
	// down): Required (the default) makes them wait; Preferred lets them go on unacknowledged, at the risk of
	// losing them in a failover during that window. It can change at any time.
	// +optional
	// +kubebuilder:default=Required
	Durability Durability `json:"durability,omitempty"`

	// ErrantServers says what happens to a server that holds transactions the primary lacks (typically a primary
	// replaced by a failover that comes back with commits no replica acknowledged): RebuildWhenSafe (the
	// default) rebuilds it without a human when that provably loses no acknowledged commit, and fences it
	// otherwise; Fence always leaves it fenced for `mysqlfleet rebuild`. It can change at any time.
	// +optional
	// +kubebuilder:default=RebuildWhenSafe
	ErrantServers ErrantServers `json:"errantServers,omitempty"`

	// Resources of the mysqld container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Config holds mysqld options for my.cnf's [mysqld] section, option name to value. Options that mysqlfleet
	// manages (server-id, GTIDs, the binary log, read-only, replication start, datadir, port, socket, and the
	// reserved administrative port: extra_port, admin_port, admin_address) cannot be set here.
	// +optional
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z][a-z0-9_-]{0,63}$'))",message="config keys must be mysqld option names: lower case letters, digits, '_' or '-'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.replace('-', '_') in ['server_id', 'gtid_mode', 'enforce_gtid_consistency', 'gtid_strict_mode', 'log_bin', 'datadir', 'port', 'socket', 'bind_address', 'read_only', 'super_read_only', 'skip_slave_start', 'skip_replica_start', 'log_slave_updates', 'log_replica_updates', 'sync_binlog', 'binlog_format', 'extra_port', 'admin_port', 'admin_address']))",message="config may not set server_id, GTID, binary log, read-only or replication start options, datadir, port, socket, bind_address or the administrative port (extra_port, admin_port, admin_address): mysqlfleet manages them"
	Config map[string]string `json:"config,omitempty"`

	// ServiceType of the client Service.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// Database is created on every server at its first start, out of the binary log (not through the image's
	// MYSQL_DATABASE, which would log it as the new server's own transaction).
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_]{1,64}$`
	Database string `json:"database,omitempty"`

	// User is created on every server at its first start, out of the binary log, with all privileges on
	// database. Its password is generated once on the hub and is the same in every member.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_]{1,32}$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['root', 'mysqlfleet_admin', 'mysqlfleet_repl'])",message="user may not be root, mysqlfleet_admin or mysqlfleet_repl: mysqlfleet creates and uses those accounts"
	User string `json:"user,omitempty"`

	// Placement chooses the members this database runs in.
	Placement Placement `json:"placement"`

	// Storage of each MySQL Pod.
	Storage Storage `json:"storage"`

	// Backup, when set, runs a backup CronJob in every member.
	// +optional
	Backup *Backup `json:"backup,omitempty"`

	// Restore creates this MySQLCluster from a backup of another one: in every member, the primary (ordinal 0)
	// loads the backup before it takes writes, and its replicas replicate it. It can only be set when the
	// MySQLCluster is created, and never changes.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restore is immutable: it says where this MySQLCluster's data came from"
	Restore *Restore `json:"restore,omitempty"`

	// DeletionPolicy says whether PersistentVolumeClaims and backups are kept (Retain) or deleted (Delete) when the
	// MySQLCluster is deleted. A member that leaves the placement keeps them under either policy.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Paused renders and reports in status what would be applied in each member, and applies nothing.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// Placement names members, selects them by label, or both; the union is placed.
//
// +kubebuilder:validation:XValidation:rule="(has(self.members) && size(self.members) > 0) || has(self.memberSelector)",message="placement needs members (a non-empty list of member names) or memberSelector"
type Placement struct {
	// Members are names of registered members.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="member names are lower case: letters, digits and '-', starting and ending with a letter or digit (the name of the member's registration Secret)"
	Members []string `json:"members,omitempty"`

	// MemberSelector selects registered members by their labels, e.g. mysqlfleet.io/cloud or mysqlfleet.io/region.
	// An empty selector selects every member.
	// +optional
	MemberSelector *metav1.LabelSelector `json:"memberSelector,omitempty"`
}

// StorageClassByCloud names a storage class for each cloud.
type StorageClassByCloud struct {
	// +optional
	// +kubebuilder:default=gp3
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	AWS string `json:"aws,omitempty"`
	// +optional
	// +kubebuilder:default=managed-csi
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Azure string `json:"azure,omitempty"`
	// +optional
	// +kubebuilder:default=pd-ssd
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	GCP string `json:"gcp,omitempty"`
}

// Storage is the data volume of each MySQL Pod. The class is, in order of precedence: storageClassName, the
// member's mysqlfleet.io/storage-class annotation, then storageClassByCloud for the member's cloud.
type Storage struct {
	// The size rules here and in PVCTarget test isQuantity first, so that a malformed size is reported once, by
	// the schema's pattern, and not again as a CEL evaluation error. They sit on the field rather than on the
	// struct so that the error names the field and its value.

	// Size of each Pod's data volume, such as 20Gi. It may grow, never shrink.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="storage.size must be a size greater than zero, such as 20Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !isQuantity(string(oldSelf)) || quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="storage.size may not shrink: volumes can only grow",messageExpression="'storage.size may not shrink below ' + string(oldSelf) + ': volumes can only grow'"
	Size resource.Quantity `json:"size"`

	// StorageClassByCloud picks the class by the member's cloud.
	// +optional
	// +kubebuilder:default={}
	StorageClassByCloud StorageClassByCloud `json:"storageClassByCloud,omitempty"`

	// StorageClassName overrides the class in every member.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// BackupMethod is how a backup is taken.
// +kubebuilder:validation:Enum=Logical;Physical
type BackupMethod string

const (
	// BackupLogical dumps the server (mariadb-dump or mysqldump) from the backup Job: any server of the engine
	// can load it.
	BackupLogical BackupMethod = "Logical"
	// BackupPhysical copies the server's data directory with mariadb-backup (MariaDB only), by the backup agent
	// that then runs beside every database server; restored only into the same MariaDB major.minor version.
	BackupPhysical BackupMethod = "Physical"
)

// Backup runs mysqldump on a schedule in every member.
//
// +kubebuilder:validation:XValidation:rule="!has(self.archive) || !has(self.target.pvc)",message="backup.archive needs an object store target (s3, gcs or azureBlob): a member's own volume would not keep the binary log through the loss of the member, and the member controller that archives cannot mount it",fieldPath=".archive"
type Backup struct {
	// Method is Logical (the default: a dump, taken by the backup Job) or Physical (MariaDB: a copy of the data
	// directory by mariadb-backup, taken by a backup agent that runs as a sidecar of every database Pod, which
	// the Pods are restarted once to get). Both come from a replica in sync when there is one. spec.restore
	// restores logical backups only: a physical one is restored by hand (mysqlfleet-backup restore --method
	// physical) until it restores them too.
	// +optional
	Method BackupMethod `json:"method,omitempty"`

	// Schedule in standard cron syntax (five fields, or a macro such as @daily). An H in the minute or hour field
	// stands for a value hashed from the database and member names, so that a fleet's backups do not all start
	// at once; H(a-b) hashes within a range.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// Retention is how many backups to keep.
	// +optional
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Retention int32 `json:"retention,omitempty"`

	// Target is where backups go: exactly one of pvc, s3, gcs or azureBlob.
	Target BackupTarget `json:"target"`

	// Image of the backup Job's dump container; it needs the engine's dump tool (mysqldump or mariadb-dump) and
	// nothing else: the backup runner, mysqlfleet-backup, is copied into it from the manager's image. Defaults
	// to the server's image.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Suspend stops scheduling new backups.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Archive, when set, keeps the primary's binary log in the target as it is written (MariaDB), next to the
	// backups, so that what was committed since the last backup survives the loss of the member's servers and a
	// backup can be rolled forward to any transaction since.
	// +optional
	Archive *BackupArchive `json:"archive,omitempty"`
}

// BackupArchive configures the continuous archive of the binary log. The member controller's leader in each
// member reads the primary's binary log as a replication client and stores it in segments under binlog/ in the
// backup target (see docs/backups.md).
type BackupArchive struct {
	// MaxSegmentAge is how long an archived transaction waits, at most, before it is stored: a segment is closed
	// this long after its first transaction arrived even when no other follows, so the archive lags the primary
	// by about this much whether writes are frequent or rare.
	// +optional
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="archive.maxSegmentAge must be a duration between 1s and 10m, such as 5s"
	MaxSegmentAge *metav1.Duration `json:"maxSegmentAge,omitempty"`
	// MaxRecoveryPointAge bounds the recovery point: once the oldest transaction of a member's primary that is
	// not yet stored is older than this (or its age is unknown for as long), the member's archive is Behind and
	// the MySQLCluster's Archived condition False.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="archive.maxRecoveryPointAge must be a duration between 10s and 24h, such as 1m"
	MaxRecoveryPointAge *metav1.Duration `json:"maxRecoveryPointAge,omitempty"`
}

// Restore names the backup a new MySQLCluster starts from.
type Restore struct {
	// Source is the MySQLCluster whose backups are restored. It is never written to.
	Source RestoreSource `json:"source"`
	// Member is the member whose backups are restored; default the source's member with the newest successful
	// backup, as the source's status shows it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Member string `json:"member,omitempty"`
	// Backup is the name of the backup (its start time, such as 20261124T051538123Z, as mysqlfleet backups
	// lists it); default the newest.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{8}T[0-9]{9}Z$`
	Backup string `json:"backup,omitempty"`
	// Target is where the backups are, when the source MySQLCluster no longer says so itself (it was deleted);
	// default the source's spec.backup.target. Its credentials Secret must exist in this MySQLCluster's
	// namespace in each member. A PVC target is the source's backup volume: restorable only in the same
	// namespace and in the member that holds it.
	// +optional
	Target *BackupTarget `json:"target,omitempty"`
}

// RestoredFrom is where a restore's backups are.
type RestoredFrom struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	// Member is the member whose backups are restored.
	Member string `json:"member"`
}

// RestoreSource names a MySQLCluster on the hub.
type RestoreSource struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=45
	Cluster string `json:"cluster"`
	// Namespace of the source; default this MySQLCluster's.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// BackupTarget is exactly one place for backups.
//
// +kubebuilder:validation:XValidation:rule="(has(self.pvc) ? 1 : 0) + (has(self.s3) ? 1 : 0) + (has(self.gcs) ? 1 : 0) + (has(self.azureBlob) ? 1 : 0) == 1",message="backup.target needs exactly one of pvc, s3, gcs or azureBlob"
type BackupTarget struct {
	// PVC keeps backups on a volume in each member.
	// +optional
	PVC *PVCTarget `json:"pvc,omitempty"`
	// S3 keeps backups in an S3 or S3-compatible bucket.
	// +optional
	S3 *BucketTarget `json:"s3,omitempty"`
	// GCS keeps backups in a Google Cloud Storage bucket.
	// +optional
	GCS *BucketTarget `json:"gcs,omitempty"`
	// AzureBlob keeps backups in an Azure Blob Storage container.
	// +optional
	AzureBlob *AzureBlobTarget `json:"azureBlob,omitempty"`
}

// PVCTarget is a backup volume in each member.
type PVCTarget struct {
	// Size of the backup volume, such as 50Gi. It may grow, never shrink.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="backup.target.pvc.size must be a size greater than zero, such as 50Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !isQuantity(string(oldSelf)) || quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="backup.target.pvc.size may not shrink: volumes can only grow",messageExpression="'backup.target.pvc.size may not shrink below ' + string(oldSelf) + ': volumes can only grow'"
	Size resource.Quantity `json:"size"`
	// StorageClassByCloud picks the class by the member's cloud.
	// +optional
	// +kubebuilder:default={}
	StorageClassByCloud StorageClassByCloud `json:"storageClassByCloud,omitempty"`
	// StorageClassName overrides the class in every member.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// SecretReference names a Secret in the MySQLCluster's namespace in each member. mysqlfleet never copies cloud
// credentials between clusters: distribute them with the tool that owns them (e.g. workload identity or a secrets
// manager).
type SecretReference struct {
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BucketTarget is an S3 or GCS bucket.
type BucketTarget struct {
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=222
	Bucket string `json:"bucket"`
	// Endpoint overrides the service URL, e.g. for an S3-compatible store.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches(r'^https?://[^\\s/]+(/\\S*)?$')",message="endpoint must be an http:// or https:// URL with a host, such as https://minio.example.com:9000"
	Endpoint string `json:"endpoint,omitempty"`
	// Prefix of the object keys; the member's name and the database's name are appended.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Prefix string `json:"prefix,omitempty"`
	// CredentialsSecretRef holds the store's credentials as environment variables for the backup Job.
	CredentialsSecretRef SecretReference `json:"credentialsSecretRef"`
}

// AzureBlobTarget is an Azure Blob Storage container.
type AzureBlobTarget struct {
	// Container is the name of an Azure Blob Storage container.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([a-z0-9-]*[a-z0-9])?$') && !self.contains('--')",message="container must be an Azure container name: 3 to 63 lower case letters, digits and single hyphens, starting and ending with a letter or digit"
	Container string `json:"container"`
	// Endpoint overrides the service URL, e.g. https://ACCOUNT.blob.core.windows.net.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches(r'^https?://[^\\s/]+(/\\S*)?$')",message="endpoint must be an http:// or https:// URL with a host, such as https://minio.example.com:9000"
	Endpoint string `json:"endpoint,omitempty"`
	// Prefix of the blob names; the member's name and the database's name are appended.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Prefix string `json:"prefix,omitempty"`
	// CredentialsSecretRef holds the store's credentials as environment variables for the backup Job.
	CredentialsSecretRef SecretReference `json:"credentialsSecretRef"`
}

// Phase summarises a MySQLCluster or one of its members.
// +kubebuilder:validation:Enum=Pending;Restoring;Progressing;Ready;Degraded;Paused;Unreachable;Deleting
type Phase string

const (
	PhasePending     Phase = "Pending"
	PhaseRestoring   Phase = "Restoring"
	PhaseProgressing Phase = "Progressing"
	PhaseReady       Phase = "Ready"
	PhaseDegraded    Phase = "Degraded"
	PhasePaused      Phase = "Paused"
	PhaseUnreachable Phase = "Unreachable"
	PhaseDeleting    Phase = "Deleting"
)

// PlannedObject is one object that would be applied in a member while the MySQLCluster is paused.
type PlannedObject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Action is Create, Update or Unchanged against what the member has now; Adopt for an object the
	// mysqlfleet.io/adopt annotation takes over; Conflict for an object of another owner, which is not written.
	// +kubebuilder:validation:Enum=Create;Update;Unchanged;Adopt;Conflict;Unknown
	Action string `json:"action"`
}

// ObjectRef names an object in a member and the owner it carries.
type ObjectRef struct {
	// Kind of the object, e.g. PersistentVolumeClaim.
	Kind string `json:"kind"`
	// Name of the object, in the MySQLCluster's namespace.
	Name string `json:"name"`
	// UID of the object itself.
	// +optional
	UID string `json:"uid,omitempty"`
	// OwnerUID is the mysqlfleet.io/cluster-uid label the object carries (for adopted objects: carried before),
	// empty when it has none: an object that mysqlfleet did not create.
	// +optional
	OwnerUID string `json:"ownerUID,omitempty"`
}

// MemberStatus is the state of the database in one member.
type MemberStatus struct {
	// Name of the member.
	Name string `json:"name"`
	// +optional
	Cloud Cloud `json:"cloud,omitempty"`
	// +optional
	Region string `json:"region,omitempty"`
	// StorageClass the data volumes use in this member.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Replicas is the desired number of Pods.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of ready Pods the member reports: servers that answer, whatever their role.
	// Replication says which of them serve as primary and as replicas in sync.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// BoundVolumes is the number of the database's data PersistentVolumeClaims that are bound.
	// +optional
	BoundVolumes int32 `json:"boundVolumes"`
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// LastBackup is when the last successful backup (one with a manifest) was complete, as its backup Job
	// reported it; see Backups.
	// +optional
	LastBackup *metav1.Time `json:"lastBackup,omitempty"`
	// LastScheduledBackup is when the backup CronJob last started a Job.
	// +optional
	LastScheduledBackup *metav1.Time `json:"lastScheduledBackup,omitempty"`
	// BackupSchedule is the schedule after H expansion, as the member runs it.
	// +optional
	BackupSchedule string `json:"backupSchedule,omitempty"`
	// LastError is the last error seen for this member, empty once it converged.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// Plan is what would be applied while the MySQLCluster is paused.
	// +optional
	// +listType=atomic
	Plan []PlannedObject `json:"plan,omitempty"`
	// Conflicts are objects in the member with the names this MySQLCluster needs that it did not create (they
	// carry another MySQLCluster's UID, or none). mysqlfleet neither writes over them nor deletes them; while any
	// remain, the StatefulSet is not created or scaled in this member. Adopt them with the annotation
	// mysqlfleet.io/adopt, or remove them.
	// +optional
	// +listType=atomic
	Conflicts []ObjectRef `json:"conflicts,omitempty"`
	// Adopted are the objects this MySQLCluster took over in this member through the mysqlfleet.io/adopt
	// annotation; an adopted PersistentVolumeClaim also carries the annotation mysqlfleet.io/adopted-from.
	// +optional
	// +listType=atomic
	Adopted []ObjectRef `json:"adopted,omitempty"`
	// Backups are the last successful backup and the last failed one, as the member controller read them from
	// the backup Jobs' reports: a backup counts only when its manifest was written.
	// +optional
	Backups *MemberBackups `json:"backups,omitempty"`
	// Restore is how the restore of spec.restore went in this member.
	// +optional
	Restore *MemberRestore `json:"restore,omitempty"`
	// Archive is the binary-log archive of spec.backup.archive in this member, as its member controller
	// reports it.
	// +optional
	Archive *MemberArchive `json:"archive,omitempty"`
	// Replication is the member's replicated set as its member controller last reported it (see
	// ReplicationReport); absent while no member controller has reported on this MySQLCluster's StatefulSet.
	// +optional
	Replication *MemberReplication `json:"replication,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MemberReplication is what the member controller reports about the set in one member, read by the hub through
// the member's API server.
type MemberReplication struct {
	// Primary is the Pod that is the writable primary; empty when there is none.
	// +optional
	Primary string `json:"primary,omitempty"`
	// WritesBlocked says why the primary's commits cannot return now (it waits for more semi-sync
	// acknowledgements than it has replicas connected to give them); empty while its writes can go on. The
	// primary then serves no writes, and the member controller goes on repairing the replicas.
	// +optional
	WritesBlocked string `json:"writesBlocked,omitempty"`
	// ReplicasInSync is how many replicas replicate from the primary with both threads running and a lag within
	// the member controller's bound; the member is Ready when it is replicas - 1.
	// +optional
	ReplicasInSync int32 `json:"replicasInSync"`
	// MaxLagSeconds is the highest replication lag among the replicas whose lag is known.
	// +optional
	MaxLagSeconds *int64 `json:"maxLagSeconds,omitempty"`
	// ErrantReplicas are the Pods holding transactions the primary does not have: fenced, out of every
	// Service, until the member controller rebuilds them (spec.errantServers RebuildWhenSafe, when provably
	// safe) or a human does (`mysqlfleet rebuild`).
	// +optional
	// +listType=atomic
	ErrantReplicas []string `json:"errantReplicas,omitempty"`
	// Unreachable are the Pods whose server the member controller could not read.
	// +optional
	// +listType=atomic
	Unreachable []string `json:"unreachable,omitempty"`
	// Decision is the member controller's last decision: Bootstrap, Adopt, Steady, Repair, FailoverStarted,
	// Failover, Switchover, Refused, or Unobserved when it could not look at the servers.
	// +optional
	Decision string `json:"decision,omitempty"`
	// LastTransition is the last change of primary the member controller completed.
	// +optional
	LastTransition *ReplicationTransition `json:"lastTransition,omitempty"`
	// RequestedPrimary is the Pod spec.primaries asks for in this member; empty without a request.
	// +optional
	RequestedPrimary string `json:"requestedPrimary,omitempty"`
	// Error is why the member controller's last pass could not see or do everything; empty when all is well.
	// +optional
	Error string `json:"error,omitempty"`
	// AsyncCommits is how many commits returned on the primary without a semi-sync acknowledgement since its
	// server started (ReplicationInstance.AsyncCommits): any increase means acknowledged writes a failover
	// could lose (the alert MySQLFleetAsyncCommits).
	// +optional
	AsyncCommits int64 `json:"asyncCommits,omitempty"`
	// Async says why the primary's commits return without a replica holding them (durability Preferred, no
	// replica can acknowledge); empty while semi-sync is in force.
	// +optional
	Async string `json:"async,omitempty"`
	// AsyncSince is when the member controller switched semi-sync off (durability Preferred); nil while it is on.
	// +optional
	AsyncSince *metav1.Time `json:"asyncSince,omitempty"`
	// LastAsyncWindow is the last window during which commits returned unacknowledged, once it has closed: a
	// failover within it could have lost commits made then.
	// +optional
	LastAsyncWindow *AsyncWindow `json:"lastAsyncWindow,omitempty"`
	// Rebuilds are the last servers the member controller emptied to seed them again, newest first, with the
	// transactions each discarded (ReplicationReport.Rebuilds).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Rebuilds []ServerRebuild `json:"rebuilds,omitempty"`
}

// AsyncWindow is a time during which a primary's commits returned without a replica holding them.
type AsyncWindow struct {
	// From is when the member controller switched semi-sync off.
	From metav1.Time `json:"from"`
	// To is when the hub first read that it was on again.
	To metav1.Time `json:"to"`
}

// ArchiveState is how a member's binary-log archive keeps up.
// +kubebuilder:validation:Enum=Archiving;Behind
type ArchiveState string

const (
	// ArchiveArchiving: every transaction of the primary older than maxRecoveryPointAge is stored.
	ArchiveArchiving ArchiveState = "Archiving"
	// ArchiveBehind: the archive has not stored the primary's transactions for longer than maxRecoveryPointAge
	// (it cannot read the primary or reach the store, or does not keep up), or has not said so for as long.
	ArchiveBehind ArchiveState = "Behind"
)

// MemberArchive is a member's binary-log archive. It changes when its state does, and its newest archived
// transaction at most once a minute while writes go on, so that a busy database does not rewrite its status
// every few seconds; the recovery point while Archiving is within maxRecoveryPointAge of now.
type MemberArchive struct {
	State ArchiveState `json:"state"`
	// Since is when State last changed.
	Since metav1.Time `json:"since"`
	// Source is the Pod whose binary log is read; empty while there is no primary to read.
	// +optional
	Source string `json:"source,omitempty"`
	// LatestTime is the time of the newest archived transaction as its server logged it (whole seconds), and
	// LatestPosition the GTID position after it: a restore can roll forward to here.
	// +optional
	LatestTime *metav1.Time `json:"latestTime,omitempty"`
	// +optional
	LatestPosition string `json:"latestPosition,omitempty"`
	// Gaps are places where the stored archive does not continue by GTID position (a segment lost, or the
	// archive resumed from a server without its position), after the oldest retained backup: no restore rolls
	// forward across one, and a backup taken after it starts a new window.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Gaps []ArchiveGap `json:"gaps,omitempty"`
	// Error is why the archive last stopped reading or storing, while it is not reading.
	// +optional
	Error string `json:"error,omitempty"`
}

// ArchiveGap is where a binary-log archive does not continue.
type ArchiveGap struct {
	// From is the GTID position the archive reached before the gap, To the one it goes on from after it.
	From string `json:"from"`
	To   string `json:"to"`
	// Reached is the time of the last transaction before the gap, as its server logged it: a restore from a
	// backup before the gap rolls forward to here and no further.
	// +optional
	Reached *metav1.Time `json:"reached,omitempty"`
}

// MemberBackups are the outcomes of a member's backup Jobs.
type MemberBackups struct {
	// LastSuccessful is the newest backup whose manifest was written.
	// +optional
	LastSuccessful *BackupRecord `json:"lastSuccessful,omitempty"`
	// LastFailure is the newest backup Job that failed, if it is newer than LastSuccessful.
	// +optional
	LastFailure *BackupFailure `json:"lastFailure,omitempty"`
	// Retained are the backups the member's store kept after the last successful backup's retention ran,
	// newest first (at most 25; mysqlfleet backups lists them).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=25
	Retained []BackupRecord `json:"retained,omitempty"`
}

// BackupRecord is one complete backup, from its manifest.
type BackupRecord struct {
	// Name identifies the backup in its store (its start time, UTC).
	Name string `json:"name"`
	// Time is when the backup was complete.
	Time metav1.Time `json:"time"`
	// DurationMilliseconds is how long it took.
	// +optional
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
	// Size is the stored (compressed) size in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// GTIDPosition is the GTID set of the dump's snapshot.
	// +optional
	GTIDPosition string `json:"gtidPosition,omitempty"`
	// Pod is the database Pod the dump was taken from.
	// +optional
	Pod string `json:"pod,omitempty"`
	// Method is Logical or Physical, from the manifest.
	// +optional
	Method BackupMethod `json:"method,omitempty"`
}

// BackupFailure is a backup Job that failed.
type BackupFailure struct {
	// Time is when the Job's Pod ended.
	Time metav1.Time `json:"time"`
	// Job is the backup Job's name.
	// +optional
	Job string `json:"job,omitempty"`
	// Reason is why, from the runner's report or the Pod's state.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// MemberRestore is the restore of spec.restore in one member.
type MemberRestore struct {
	// Phase is Pending (the restore Job has not finished), Succeeded or Failed.
	Phase string `json:"phase"`
	// Backup is the backup restored, once known.
	// +optional
	Backup *BackupRecord `json:"backup,omitempty"`
	// Reason says why a restore failed.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ReplicationTransition is a change of primary: Bootstrap, Adopt, Failover or Switchover.
type ReplicationTransition struct {
	Kind string `json:"kind"`
	// From and To are the Pods the primary moved from and to.
	// +optional
	From string `json:"from,omitempty"`
	// +optional
	To string `json:"to,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// ObservedTime is when the hub first read this transition in the member's report (the report carries no
	// clock, so that an idle set costs its member no writes).
	// +optional
	ObservedTime *metav1.Time `json:"observedTime,omitempty"`
}

// MySQLClusterStatus is the state of the database across its members.
type MySQLClusterStatus struct {
	// ObservedGeneration is the latest generation whose every placed member reached a verdict: applied, paused,
	// or refused for a reason only a change of the spec or of the member mends (invalid spec, namespace not
	// allowed, registration refused, conflicting objects). It does not advance while a member is unreachable or
	// its applies fail: the conditions, each with its own observedGeneration, say what was seen meanwhile.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// ReadyMembers is "ready/placed", e.g. "2/3".
	// +optional
	ReadyMembers string `json:"readyMembers,omitempty"`
	// ReadyReplicas is "ready/desired" Pods summed over the members, e.g. "5/6".
	// +optional
	ReadyReplicas string `json:"readyReplicas,omitempty"`
	// Serving is "serving/desired" servers summed over the members, e.g. "5/6": writable primaries plus replicas
	// in sync, as the members' controllers report them. A server that is up but in no role (not yet
	// replicating, lagging, errant) is not serving.
	// +optional
	Serving string `json:"serving,omitempty"`
	// StorageClasses lists the storage classes in use, one per distinct class, comma separated.
	// +optional
	StorageClasses string `json:"storageClasses,omitempty"`
	// LastBackup is the oldest of the members' last successful backups: every member has a backup at least this
	// recent.
	// +optional
	LastBackup *metav1.Time `json:"lastBackup,omitempty"`
	// RestoredFrom is the backup source spec.restore resolved to, when the MySQLCluster was created: kept so that
	// every later pass restores from the same member's backups.
	// +optional
	RestoredFrom *RestoredFrom `json:"restoredFrom,omitempty"`
	// Members is the state in each placed member, by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []MemberStatus `json:"members,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MySQLCluster is a MySQL database placed on members of the fleet. Use the full name
// mysqlclusters.mysqlfleet.io (or the short name myf) with kubectl: other MySQL operators also define a
// "mysqlclusters" resource.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=myf;myfleet,categories=mysqlfleet
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Replicas",type=string,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Serving",type=string,JSONPath=`.status.serving`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`,priority=10
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`,priority=10
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storage.size`,priority=10
// +kubebuilder:printcolumn:name="Storage Classes",type=string,JSONPath=`.status.storageClasses`,priority=10
// +kubebuilder:printcolumn:name="Last Backup",type=date,JSONPath=`.status.lastBackup`,priority=10
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,43}[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 45 characters: it names StatefulSets, Services and CronJobs in every member"
type MySQLCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MySQLClusterSpec   `json:"spec"`
	Status MySQLClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MySQLClusterList is a list of MySQLClusters.
type MySQLClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MySQLCluster `json:"items"`
}
