package mysql

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrChanged is returned by Empty for a server whose executed set is not the one the caller decided from.
var ErrChanged = errors.New("the server's executed transactions changed since they were read")

// systemSchemas are the databases a data directory has before anything else: Empty keeps them.
var systemSchemas = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true,
	"sys": true}

// Empty makes a server what a new data directory is once the image has initialised it, so that it can be
// seeded again: it forgets its replication source, drops every database but the system schemas (the accounts
// in mysql stay), forgets every transaction it executed (its binary logs and GTID state), all out of the binary
// log, and then runs the statements of init (the rendered init script, mysql.InitScript: the databases and
// accounts every server creates for itself; "" for none). It refuses a writable server, and one whose executed
// set, read once its replication has stopped, is not expect (ErrChanged): only what was judged is discarded.
// A nil expect empties it whatever it executed: for a caller that knows all of it is held elsewhere. Run it as
// root, whose privileges the drops and resets need. The server's server_id stays: replaying the binary logs
// that hold its own former transactions would skip them (see the engine's seeding), so an emptied server is
// seeded from a dump.
//
// Not yet run against a real MySQL 8.4 (see MySQLFlavor).
func (s *Server) Empty(ctx context.Context, expect GTIDSet, init string) error {
	f, db := s.flavor, s.db
	info, err := f.ServerInfo(ctx, db)
	if err != nil {
		return err
	}
	if !info.ReadOnly && !info.SuperReadOnly {
		return errors.New("the server is writable: only a fenced server is emptied")
	}
	// Replication stops before the executed set is compared: a replica that was still applying is then
	// refused once and found unchanged the next time, instead of racing its source for ever.
	if err := f.StopReplica(ctx, db); err != nil {
		return err
	}
	if expect != nil {
		if info, err = f.ServerInfo(ctx, db); err != nil {
			return err
		}
		if !sameSet(info.Executed, expect) {
			return fmt.Errorf("%w: it has executed %s, not %s", ErrChanged, info.Executed, expect)
		}
	}
	if err := f.ResetReplica(ctx, db); err != nil {
		return err
	}
	return db.Session(ctx, func(db DB) error {
		if err := execf(ctx, db, "SET SESSION sql_log_bin = 0", "failed to turn the binary log off"); err != nil {
			return err
		}
		if err := f.PrepareLoad(ctx, db); err != nil {
			return err
		}
		rows, err := db.Query(ctx, "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA")
		if err != nil {
			return fmt.Errorf("failed to list the databases: %w", err)
		}
		for _, r := range rows {
			name := r.String("name")
			if systemSchemas[strings.ToLower(name)] {
				continue
			}
			if err := db.Exec(ctx, "DROP DATABASE "+quoteIdent(name)); err != nil {
				return fmt.Errorf("failed to drop database %s: %w", name, err)
			}
		}
		for _, stmt := range InitStatements(init) {
			if err := db.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("failed to run the init script: %w", err)
			}
		}
		return f.ForgetTransactions(ctx, db)
	})
}

// InitStatements splits a script InitScript wrote into its statements: one a line, ending with ";", comments
// ("--") left out.
func InitStatements(script string) []string {
	var out []string
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		out = append(out, strings.TrimSuffix(line, ";"))
	}
	return out
}
