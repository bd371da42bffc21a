package mysql

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// MariaDBFlavor speaks to MariaDB 10.6 and later. It is the flavor this package's tests run against real
// servers (Debian's mariadb-server 10.11, see test/mysqltest).
//
// How it differs from MySQL, and what it does about it:
//   - GTIDs are domain-server-sequence and the server keeps positions, not sets (see GTIDSet). The executed
//     set is @@gtid_binlog_state ∪ @@gtid_slave_pos; with log_slave_updates (a boot option) the binlog state
//     holds everything the server applied. What a replica has received is Gtid_IO_Pos.
//   - A replica follows its source with CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos and START SLAVE, from
//     gtid_slave_pos set to gtid_current_pos first (ChangeSource).
//   - Read-only: MariaDB has no super_read_only. read_only stops every client that lacks READ_ONLY ADMIN, and
//     changing read_only requires READ_ONLY ADMIN, so the admin user holds it and could write on a read-only
//     server; ALL PRIVILEGES includes it too (root writing on a read-only replica makes an errant transaction).
//     The guarantee therefore rests on grants: application and replication users get no global privilege at
//     all, this package never writes data through the admin user, and Server.EnsureUser (the one replicated
//     write it makes) refuses to run on a read-only server. SUPER does not override read_only on 10.11.
//   - Semi-synchronous replication is built in (no plugin) since 10.3: rpl_semi_sync_master_* on the source,
//     rpl_semi_sync_slave_enabled on replicas, which must be set before the I/O thread connects. MariaDB has no
//     rpl_semi_sync_master_wait_for_slave_count: a commit waits for one acknowledgement, from whichever replica
//     answers first. ConfigureSemiSyncSource accepts WaitForReplicas 0 or 1 and returns ErrUnsupported above
//     that, rather than promising an N it would not keep. The wait point is set to AFTER_SYNC (MariaDB's
//     default is AFTER_COMMIT, which lets other sessions read a transaction no replica has yet).
//   - There is no WAIT_FOR_EXECUTED_GTID_SET; MASTER_GTID_WAIT waits for a position of the applier.
//   - The dump tool is mariadb-dump --single-transaction --gtid --master-data=1; the position is at the dump's end.
type MariaDBFlavor struct{}

var _ Flavor = MariaDBFlavor{}

// mariadbNeverTimeout is the largest rpl_semi_sync_master_timeout MariaDB takes (2^64-1 ms). -1 would be
// stored as 0 (fall back at once) and anything larger is cut to 2^63-1 at runtime and refused at startup.
const mariadbNeverTimeout = "18446744073709551615"

// mariadbAdminGrants are the admin user's privileges on MariaDB, each for a reason:
//   - data privileges and CREATE USER, WITH GRANT OPTION: create the application user and grant it its
//     database; SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD: consistent dumps (--master-data takes
//     FLUSH TABLES WITH READ LOCK for a moment);
//   - PROCESS, CONNECTION ADMIN: list and kill other users' connections at switchover;
//   - REPLICATION SLAVE ADMIN, SLAVE MONITOR: CHANGE MASTER, START/STOP/RESET SLAVE, gtid_slave_pos,
//     rpl_semi_sync_slave_enabled, SHOW SLAVE STATUS;
//   - REPLICATION MASTER ADMIN: rpl_semi_sync_master_*; BINLOG MONITOR: binlog positions for dumps;
//   - READ_ONLY ADMIN: SET GLOBAL read_only (and, unavoidably, writing past it; see MariaDBFlavor);
//   - BINLOG ADMIN: SET SESSION sql_log_bin=0 for a restore that must not become the server's own history.
//
// Not granted: SUPER, FILE, SHUTDOWN, CREATE TABLESPACE, FEDERATED ADMIN, SET USER.
var mariadbAdminGrants = []string{
	"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, RELOAD, PROCESS, REFERENCES, INDEX, ALTER, " +
		"SHOW DATABASES, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, REPLICATION SLAVE, BINLOG MONITOR, " +
		"CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, CREATE USER, EVENT, TRIGGER, DELETE HISTORY, " +
		"REPLICATION SLAVE ADMIN, REPLICATION MASTER ADMIN, SLAVE MONITOR, READ_ONLY ADMIN, CONNECTION ADMIN, " +
		"BINLOG ADMIN ON *.* TO %s WITH GRANT OPTION",
}

func (MariaDBFlavor) Engine() Engine { return MariaDB }

func (MariaDBFlavor) ParseGTIDSet(s string) (GTIDSet, error) { return parseMariaDBGTIDSet(s) }

