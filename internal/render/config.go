package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

const (
	// MyCnfKey is the ConfigMap key of the option file. The official images read every *.cnf file in
	// /etc/mysql/conf.d (their my.cnf ends with !includedir /etc/mysql/conf.d/).
	MyCnfKey = "my.cnf"
	// ConfigHashAnnotation on the Pod template is a hash of my.cnf. mysqld reads its options only at start, so a
	// change of the hash is what rolls the Pods onto new options.
	ConfigHashAnnotation = "mysqlfleet.io/config-hash"

	// DataMountPath is where the data volume is mounted.
	DataMountPath = "/var/lib/mysql"
	// DataDir is a directory inside the data volume rather than its root: the root of a fresh ext4 volume holds
	// lost+found, and mysqld refuses to initialise a data directory that is not empty.
	DataDir = DataMountPath + "/data"
	// ConfigMountPath is where the ConfigMap is mounted.
	ConfigMountPath = "/etc/mysql/conf.d"

	// AdminPort is the server's reserved administrative port: MariaDB's extra_port, MySQL's admin_port. The
	// member controller and the readiness probe log in there, so that application sessions that exhaust
	// max_connections (on a primary whose commits all wait for a semi-sync acknowledgement, say) never lock
	// them out. 33062 is MySQL's default admin_port; MariaDB has no default (extra_port 0 is off) and takes the
	// same, so that one number serves both engines. Replication stays on MySQLPort.
	AdminPort = 33062
	// AdminPortName names AdminPort on the container. No Service publishes it: on MariaDB any account may log
	// in on extra_port, which is reserved only by not being published.
	AdminPortName = "admin"
	// adminMaxConnections is MariaDB's extra_max_connections: the controller's pool (a few connections at
	// most), a readiness probe, the receivers of up to 8 replicas (spec.replicas is at most 9) and a human,
	// with room to spare.
	adminMaxConnections = 20
)

// configKey is the CRD's rule for spec.config keys; it is checked again here because a key is written into the
// option file as is, and a newline in it would start a new section.
var configKey = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// managedOptions are set by mysqlfleet, in my.cnf or on the mysqld command line, and may not be overridden by
// spec.config: an option file's later lines win, so a user's gtid_mode would silently replace ours.
var managedOptions = []string{
	"server_id", "gtid_mode", "enforce_gtid_consistency", "gtid_strict_mode", "log_bin", "datadir", "port", "socket",
	"bind_address", "read_only", "super_read_only", "skip_slave_start", "skip_replica_start", "log_slave_updates",
	"log_replica_updates", "sync_binlog", "binlog_format", "extra_port", "admin_port", "admin_address",
}

// optionPrefixes are the modifiers mysqld accepts in front of any option name (skip-log-bin turns log_bin off).
var optionPrefixes = []string{"loose_", "skip_", "disable_", "enable_", "maximum_"}

// myCnf renders the [mysqld] section: mysqlfleet's defaults first, then spec.config sorted by key so that the file,
// and with it the config hash, does not change with map order. server-id is not here: it differs per Pod and is
// passed on the command line (see mysqldScript).
func myCnf(c *v1alpha1.MySQLCluster) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by mysqlfleet for MySQLCluster %s/%s. Change spec.config on the hub instead: edits here\n",
		c.Namespace, c.Name)
	b.WriteString("# are overwritten. server-id is set per Pod on the mysqld command line.\n")
	b.WriteString("[mysqld]\n")
	b.WriteString("datadir = " + DataDir + "\n")
	fmt.Fprintf(&b, "port = %d\n", MySQLPort)
	writeAdminPort(&b, c)
	// Clients reach MySQL through Services from changing Pod IPs; resolving their names only adds a DNS lookup
	// to every login and grants written for host names that would not match anyway.
	b.WriteString("skip-name-resolve\n")
	b.WriteString("character-set-server = utf8mb4\n")
	// The engine's boot options (internal/mysql's Flavor, the same that the tests' real servers boot with): a
	// row-based binary log with GTIDs on every Pod, replicas logging what they apply, durable commits, and
	// every server read-only and without replication until the member controller gives it its role.
	b.WriteString("# replication (the engine's boot options)\n")
	for _, o := range flavor(c).BootOptions() {
		name, value, _ := strings.Cut(o, "=")
		fmt.Fprintf(&b, "%s = %s\n", name, value)
	}

	keys := make([]string, 0, len(c.Spec.Config))
	for k := range c.Spec.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 0 {
		b.WriteString("# spec.config\n")
	}
	for _, k := range keys {
		v := c.Spec.Config[k]
		if err := checkOption(k, v); err != nil {
			return "", err
		}
		// Values are written as given: quote a value that contains '#', as MySQL option files require.
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	return b.String(), nil
}

// writeAdminPort opens AdminPort. MariaDB's extra_port listens where port does, with its own
// extra_max_connections (measured on 10.11 with the default one-thread-per-connection: a login there succeeds
// while the MySQL port refuses every ordinary user with ERROR 1040). MySQL's admin interface needs
// admin_address, a single address and no wildcard, which differs per Pod: serverScript passes the Pod's IP.
func writeAdminPort(b *strings.Builder, c *v1alpha1.MySQLCluster) {
	b.WriteString("# Reserved administrative access for the member controller, the readiness probe and the\n")
	b.WriteString("# replicas' receivers, which application sessions cannot exhaust. No Service publishes this\n")
	b.WriteString("# port")
	if engine(c) == v1alpha1.EngineMariaDB {
		b.WriteString(": any account may log in on it, so it is reserved by not being published.\n")
		fmt.Fprintf(b, "extra_port = %d\nextra_max_connections = %d\n", AdminPort, adminMaxConnections)
		return
	}
	// Not yet run against a real MySQL 8.4 (see mysql.MySQLFlavor): written from MySQL's documentation.
	b.WriteString("; logging in there needs SERVICE_CONNECTION_ADMIN. admin-address is the Pod's IP, on\n")
	b.WriteString("# the mysqld command line.\n")
	fmt.Fprintf(b, "admin_port = %d\n", AdminPort)
}

func checkOption(key, value string) error {
	if !configKey.MatchString(key) {
		return fmt.Errorf("%w: spec.config key %q is not a mysqld option name", ErrInvalid, key)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("%w: spec.config[%q]: the value may not contain line breaks", ErrInvalid, key)
	}
	name := strings.ReplaceAll(key, "-", "_")
	for _, p := range optionPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && slices.Contains(managedOptions, rest) {
			name = rest
			break
		}
	}
	if slices.Contains(managedOptions, name) {
		return fmt.Errorf("%w: spec.config[%q]: mysqlfleet manages %s", ErrInvalid, key, name)
	}
	return nil
}

// configHash identifies the contents of my.cnf for ConfigHashAnnotation.
func configHash(cnf string) string {
	sum := sha256.Sum256([]byte(cnf))
	return hex.EncodeToString(sum[:])
}

func configMap(c *v1alpha1.MySQLCluster, m placement.Member, cnf string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(c.ConfigMapName(), c.Namespace).
		WithLabels(objectLabels(c, m.Name, ComponentDatabase)).
		WithData(map[string]string{MyCnfKey: cnf})
}
