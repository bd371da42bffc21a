package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// ErrReadOnly is returned by Server.EnsureUser on a read-only server: the statements would become the
// server's own transactions, errant on a replica.
var ErrReadOnly = errors.New("server is read-only")

// ErrCommitsWaiting is returned by Server.StartReplicaOf when commits on the server still wait for a semi-sync
// acknowledgement: turning semi-sync off to make it a replica would report them committed to their clients.
// Fence the server first (SetReadOnly, KillConnections).
var ErrCommitsWaiting = errors.New("commits are waiting for a semi-sync acknowledgement")

// Role is what a server is doing in a replicated set, as read from the server itself.
type Role string

const (
	// RolePrimary is a writable server that replicates from nobody.
	RolePrimary Role = "Primary"
	// RoleReplica is a server with a source configured, whether its threads run or not.
	RoleReplica Role = "Replica"
	// RoleNone is a read-only server without a source: booted and not yet told its role, or a fenced primary.
	RoleNone Role = "None"
)

// Status is everything a controller reads from one server in one pass.
type Status struct {
	ServerInfo
	Role Role
	// Replica is nil when the server has no source.
	Replica *ReplicaStatus
	// SemiSync is the server's semi-synchronous replication state.
	SemiSync *SemiSyncStatus
}

// Server is one database server and the operations a member controller performs on it. It is safe for
// concurrent use; it holds no state beyond its connection pool.
type Server struct {
	flavor Flavor
	db     DB
	pool   *sql.DB
}

// Open connects to a server with a go-sql-driver DSN ("user:password@tcp(host:port)/"). A DSN without a
// connection timeout gets 10s, so that an unreachable server fails a status read instead of hanging it.
// Statements have no read timeout of their own (a semi-sync wait or WaitForGTID may take long); bound them
// with the context.
func Open(f Flavor, dsn string) (*Server, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("failed to parse DSN: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to set up a connection to %s: %w", cfg.Addr, err)
	}
	pool := sql.OpenDB(connector)
	pool.SetMaxIdleConns(2)
	pool.SetConnMaxIdleTime(time.Minute)
	return &Server{flavor: f, db: NewDB(pool), pool: pool}, nil
}

// NewServer builds a Server on any DB, e.g. one that records statements.
func NewServer(f Flavor, db DB) *Server { return &Server{flavor: f, db: db} }

// Guarded is the server, on the same connections, with every statement that changes it asked of g first:
// within one operation too, so that a Promote whose caller is paused in its wait and refused when it resumes
// stops before SET GLOBAL read_only = OFF. Closing it does nothing; close the Server it came from. A nil guard
// is no guard: s itself.
func (s *Server) Guarded(g Guard) *Server {
	if g == nil {
		return s
	}
	return &Server{flavor: s.flavor, db: guardedDB{DB: s.db, guard: g}}
}

// Close closes the connection pool Open made.
func (s *Server) Close() error {
	if s.pool == nil {
		return nil
	}
	return s.pool.Close()
}

// Flavor is the server's flavor.
func (s *Server) Flavor() Flavor { return s.flavor }

// Status reads the server's identity, role, read-only flags, GTID sets, replication and semi-sync state.
func (s *Server) Status(ctx context.Context) (*Status, error) {
	info, err := s.flavor.ServerInfo(ctx, s.db)
	if err != nil {
		return nil, err
	}
	replica, err := s.flavor.ReplicaStatus(ctx, s.db)
	if err != nil {
		return nil, err
	}
	semi, err := s.flavor.SemiSyncStatus(ctx, s.db)
	if err != nil {
		return nil, err
	}
	st := &Status{ServerInfo: *info, Replica: replica, SemiSync: semi, Role: RoleNone}
	switch {
	case replica != nil:
		st.Role = RoleReplica
	case !info.ReadOnly && !info.SuperReadOnly:
		st.Role = RolePrimary
	}
	return st, nil
}

// ExecutedGTIDSet reads the transactions the server has applied.
func (s *Server) ExecutedGTIDSet(ctx context.Context) (GTIDSet, error) {
	return s.flavor.ExecutedGTIDSet(ctx, s.db)
}

// SetReadOnly makes the server refuse (on) or accept (off) client writes. Turning it on waits for commits in
// progress, and that includes commits waiting for a semi-sync acknowledgement: on a primary no replica
// acknowledges (they are gone, or their receivers stopped) it blocks until ctx ends. Fence such a primary with
// KillConnections first, which ends the waiting commits (they stay in its binary log and are in doubt: see
// ErrantTransactions), then SetReadOnly.
func (s *Server) SetReadOnly(ctx context.Context, on bool) error {
	return s.flavor.SetReadOnly(ctx, s.db, on)
}

