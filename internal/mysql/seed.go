package mysql

import (
	"context"
	"errors"
	"fmt"
)

// Seeding a replica: a server whose data directory is empty (new, or its volume lost) can follow its source by
// GTID auto-positioning only while the source's binary logs still hold every transaction the source executed.
// Once some are gone (PURGE BINARY LOGS, binlog_expire_logs_seconds / expire_logs_days, or a source that was
// itself seeded from a dump), the empty server is seeded instead: a dump of the source (DumpCommand) loaded
// out of its binary log (RestoreCommand) between PrepareSeed and FinishSeed, which record the dump's GTID
// position as what it has executed. internal/backup.Seed does the streaming.

// ErrHoldsTransactions is returned by Server.PrepareSeed for a server that has executed transactions: loading a
// dump over it would destroy them, so it is never seeded.
var ErrHoldsTransactions = errors.New("the server holds transactions")

// PurgedGTIDSet reads the server's purged transactions: MySQL keeps them in gtid_purged (purged binary logs and
// the GTID_PURGED a restored dump sets).
func (MySQLFlavor) PurgedGTIDSet(ctx context.Context, db DB) (GTIDSet, error) {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.gtid_purged AS gtid_purged")
	if err != nil {
		return nil, fmt.Errorf("failed to read gtid_purged: %w", err)
	}
	if row == nil {
		return nil, errors.New("failed to read gtid_purged: no row")
	}
	return parseMySQLGTIDSet(row.String("gtid_purged"))
}

// PurgedGTIDSet reads the binlog state at the start of the oldest binary log (the Gtid_list event
// BINLOG_GTID_POS(file, 4) returns): the binary logs hold only what came after it. MariaDB has no gtid_purged;
// this is what its own check answers a replica with (error 1236, "required binlog files have been purged").
//
// It is exact only if every transaction the server executed after that state went through its binary log. A
// server loaded from a dump out of its binary log has executed the dump's position without logging it, and its
// first binary log starts with an empty state: MariaDB would then serve a new empty replica from that binary
// log as if it were the whole history, silently without what came before (seen on 10.11). SetGTIDPosition
// therefore writes the dump's position into a fresh binary log's state, so that this read stays exact on
// seeded servers too.
func (MariaDBFlavor) PurgedGTIDSet(ctx context.Context, db DB) (GTIDSet, error) {
	logs, err := db.Query(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("failed to list the binary logs: %w", err)
	}
	if len(logs) == 0 {
		return nil, errors.New("the server has no binary log")
	}
	oldest := logs[0].String("Log_name")
	row, err := queryOne(ctx, db, "SELECT BINLOG_GTID_POS(?, 4) AS pos", oldest)
	if err != nil {
		return nil, fmt.Errorf("failed to read the GTID state at the start of %s: %w", oldest, err)
	}
	if row == nil || !row["pos"].Valid {
		// Purged between the two statements: the next read finds the new oldest.
		return nil, fmt.Errorf("failed to read the GTID state at the start of %s: it is gone", oldest)
	}
	return parseMariaDBGTIDSet(row.String("pos"))
}

// PrepareLoad turns super_read_only off and leaves read_only on: root (SUPER, CONNECTION_ADMIN) may then
// load the dump, applications may not write.
func (MySQLFlavor) PrepareLoad(ctx context.Context, db DB) error {
	return execf(ctx, db, "SET GLOBAL super_read_only = OFF", "failed to let the loading account write")
}

// ForgetTransactions: RESET BINARY LOGS AND GTIDS (RESET MASTER before 8.4, which removed it) empties
// gtid_executed and gtid_purged with the binary logs; super_read_only is turned back on.
func (MySQLFlavor) ForgetTransactions(ctx context.Context, db DB) error {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.version AS version")
	if err != nil {
		return fmt.Errorf("failed to read the version: %w", err)
	}
	reset := "RESET BINARY LOGS AND GTIDS"
	var major, minor int
	if _, err := fmt.Sscanf(row.String("version"), "%d.%d", &major, &minor); err == nil && major == 8 && minor < 4 {
		reset = "RESET MASTER"
	}
	if err := execf(ctx, db, reset, "failed to forget the executed transactions"); err != nil {
		return err
	}
	return execf(ctx, db, "SET GLOBAL super_read_only = ON", "failed to turn super_read_only back on")
}

// ForgetTransactions: RESET MASTER empties the binary logs and gtid_binlog_state; gtid_slave_pos, what
// replication applied, is emptied on its own. Together they are gtid_current_pos.
func (MariaDBFlavor) ForgetTransactions(ctx context.Context, db DB) error {
	for _, s := range []string{"RESET MASTER", "SET GLOBAL gtid_slave_pos = ''"} {
		if err := execf(ctx, db, s, "failed to forget the executed transactions"); err != nil {
			return err
		}
	}
	return nil
}