func (MariaDBFlavor) BootOptions() []string {
	return []string{
		"log_bin=binlog",
		// A replica's binlog then holds what it applied: its binlog state is its executed set, and it can
		// serve as a source after a failover.
		"log_slave_updates=ON",
		"binlog_format=ROW",
		// Refuse out-of-order sequence numbers in a domain: divergence stops replication instead of being
		// applied, and positions stand for every earlier transaction.
		"gtid_strict_mode=ON",
		"sync_binlog=1",
		"innodb_flush_log_at_trx_commit=1",
		// Every server starts read-only and without replication until the controller tells it its role.
		"read_only=ON",
		"skip_slave_start=ON",
		// So that a restarted primary never waits AFTER_COMMIT, even before it is configured.
		"rpl_semi_sync_master_wait_point=AFTER_SYNC",
	}
}

func (f MariaDBFlavor) ServerInfo(ctx context.Context, db DB) (*ServerInfo, error) {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.version AS version, @@GLOBAL.server_id AS server_id, "+
		"@@GLOBAL.read_only AS read_only, @@GLOBAL.gtid_binlog_state AS gtid_binlog_state, "+
		"@@GLOBAL.gtid_slave_pos AS gtid_slave_pos")
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
	executed, err := f.executed(row)
	if err != nil {
		return nil, err
	}
	return &ServerInfo{
		Version:  row.String("version"),
		ServerID: uint32(id),
		SourceID: strconv.FormatInt(id, 10),
		ReadOnly: row.Bool("read_only"),
		Executed: executed,
	}, nil
}

func (f MariaDBFlavor) executed(row Row) (GTIDSet, error) {
	binlog, err := parseMariaDBGTIDSet(row.String("gtid_binlog_state"))
	if err != nil {
		return nil, err
	}
	applied, err := parseMariaDBGTIDSet(row.String("gtid_slave_pos"))
	if err != nil {
		return nil, err
	}
	return binlog.Union(applied), nil
}

func (f MariaDBFlavor) ExecutedGTIDSet(ctx context.Context, db DB) (GTIDSet, error) {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.gtid_binlog_state AS gtid_binlog_state, "+
		"@@GLOBAL.gtid_slave_pos AS gtid_slave_pos")
	if err != nil {
		return nil, fmt.Errorf("failed to read the executed GTIDs: %w", err)
	}
	return f.executed(row)
}

func (f MariaDBFlavor) ReplicaStatus(ctx context.Context, db DB) (*ReplicaStatus, error) {
	row, err := queryOne(ctx, db, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, fmt.Errorf("failed to read replica status: %w", err)
	}
	if row == nil || row.String("Master_Host") == "" {
		return nil, nil
	}
	received, err := parseMariaDBGTIDSet(row.String("Gtid_IO_Pos"))
	if err != nil {
		return nil, err
	}
	return replicaStatus(row, received, replicaColumns{
		host: "Master_Host", port: "Master_Port", io: "Slave_IO_Running", sql: "Slave_SQL_Running",
		lag: "Seconds_Behind_Master",
	})
}

func (MariaDBFlavor) SemiSyncStatus(ctx context.Context, db DB) (*SemiSyncStatus, error) {
	vars, err := variables(ctx, db, `SHOW GLOBAL VARIABLES LIKE 'rpl\_semi\_sync\_%'`)
	if err != nil {
		return nil, fmt.Errorf("failed to read semi-sync variables: %w", err)
	}
	status, err := variables(ctx, db, `SHOW GLOBAL STATUS LIKE 'Rpl\_semi\_sync\_%'`)
	if err != nil {
		return nil, fmt.Errorf("failed to read semi-sync status: %w", err)
	}
	return semiSyncStatus(vars, status, semiSyncNames{
		sourceEnabled: "rpl_semi_sync_master_enabled", replicaEnabled: "rpl_semi_sync_slave_enabled",
		waitPoint: "rpl_semi_sync_master_wait_point", timeout: "rpl_semi_sync_master_timeout",
		waitNoReplica: "rpl_semi_sync_master_wait_no_slave", sourceStatus: "rpl_semi_sync_master_status",
		clients: "rpl_semi_sync_master_clients", waitSessions: "rpl_semi_sync_master_wait_sessions",
		noTx: "rpl_semi_sync_master_no_tx",
	}, 1)
}

func (MariaDBFlavor) SetReadOnly(ctx context.Context, db DB, on bool) error {
	if err := db.Exec(ctx, "SET GLOBAL read_only = "+onOff(on)); err != nil {
		return fmt.Errorf("failed to set read_only %s: %w", onOff(on), err)
	}
	return nil
}