// StartReplicaOf makes the server a read-only, semi-sync-acknowledging replica of src with GTID
// auto-positioning, and starts replication. It may be called again to point at another source. On a former
// primary, check it for errant transactions (ErrantTransactions) first: replication cannot reconcile them.
func (s *Server) StartReplicaOf(ctx context.Context, src Source) error {
	f, db := s.flavor, s.db
	if err := f.SetReadOnly(ctx, db, true); err != nil {
		return err
	}
	semi, err := f.SemiSyncStatus(ctx, db)
	if err != nil {
		return err
	}
	if semi.SourceEnabled && semi.WaitingSessions > 0 {
		return fmt.Errorf("cannot make a replica of %s:%d: %d %w", src.Host, src.Port, semi.WaitingSessions,
			ErrCommitsWaiting)
	}
	steps := []func() error{
		func() error { return f.StopReplica(ctx, db) },
		// A replica acknowledges; it must not wait for acknowledgements of what it applies.
		func() error { return f.ConfigureSemiSyncSource(ctx, db, SemiSync{}) },
		// Before the receiver connects: the source learns it is semi-sync at connection time.
		func() error { return f.ConfigureSemiSyncReplica(ctx, db, true) },
		func() error { return f.ChangeSource(ctx, db, src) },
		func() error { return f.StartReplica(ctx, db) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// StopReplica stops both replication threads and keeps the source configured.
func (s *Server) StopReplica(ctx context.Context) error { return s.flavor.StopReplica(ctx, s.db) }

// StartReplica starts the replication threads of a server whose source is configured.
func (s *Server) StartReplica(ctx context.Context) error { return s.flavor.StartReplica(ctx, s.db) }

// StopReplicaIO stops the receiver and leaves the applier running: the server stops fetching (and
// acknowledging) transactions from its source and goes on applying what it received. A failover does this on
// every replica before it chooses one, so that a lost primary that still runs cannot have a commit acknowledged.
func (s *Server) StopReplicaIO(ctx context.Context) error { return s.flavor.StopReplicaIO(ctx, s.db) }

// Promote makes the server the writable primary. If it is a replica, it first stops fetching from its source
// and waits until it has applied everything it received: a semi-sync acknowledgement means "received", not
// "applied", and resetting replication throws the unapplied relay log away (the notes measured thousands of
// acknowledged writes lost that way). The wait is bounded only by ctx. It then forgets the source, stops
// acknowledging, configures semi-sync as a source and turns read-only off, last: on a Guarded server the guard
// is asked again right before it, however long the wait took.
func (s *Server) Promote(ctx context.Context, semi SemiSync) error {
	f, db := s.flavor, s.db
	replica, err := f.ReplicaStatus(ctx, db)
	if err != nil {
		return err
	}
	if replica != nil {
		if err := f.StopReplicaIO(ctx, db); err != nil {
			return err
		}
		// Read again: the receiver may have written more before it stopped.
		if replica, err = f.ReplicaStatus(ctx, db); err != nil {
			return err
		}
		if replica != nil {
			executed, err := f.ExecutedGTIDSet(ctx, db)
			if err != nil {
				return err
			}
			if !executed.Contains(replica.Received) {
				if !replica.SQLRunning {
					return fmt.Errorf("cannot promote: received transactions are not applied and the applier "+
						"is stopped (error %d: %s)", replica.LastSQLErrno, replica.LastSQLError)
				}
				if err := f.WaitForGTIDSet(ctx, db, replica.Received, timeoutOf(ctx)); err != nil {
					return fmt.Errorf("cannot promote before the received transactions are applied: %w", err)
				}
			}
		}
		if err := f.StopReplica(ctx, db); err != nil {
			return err
		}
		if err := f.ResetReplica(ctx, db); err != nil {
			return err
		}
	}
	if err := f.ConfigureSemiSyncReplica(ctx, db, false); err != nil {
		return err
	}
	if err := s.configureSource(ctx, semi); err != nil {
		return err
	}
	return f.SetReadOnly(ctx, db, false)
}

// timeoutOf is the time left before ctx's deadline, or a century without one.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 100 * 365 * 24 * time.Hour
}

// ConfigureSemiSync sets the source side of semi-synchronous replication: commits wait (AFTER_SYNC) for
// waitForReplicas acknowledgements, for at most timeout; zero timeout means never fall back to asynchronous.
// waitForReplicas 0 turns semi-sync off. MariaDB waits for one acknowledgement and refuses more with
// ErrUnsupported.
//
// A source that has fallen back to asynchronous (enabled, not active: a commit waited out the timeout, which
// on MySQL is at most 49.7 days) is re-armed: semi-sync is turned off and on again, since enabling it where it
// is enabled changes nothing and it would otherwise stay asynchronous until a replica catches up. No commit
// waits on a source that fell back, so turning it off releases none; the commits of the moment it is off go
// asynchronously, as they already did. (Should a replica catch up and turn it active just before, the commits
// that then wait are released unacknowledged and counted in AsyncCommits.)
func (s *Server) ConfigureSemiSync(ctx context.Context, waitForReplicas int, timeout time.Duration) error {
	return s.configureSource(ctx, SemiSync{WaitForReplicas: waitForReplicas, Timeout: timeout})
}

// configureSource is ConfigureSemiSync, for Promote too.
func (s *Server) configureSource(ctx context.Context, cfg SemiSync) error {
	if cfg.WaitForReplicas > 0 {
		st, err := s.flavor.SemiSyncStatus(ctx, s.db)
		if err != nil {
			return err
		}
		if st.SourceEnabled && !st.SourceActive {
			if err := s.flavor.ConfigureSemiSyncSource(ctx, s.db, SemiSync{}); err != nil {
				return err
			}
		}
	}
	return s.flavor.ConfigureSemiSyncSource(ctx, s.db, cfg)
}

// WaitForGTID waits until the server has applied set (MySQL: WAIT_FOR_EXECUTED_GTID_SET; MariaDB:
// MASTER_GTID_WAIT), at most timeout and no longer than ctx allows. It returns an error wrapping ErrTimeout
// when the time runs out.
func (s *Server) WaitForGTID(ctx context.Context, set GTIDSet, timeout time.Duration) error {
	return s.flavor.WaitForGTIDSet(ctx, s.db, set, min(timeout, timeoutOf(ctx)))
}

// systemUsers run inside the server; killing them would stop replication or the event scheduler.
var systemUsers = []string{"system user", "event_scheduler"}

// replicationCommands are the commands of connections that feed replicas; a switchover needs them to go on
// sending the old primary's last transactions.
var replicationCommands = []string{"Binlog Dump", "Binlog Dump GTID", "Daemon", "Killed"}

// KillConnections ends every client connection except this Server's own (its user's), those of keepUsers,
// the server's internal threads and replicas' binlog dumps, and returns how many it ended. With SetReadOnly it
// fences a primary at switchover: a client that still holds a connection cannot keep a transaction open past
// the switch. The SQL is the same on both engines.
func (s *Server) KillConnections(ctx context.Context, keepUsers ...string) (int, error) {
	rows, err := s.db.Query(ctx, "SELECT ID, USER, COMMAND, SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AS me "+
		"FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()")
	if err != nil {
		return 0, fmt.Errorf("failed to list connections: %w", err)
	}
	killed := 0
	for _, r := range rows {
		user, command := r.String("USER"), r.String("COMMAND")
		if user == r.String("me") || slices.Contains(keepUsers, user) || slices.Contains(systemUsers, user) ||
			slices.Contains(replicationCommands, command) {
			continue
		}
		id, err := r.Int("ID")
		if err != nil {
			return killed, err
		}
		if err := s.db.Exec(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
			if errorNumber(err) == errNoSuchThread {
				continue // ended on its own meanwhile
			}
			return killed, fmt.Errorf("failed to kill connection %d of %s: %w", id, user, err)
		}
		killed++
	}
	return killed, nil
}

// EnsureUser creates or updates a user on the primary, whence it replicates to every replica. It refuses a
// read-only server with ErrReadOnly: on a replica the statements would be errant transactions (MariaDB's admin
// user could write them past read_only).
func (s *Server) EnsureUser(ctx context.Context, u User) error {
	info, err := s.flavor.ServerInfo(ctx, s.db)
	if err != nil {
		return err
	}
	if info.ReadOnly || info.SuperReadOnly {
		return fmt.Errorf("cannot create user %s: %w", u.Name, ErrReadOnly)
	}
	return s.flavor.EnsureUser(ctx, s.db, u)
}

// EnsureUserUnlogged creates or updates a user on this server alone, with the binary log off for the session,
// so that it makes no transaction of the server's own. It is for bootstrapping the admin and replication users
// on every server before replication is set up, and needs an account that may set sql_log_bin (root). A MySQL
// server with super_read_only on refuses it.
func (s *Server) EnsureUserUnlogged(ctx context.Context, u User) error {
	return s.db.Session(ctx, func(db DB) error {
		if err := db.Exec(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
			return fmt.Errorf("failed to turn the binary log off for the session: %w", err)
		}
		return s.flavor.EnsureUser(ctx, db, u)
	})
}