// PrepareLoad has nothing to do: root holds READ_ONLY ADMIN and writes past read_only, which stays on.
func (MariaDBFlavor) PrepareLoad(context.Context, DB) error { return nil }

// SetGTIDPosition: mysqldump's dump has set GTID_PURGED (and so gtid_executed) to its position already; it is
// set here only if the load left gtid_executed empty, and anything else is refused. super_read_only is turned
// back on.
func (f MySQLFlavor) SetGTIDPosition(ctx context.Context, db DB, pos GTIDSet) error {
	executed, err := f.ExecutedGTIDSet(ctx, db)
	if err != nil {
		return err
	}
	switch {
	case executed.IsEmpty() && !pos.IsEmpty():
		if err := db.Exec(ctx, "SET GLOBAL gtid_purged = "+quoteString(pos.String())); err != nil {
			return fmt.Errorf("failed to set gtid_purged to %s: %w", pos, err)
		}
	case !sameSet(executed, pos):
		return fmt.Errorf("the server executed %s while loading a dump of position %s", executed, pos)
	}
	return execf(ctx, db, "SET GLOBAL super_read_only = ON", "failed to turn super_read_only back on")
}

// SetGTIDPosition empties the binary log (RESET MASTER, which the loading session did not write to: refused
// otherwise) and starts a new one whose binlog state is pos (give it HistoryAt the dump's position, so that it
// names every server that wrote before), then sets gtid_slave_pos to pos's position (the dump's own last
// statement did so already; it is set again for a dump that did not). gtid_binlog_state can only be set on an
// empty binary log.
func (f MariaDBFlavor) SetGTIDPosition(ctx context.Context, db DB, pos GTIDSet) error {
	row, err := queryOne(ctx, db, "SELECT @@GLOBAL.gtid_binlog_state AS gtid_binlog_state")
	if err != nil {
		return fmt.Errorf("failed to read gtid_binlog_state: %w", err)
	}
	if state := row.String("gtid_binlog_state"); state != "" {
		return fmt.Errorf("the server's binary log holds transactions (%s): it is not what loading a dump leaves", state)
	}
	position := mariadbPosition(pos)
	stmts := []string{
		"RESET MASTER",
		"SET GLOBAL gtid_binlog_state = " + quoteString(mariadbState(pos)),
		"SET GLOBAL gtid_slave_pos = " + quoteString(position),
	}
	for _, s := range stmts {
		if err := db.Exec(ctx, s); err != nil {
			return fmt.Errorf("failed to record the GTID position %s: %s: %w", position, s, err)
		}
	}
	return nil
}

// sameSet tells whether two sets hold the same transactions.
func sameSet(a, b GTIDSet) bool { return a.Contains(b) && b.Contains(a) }

// PurgedGTIDSet reads the transactions this server's binary logs no longer hold (see Flavor.PurgedGTIDSet).
func (s *Server) PurgedGTIDSet(ctx context.Context) (GTIDSet, error) {
	return s.flavor.PurgedGTIDSet(ctx, s.db)
}

// PrepareSeed readies an empty server to load a dump of another: it refuses, with ErrHoldsTransactions, a server
// that has executed any transaction, stops and forgets replication (so that nothing is applied while the dump
// loads) and lets the loading account write past read-only. Run it, the load and FinishSeed as root: the
// dump recreates accounts, routines and views with their definers.
func (s *Server) PrepareSeed(ctx context.Context) error {
	f, db := s.flavor, s.db
	executed, err := f.ExecutedGTIDSet(ctx, db)
	if err != nil {
		return err
	}
	if !executed.IsEmpty() {
		return fmt.Errorf("%w (%s): seeding would destroy them", ErrHoldsTransactions, executed)
	}
	if err := f.StopReplica(ctx, db); err != nil {
		return err
	}
	if err := f.ResetReplica(ctx, db); err != nil {
		return err
	}
	return f.PrepareLoad(ctx, db)
}

// FinishSeed records pos, the loaded dump's GTID position, as what the server has executed (Flavor.
// SetGTIDPosition), and checks that it now has executed exactly that.
func (s *Server) FinishSeed(ctx context.Context, pos GTIDSet) error {
	f, db := s.flavor, s.db
	if err := f.SetGTIDPosition(ctx, db, pos); err != nil {
		return err
	}
	executed, err := f.ExecutedGTIDSet(ctx, db)
	if err != nil {
		return err
	}
	if !sameSet(executed, pos) {
		return fmt.Errorf("after seeding, the server has executed %s, not the dump's position %s", executed, pos)
	}
	return nil
}