// ChangeSource resumes from gtid_current_pos: first it sets gtid_slave_pos to it, then CHANGE MASTER ...
// MASTER_USE_GTID = slave_pos. gtid_slave_pos alone is the last transaction the applier applied, which on a
// former primary is where it stood before its term, older than its own writes: a source whose binary log no
// longer reaches back that far (purged, or a server seeded since) refuses it with error 1236 ("Could not find
// GTID state requested by slave in any binlog files"), seen on kind when a primary cut off by the network came
// back to a primary that had been rebuilt in the fault before. gtid_current_pos takes, per domain, the server's
// own last write when it is newer than what it applied, and equals gtid_slave_pos on a server that only ever
// applied. Whether the receiver skips events that carry its own server_id depends on the engine and on
// semi-sync (see render.ServerIDScript), so no guarantee rests on it: every data directory has a server_id of
// its own, unique across the whole replicated set, members of other clusters included, and a server never
// receives another's transactions under its own server_id. Check a former primary for errant transactions
// before you re-point it: its current position then names a transaction the source does not have, which the
// source refuses, and with gtid_strict_mode replication stops at the first divergence.
func (MariaDBFlavor) ChangeSource(ctx context.Context, db DB, src Source) error {
	if err := db.Exec(ctx, "SET GLOBAL gtid_slave_pos = @@GLOBAL.gtid_current_pos"); err != nil {
		return fmt.Errorf("failed to resume from the current GTID position: %w", err)
	}
	stmt := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %d, MASTER_USER = %s, "+
		"MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos",
		quoteString(src.Host), src.Port, quoteString(src.User), quoteString(src.Password))
	if src.ConnectRetry > 0 {
		stmt += fmt.Sprintf(", MASTER_CONNECT_RETRY = %d", max(1, int(src.ConnectRetry/time.Second)))
	}
	if err := db.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("failed to point replication at %s:%d: %w", src.Host, src.Port, err)
	}
	return nil
}

func (MariaDBFlavor) StartReplica(ctx context.Context, db DB) error {
	return execf(ctx, db, "START SLAVE", "failed to start replication")
}

func (MariaDBFlavor) StopReplica(ctx context.Context, db DB) error {
	return execf(ctx, db, "STOP SLAVE", "failed to stop replication")
}

func (MariaDBFlavor) StopReplicaIO(ctx context.Context, db DB) error {
	return execf(ctx, db, "STOP SLAVE IO_THREAD", "failed to stop the replication receiver")
}

func (MariaDBFlavor) ResetReplica(ctx context.Context, db DB) error {
	return execf(ctx, db, "RESET SLAVE ALL", "failed to reset replication")
}

func (MariaDBFlavor) ConfigureSemiSyncSource(ctx context.Context, db DB, cfg SemiSync) error {
	if cfg.WaitForReplicas > 1 {
		return fmt.Errorf("semi-sync waiting for %d replicas: MariaDB waits for one acknowledgement: %w",
			cfg.WaitForReplicas, ErrUnsupported)
	}
	stmts := []string{"SET GLOBAL rpl_semi_sync_master_enabled = OFF"}
	if cfg.WaitForReplicas > 0 {
		timeout := mariadbNeverTimeout
		if cfg.Timeout > 0 {
			timeout = milliseconds(cfg.Timeout)
		}
		// Settings before the switch, so that no commit waits under the old ones.
		stmts = []string{
			"SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_SYNC'",
			// Wait even when no replica is connected: with OFF, a primary whose replicas are all gone
			// would commit asynchronously at once.
			"SET GLOBAL rpl_semi_sync_master_wait_no_slave = ON",
			"SET GLOBAL rpl_semi_sync_master_timeout = " + timeout,
			"SET GLOBAL rpl_semi_sync_master_enabled = ON",
		}
	}
	for _, s := range stmts {
		if err := db.Exec(ctx, s); err != nil {
			return fmt.Errorf("failed to configure semi-sync on the source: %w", err)
		}
	}
	return nil
}

// semiSyncReplicaKillTimeout is rpl_semi_sync_slave_kill_conn_timeout on a replica: how long STOP SLAVE waits
// for a connection to its primary, which it opens to end its own replication connection there. Against a frozen
// primary every STOP SLAVE IO_THREAD of a failover's first pass waits up to that long (0 is no bound; the
// default is 5). Nothing depends on that kill: a primary whose replica's connection
// stays open until it notices gets no acknowledgement through it.
const semiSyncReplicaKillTimeout = "1"

