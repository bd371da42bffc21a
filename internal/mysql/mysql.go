package mysql

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// MySQLFlavor speaks to MySQL 8.0.26 and later, written against MySQL 8.4 LTS: CHANGE REPLICATION SOURCE TO
// with SOURCE_AUTO_POSITION, START/STOP/RESET REPLICA, SHOW REPLICA STATUS, the semisync_source and
// semisync_replica plugins, super_read_only. Earlier 8.0 releases still use the removed master/slave names
// and are not supported.
//
// Not yet run against a real MySQL server: no MySQL 8.4 server can be installed on the machines this was
// written on (only Debian's MariaDB). Its statements are covered by unit tests that record them
// (mysql_test.go); the behaviour they claim, such as semi-sync never falling back or super_read_only stopping
// the admin user, is proven here only for MariaDB. Run the real-server tests against MySQL before relying on
// this flavor.
//
// Read-only is super_read_only plus read_only: nobody but the replication applier writes, not even the admin
// user (whose CONNECTION_ADMIN would pass read_only alone).
//
// Semi-sync waits for rpl_semi_sync_source_wait_for_replica_count acknowledgements, AFTER_SYNC.
type MySQLFlavor struct{}

var _ Flavor = MySQLFlavor{}

// mysqlNeverTimeout is the documented maximum of rpl_semi_sync_source_timeout, 2^32-1 ms (about 49.7 days).
const mysqlNeverTimeout = "4294967295"

// mysqlAdminGrants are the admin user's privileges on MySQL, each for a reason:
//   - data privileges and CREATE USER, WITH GRANT OPTION: create the application user and grant it its
//     database; SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD: consistent dumps (--source-data takes
//     FLUSH TABLES WITH READ LOCK for a moment); INSERT also covers INSTALL PLUGIN (mysql.plugin);
//   - PROCESS, CONNECTION_ADMIN: list and kill other users' connections at switchover;
//   - REPLICATION CLIENT, REPLICATION_SLAVE_ADMIN: SHOW REPLICA STATUS, CHANGE REPLICATION SOURCE, START/STOP/
//     RESET REPLICA;
//   - SYSTEM_VARIABLES_ADMIN: read_only, super_read_only, the semi-sync variables, sql_log_bin;
//   - BACKUP_ADMIN, CLONE_ADMIN: LOCK INSTANCE FOR BACKUP and CLONE, for seeding replicas;
//   - SERVICE_CONNECTION_ADMIN: log in on the administrative interface (admin_address and admin_port, which
//     render opens), where the controller connects so that application sessions that exhaust max_connections
//     do not lock it out. Not yet run against a real MySQL 8.4 (see MySQLFlavor).
//
// Not granted: SUPER, FILE, SHUTDOWN, CREATE TABLESPACE, SYSTEM_USER, ROLE_ADMIN.
var mysqlAdminGrants = []string{
	"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, RELOAD, PROCESS, REFERENCES, INDEX, ALTER, " +
		"SHOW DATABASES, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, REPLICATION SLAVE, REPLICATION CLIENT, " +
		"CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, CREATE USER, EVENT, TRIGGER ON *.* TO %s " +
		"WITH GRANT OPTION",
	"GRANT SYSTEM_VARIABLES_ADMIN, REPLICATION_SLAVE_ADMIN, CONNECTION_ADMIN, BACKUP_ADMIN, CLONE_ADMIN, " +
		"SERVICE_CONNECTION_ADMIN ON *.* TO %s",
}

func (MySQLFlavor) Engine() Engine { return MySQL }

func (MySQLFlavor) ParseGTIDSet(s string) (GTIDSet, error) { return parseMySQLGTIDSet(s) }

func (MySQLFlavor) BootOptions() []string {
	return []string{
		"log_bin=binlog",
		"log_replica_updates=ON",
		"gtid_mode=ON",
		"enforce_gtid_consistency=ON",
		"sync_binlog=1",
		"innodb_flush_log_at_trx_commit=1",
		// Every server starts read-only and without replication until the controller tells it its role.
		// super_read_only is not among the boot options: the official image's entrypoint initialises a new
		// data directory through a server started with these same options, as root, and super_read_only
		// would refuse its setup. read_only already stops every account without CONNECTION_ADMIN or SUPER
		// (the application's); the controller turns super_read_only on whenever it makes a server a replica
		// or fences it (SetReadOnly sets both).
		"read_only=ON",
		"skip_replica_start=ON",
		// Loaded at boot, so that the admin user needs no INSTALL PLUGIN and a restarted server knows the
		// variables at once.
		"plugin_load_add=semisync_source.so",
		"plugin_load_add=semisync_replica.so",
	}
}

