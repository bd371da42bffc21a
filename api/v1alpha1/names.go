package v1alpha1

// Names of the objects mysqlfleet writes into each member for a MySQLCluster. They live in the member namespace
// of the same name as the MySQLCluster's namespace on the hub. metadata.name is at most 45 characters, so every
// derived name stays within the 52 characters a CronJob or StatefulSet allows.

// StatefulSetName is the MySQL StatefulSet; its Pods are <name>-0, <name>-1, ...
func (c *MySQLCluster) StatefulSetName() string { return c.Name }

// ServiceName is the client Service: the read-write one, an alias of PrimaryServiceName.
func (c *MySQLCluster) ServiceName() string { return c.Name }

// PrimaryServiceName is the read-write Service: it selects the Pod the member controller labelled primary.
func (c *MySQLCluster) PrimaryServiceName() string { return c.Name + "-primary" }

// ReplicasServiceName is the read-only Service: it selects the Pods labelled replica (in sync).
func (c *MySQLCluster) ReplicasServiceName() string { return c.Name + "-replicas" }

// HeadlessServiceName is the StatefulSet's governing Service, which gives each Pod a stable DNS name.
func (c *MySQLCluster) HeadlessServiceName() string { return c.Name + "-headless" }

// ConfigMapName holds my.cnf.
func (c *MySQLCluster) ConfigMapName() string { return c.Name + "-config" }

// CredentialsSecretName holds the root and application passwords, on the hub and in every member.
func (c *MySQLCluster) CredentialsSecretName() string { return c.Name + "-credentials" }

// PodDisruptionBudgetName limits voluntary disruption of the MySQL Pods.
func (c *MySQLCluster) PodDisruptionBudgetName() string { return c.Name }

// BackupCronJobName runs the backups.
func (c *MySQLCluster) BackupCronJobName() string { return c.Name + "-backup" }

// RestoreJobName loads spec.restore's backup into the Pod of ordinal 0.
func (c *MySQLCluster) RestoreJobName() string { return c.Name + "-restore" }

// BackupPVCName is the backup volume when backups go to a PVC.
func (c *MySQLCluster) BackupPVCName() string { return c.Name + "-backup" }

// DataVolumeName is the StatefulSet's volumeClaimTemplate; PVCs are named <DataVolumeName>-<name>-<ordinal>.
const DataVolumeName = "data"

// Keys of the credentials Secret.
const (
	RootPasswordKey = "root-password"
	PasswordKey     = "password"
	// AdminPasswordKey is the password of AdminUser, the member controller's account.
	AdminPasswordKey = "admin-password"
	// ReplicationPasswordKey is the password of ReplicationUser, the account replicas connect with.
	ReplicationPasswordKey = "replication-password"
	// InitScriptKey holds the SQL script that creates AdminUser and ReplicationUser on every server as its data
	// directory is first initialised (mounted into /docker-entrypoint-initdb.d), with the binary log off.
	InitScriptKey = "init.sql"
)

// Accounts mysqlfleet creates on every server; spec.user may not take these names.
const (
	// AdminUser is the member controller's account: status, replication, read-only, connections; no SUPER.
	AdminUser = "mysqlfleet_admin"
	// ReplicationUser is the account replicas replicate with: REPLICATION SLAVE and nothing else.
	ReplicationUser = "mysqlfleet_repl"
)