// ConfigureSemiSyncReplica also bounds the wait of STOP SLAVE on a frozen primary (see
// semiSyncReplicaKillTimeout) on a replica that acknowledges.
func (MariaDBFlavor) ConfigureSemiSyncReplica(ctx context.Context, db DB, on bool) error {
	if on {
		if err := execf(ctx, db, "SET GLOBAL rpl_semi_sync_slave_kill_conn_timeout = "+semiSyncReplicaKillTimeout,
			"failed to configure semi-sync on the replica"); err != nil {
			return err
		}
	}
	return execf(ctx, db, "SET GLOBAL rpl_semi_sync_slave_enabled = "+onOff(on),
		"failed to configure semi-sync on the replica")
}

// WaitForGTIDSet alternates MASTER_GTID_WAIT, which waits for the applier's position (gtid_slave_pos), with
// a look at the executed set, which also counts what the server wrote itself: MASTER_GTID_WAIT alone would
// wait forever on a primary for its own transactions. It is done when the executed set holds every
// (domain, server_id) run of set, not when its position per domain is as far: a server that lacks a whole run
// (one server_id's transactions, skipped or never received) can be ahead by position, and promoting it would
// lose that run.
func (f MariaDBFlavor) WaitForGTIDSet(ctx context.Context, db DB, set GTIDSet, timeout time.Duration) error {
	pos := mariadbPosition(set)
	deadline := time.Now().Add(timeout)
	for {
		executed, err := f.ExecutedGTIDSet(ctx, db)
		if err != nil {
			return err
		}
		if set.Subtract(executed).IsEmpty() {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("waiting for %s, applied %s: %w", set, executed, ErrTimeout)
		}
		row, err := queryOne(ctx, db, "SELECT MASTER_GTID_WAIT(?, ?) AS result", pos, seconds(min(left, time.Second)))
		if err != nil {
			return fmt.Errorf("failed to wait for %s: %w", pos, err)
		}
		if !row["result"].Valid {
			return fmt.Errorf("MASTER_GTID_WAIT(%q) returned NULL", pos)
		}
		if row.String("result") == "0" {
			// Reached by position but not by set (another history in the domain): don't spin.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

func (f MariaDBFlavor) EnsureUser(ctx context.Context, db DB, u User) error {
	return ensureUser(ctx, db, u, f.UserStatements)
}

func (MariaDBFlavor) UserStatements(u User) ([]string, error) {
	return userStatements(u, mariadbAdminGrants)
}

// DumpCommand uses --gtid with --master-data=1: the dump ends with SET GLOBAL gtid_slave_pos to the position
// of its snapshot (and starts with CHANGE MASTER TO MASTER_USE_GTID=slave_pos), so a server restored from it
// replicates from there. --master-data=2 would leave both commented out.
func (MariaDBFlavor) DumpCommand(o DumpOptions) []string {
	return append(o.connectionArgs(orDefault(o.Path, "mariadb-dump")),
		"--single-transaction", "--gtid", "--master-data=1",
		"--all-databases", "--triggers", "--routines", "--events", "--flush-privileges")
}

// RestoreCommand turns the binary log off for the restoring session: the restored rows are the source's
// history, not the new server's own transactions, and a binlogged restore would make them errant (and stop
// SET GLOBAL gtid_slave_pos at the end of the dump). Run it as the new server's root, over its socket: the
// dump recreates routines and views with their definers, which needs SET USER, and the admin user does not
// hold it (it would let the admin act as any account).
func (MariaDBFlavor) RestoreCommand(o DumpOptions) []string {
	return append(o.connectionArgs(orDefault(o.Path, "mariadb")),
		"--init-command=SET SESSION sql_log_bin = 0", "--binary-mode")
}

// NewClusterRestoreCommand leaves the binary log on: the loaded rows are the new set's own transactions.
func (MariaDBFlavor) NewClusterRestoreCommand(o DumpOptions) []string {
	return append(o.connectionArgs(orDefault(o.Path, "mariadb")), "--binary-mode")
}

// DumpGTIDPosition reads the SET GLOBAL gtid_slave_pos='...' that --gtid --master-data=1 writes: at the end of
// the dump when it holds the mysql schema (--all-databases, deferred so that the dumped mysql.gtid_slave_pos
// table does not overwrite it; as mariadb-dump 10.11 does), at the top otherwise. An empty position (a server
// that has written no transaction) is a valid, empty set.
func (MariaDBFlavor) DumpGTIDPosition(head, tail []byte) (GTIDSet, error) {
	const stmt = "SET GLOBAL gtid_slave_pos='"
	pos, ok := dumpStatement(tail, stmt)
	if !ok {
		pos, ok = dumpStatement(head, stmt)
	}
	if !ok {
		return nil, ErrNoGTIDPosition
	}
	return parseMariaDBGTIDSet(pos)
}