func (MySQLFlavor) ServerInfo(ctx context.Context, db DB) (*ServerInfo, error) {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.version AS version, @@GLOBAL.server_id AS server_id, "+
		"@@GLOBAL.server_uuid AS server_uuid, @@GLOBAL.read_only AS read_only, "+
		"@@GLOBAL.super_read_only AS super_read_only, @@GLOBAL.gtid_executed AS gtid_executed")
	if err != nil {
		return nil, fmt.Errorf("failed to read server variables: %w", err)
	}
	if row == nil {
		return nil, fmt.Errorf("failed to read server variables: no row")
	}
	id, err := row.Int("server_id")
	if err != nil {
		return nil, err
	}
	executed, err := parseMySQLGTIDSet(row.String("gtid_executed"))
	if err != nil {
		return nil, err
	}
	return &ServerInfo{
		Version:       row.String("version"),
		ServerID:      uint32(id),
		SourceID:      row.String("server_uuid"),
		ReadOnly:      row.Bool("read_only"),
		SuperReadOnly: row.Bool("super_read_only"),
		Executed:      executed,
	}, nil
}

func (MySQLFlavor) ExecutedGTIDSet(ctx context.Context, db DB) (GTIDSet, error) {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.gtid_executed AS gtid_executed")
	if err != nil {
		return nil, fmt.Errorf("failed to read gtid_executed: %w", err)
	}
	return parseMySQLGTIDSet(row.String("gtid_executed"))
}

func (MySQLFlavor) ReplicaStatus(ctx context.Context, db DB) (*ReplicaStatus, error) {
	row, err := queryOne(ctx, db, "SHOW REPLICA STATUS")
	if err != nil {
		return nil, fmt.Errorf("failed to read replica status: %w", err)
	}
	if row == nil || row.String("Source_Host") == "" {
		return nil, nil
	}
	// RECEIVED_TRANSACTION_SET is what the receiver has written to the relay log (Retrieved_Gtid_Set in SHOW
	// REPLICA STATUS, which MySQL may print truncated across lines); it holds the transactions received in this
	// session only, so add the executed set to get everything the server has or is about to apply.
	recv, err := queryOne(ctx, db, "SELECT RECEIVED_TRANSACTION_SET AS received, @@GLOBAL.gtid_executed AS executed "+
		"FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''")
	if err != nil {
		return nil, fmt.Errorf("failed to read the received transactions: %w", err)
	}
	received, err := parseMySQLGTIDSet(recv.String("received"))
	if err != nil {
		return nil, err
	}
	executed, err := parseMySQLGTIDSet(recv.String("executed"))
	if err != nil {
		return nil, err
	}
	return replicaStatus(row, received.Union(executed), replicaColumns{
		host: "Source_Host", port: "Source_Port", io: "Replica_IO_Running", sql: "Replica_SQL_Running",
		lag: "Seconds_Behind_Source",
	})
}

func (MySQLFlavor) SemiSyncStatus(ctx context.Context, db DB) (*SemiSyncStatus, error) {
	vars, err := variables(ctx, db, `SHOW GLOBAL VARIABLES LIKE 'rpl\_semi\_sync\_%'`)
	if err != nil {
		return nil, fmt.Errorf("failed to read semi-sync variables: %w", err)
	}
	status, err := variables(ctx, db, `SHOW GLOBAL STATUS LIKE 'Rpl\_semi\_sync\_%'`)
	if err != nil {
		return nil, fmt.Errorf("failed to read semi-sync status: %w", err)
	}
	return semiSyncStatus(vars, status, semiSyncNames{
		sourceEnabled: "rpl_semi_sync_source_enabled", replicaEnabled: "rpl_semi_sync_replica_enabled",
		waitPoint: "rpl_semi_sync_source_wait_point", waitCount: "rpl_semi_sync_source_wait_for_replica_count",
		timeout: "rpl_semi_sync_source_timeout", waitNoReplica: "rpl_semi_sync_source_wait_no_replica",
		sourceStatus: "rpl_semi_sync_source_status", clients: "rpl_semi_sync_source_clients",
		waitSessions: "rpl_semi_sync_source_wait_sessions", noTx: "rpl_semi_sync_source_no_tx",
	}, 0)
}

// SetReadOnly turns both switches in the order MySQL needs: super_read_only=ON implies read_only, and
// read_only=OFF implies super_read_only=OFF; setting both explicitly keeps the intent readable.
func (MySQLFlavor) SetReadOnly(ctx context.Context, db DB, on bool) error {
	stmts := []string{"SET GLOBAL read_only = ON", "SET GLOBAL super_read_only = ON"}
	if !on {
		stmts = []string{"SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"}
	}
	for _, s := range stmts {
		if err := db.Exec(ctx, s); err != nil {
			return fmt.Errorf("failed to set read-only %s: %w", onOff(on), err)
		}
	}
	return nil
}

// ChangeSource asks for the source's public key: the replication user authenticates with
// caching_sha2_password (8.4's default), which over a connection without TLS needs it.
func (MySQLFlavor) ChangeSource(ctx context.Context, db DB, src Source) error {
	stmt := fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = %s, SOURCE_PORT = %d, SOURCE_USER = %s, "+
		"SOURCE_PASSWORD = %s, SOURCE_AUTO_POSITION = 1, GET_SOURCE_PUBLIC_KEY = 1",
		quoteString(src.Host), src.Port, quoteString(src.User), quoteString(src.Password))
	if src.ConnectRetry > 0 {
		stmt += fmt.Sprintf(", SOURCE_CONNECT_RETRY = %d", max(1, int(src.ConnectRetry/time.Second)))
	}
	if err := db.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("failed to point replication at %s:%d: %w", src.Host, src.Port, err)
	}
	return nil
}

func (MySQLFlavor) StartReplica(ctx context.Context, db DB) error {
	return execf(ctx, db, "START REPLICA", "failed to start replication")
}

func (MySQLFlavor) StopReplica(ctx context.Context, db DB) error {
	return execf(ctx, db, "STOP REPLICA", "failed to stop replication")
}

func (MySQLFlavor) StopReplicaIO(ctx context.Context, db DB) error {
	return execf(ctx, db, "STOP REPLICA IO_THREAD", "failed to stop the replication receiver")
}

func (MySQLFlavor) ResetReplica(ctx context.Context, db DB) error {
	return execf(ctx, db, "RESET REPLICA ALL", "failed to reset replication")
}

// installPlugin loads a semi-sync plugin when the server was not booted with it (BootOptions loads both).
func installPlugin(ctx context.Context, db DB, name, library string) error {
	rows, err := db.Query(ctx, "SELECT PLUGIN_NAME FROM information_schema.PLUGINS "+
		"WHERE PLUGIN_NAME = ? AND PLUGIN_STATUS = 'ACTIVE'", name)
	if err != nil {
		return fmt.Errorf("failed to look for plugin %s: %w", name, err)
	}
	if len(rows) > 0 {
		return nil
	}
	return execf(ctx, db, "INSTALL PLUGIN "+name+" SONAME "+quoteString(library), "failed to install plugin "+name)
}

func (MySQLFlavor) ConfigureSemiSyncSource(ctx context.Context, db DB, cfg SemiSync) error {
	if cfg.WaitForReplicas < 0 {
		return fmt.Errorf("semi-sync cannot wait for %d replicas", cfg.WaitForReplicas)
	}
	if err := installPlugin(ctx, db, "rpl_semi_sync_source", "semisync_source.so"); err != nil {
		return err
	}
	stmts := []string{"SET GLOBAL rpl_semi_sync_source_enabled = OFF"}
	if cfg.WaitForReplicas > 0 {
		timeout := mysqlNeverTimeout
		if cfg.Timeout > 0 {
			timeout = milliseconds(cfg.Timeout)
		}
		// Settings before the switch, so that no commit waits under the old ones.
		stmts = []string{
			"SET GLOBAL rpl_semi_sync_source_wait_point = 'AFTER_SYNC'",
			// Wait even when fewer replicas than the count are connected, rather than commit asynchronously.
			"SET GLOBAL rpl_semi_sync_source_wait_no_replica = ON",
			"SET GLOBAL rpl_semi_sync_source_wait_for_replica_count = " + strconv.Itoa(cfg.WaitForReplicas),
			"SET GLOBAL rpl_semi_sync_source_timeout = " + timeout,
			"SET GLOBAL rpl_semi_sync_source_enabled = ON",
		}
	}
	for _, s := range stmts {
		if err := db.Exec(ctx, s); err != nil {
			return fmt.Errorf("failed to configure semi-sync on the source: %w", err)
		}
	}
	return nil
}

func (MySQLFlavor) ConfigureSemiSyncReplica(ctx context.Context, db DB, on bool) error {
	if err := installPlugin(ctx, db, "rpl_semi_sync_replica", "semisync_replica.so"); err != nil {
		return err
	}
	return execf(ctx, db, "SET GLOBAL rpl_semi_sync_replica_enabled = "+onOff(on),
		"failed to configure semi-sync on the replica")
}

// WaitForGTIDSet uses WAIT_FOR_EXECUTED_GTID_SET, in waits of at most a second so that a cancelled context
// leaves no long wait behind on the server.
func (MySQLFlavor) WaitForGTIDSet(ctx context.Context, db DB, set GTIDSet, timeout time.Duration) error {
	if set.Engine() != MySQL {
		panic(fmt.Sprintf("mysql: a %s GTID set given to the MySQL flavor", set.Engine()))
	}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		row, err := queryOne(ctx, db, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?) AS result",
			set.String(), seconds(min(max(left, 0), time.Second)))
		if err != nil {
			return fmt.Errorf("failed to wait for %s: %w", set, err)
		}
		if row.String("result") == "0" {
			return nil
		}
		if time.Until(deadline) <= 0 {
			return fmt.Errorf("waiting for %s: %w", set, ErrTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (f MySQLFlavor) EnsureUser(ctx context.Context, db DB, u User) error {
	return ensureUser(ctx, db, u, f.UserStatements)
}

// UserStatements also lets the replication user log in on the administrative interface, where replicas
// connect so that a primary whose sessions exhaust max_connections still has them (see render.AdminPort).
func (MySQLFlavor) UserStatements(u User) ([]string, error) {
	stmts, err := userStatements(u, mysqlAdminGrants)
	if err != nil || u.Kind != ReplicationUser {
		return stmts, err
	}
	return append(stmts, "GRANT SERVICE_CONNECTION_ADMIN ON *.* TO "+account(u.Name, u.Host)), nil
}

// DumpCommand takes --source-data=2 for the brief global read lock that makes the snapshot and its
// gtid_executed agree, and --set-gtid-purged=ON to write that set into the dump as SET @@GLOBAL.gtid_purged
// (with SQL_LOG_BIN=0 for the session), which is all SOURCE_AUTO_POSITION needs on the restored server.
// The CHANGE REPLICATION SOURCE line --source-data writes stays commented out (=2): file and position are
// not used with auto-positioning.
func (MySQLFlavor) DumpCommand(o DumpOptions) []string {
	return append(o.connectionArgs(orDefault(o.Path, "mysqldump")),
		"--single-transaction", "--source-data=2", "--set-gtid-purged=ON",
		"--all-databases", "--triggers", "--routines", "--events", "--flush-privileges")
}

// RestoreCommand needs nothing beyond the client: the dump turns the binary log off for its session. Run it as
// the new server's root: recreating routines and views with their definers needs SET_ANY_DEFINER, which the
// admin user does not hold.
func (MySQLFlavor) RestoreCommand(o DumpOptions) []string {
	return append(o.connectionArgs(orDefault(o.Path, "mysql")), "--binary-mode")
}

// NewClusterRestoreCommand is RestoreCommand: mysqldump's SQL_LOG_BIN and GTID_PURGED statements, which keep a
// plain restore out of the binary log, are what internal/backup strips for a new set.
func (f MySQLFlavor) NewClusterRestoreCommand(o DumpOptions) []string { return f.RestoreCommand(o) }

// DumpGTIDPosition reads the SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '...'; that --set-gtid-purged=ON writes
// at the top of the dump, before any table; mysqldump breaks a set of several server UUIDs across lines.
//
// Written from mysqldump's source and documentation; not yet run against a real mysqldump 8.4 here (see
// MySQLFlavor). The unit test feeds it the documented form.
func (MySQLFlavor) DumpGTIDPosition(head, _ []byte) (GTIDSet, error) {
	set, ok := dumpStatement(head, "SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '")
	if !ok {
		return nil, ErrNoGTIDPosition
	}
	return parseMySQLGTIDSet(set)
}
