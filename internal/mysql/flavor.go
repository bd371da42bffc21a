package mysql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Engine names a database engine. The values are those of MySQLCluster's spec.engine.
type Engine string

const (
	// MySQL is Oracle's MySQL, 8.0.26 and later (8.4 LTS the reference): the release that finished renaming
	// master/slave to source/replica in statements, variables and the semi-sync plugins.
	MySQL Engine = "MySQL"
	// MariaDB is MariaDB Server 10.6 and later (10.11 and 11.4 LTS included).
	MariaDB Engine = "MariaDB"
)

// ErrUnsupported is returned for a request an engine cannot honour, such as a semi-sync wait for more than one
// acknowledgement on MariaDB.
var ErrUnsupported = errors.New("not supported by this engine")

// ErrTimeout is returned when a wait (WaitForGTID) ends before the server reached what it waited for.
var ErrTimeout = errors.New("timed out")

// Flavor holds every piece of SQL that differs between engines: how to read GTID sets and replica status,
// point a replica at a source, stop and reset replication, make a server read-only, configure semi-synchronous
// replication, wait for a GTID set, create users, and how to dump and restore with a GTID position. Flavors
// hold no state; they run statements on the DB they are given, so a test can record them.
//
// Server builds the operations a member controller needs out of these steps; use it rather than a Flavor
// directly unless you need one step on its own.
type Flavor interface {
	// Engine is the engine this flavor speaks to.
	Engine() Engine
	// ParseGTIDSet parses a GTID set (or, for MariaDB, a position or binlog state) in the engine's notation.
	ParseGTIDSet(s string) (GTIDSet, error)
	// BootOptions are the server options (my.cnf form, name=value) every server of a replicated set boots with:
	// binary log, GTIDs, read-only, and replication not started until the server is told its role. server_id
	// is per server and not among them.
	BootOptions() []string

	// ServerInfo reads the server's identity, read-only flags and executed GTID set.
	ServerInfo(ctx context.Context, db DB) (*ServerInfo, error)
	// ExecutedGTIDSet reads the transactions the server has applied (committed), its own and replicated ones.
	ExecutedGTIDSet(ctx context.Context, db DB) (GTIDSet, error)
	// ReplicaStatus reads the state of replication, or nil when the server has no source configured.
	ReplicaStatus(ctx context.Context, db DB) (*ReplicaStatus, error)
	// SemiSyncStatus reads the semi-synchronous replication settings and counters.
	SemiSyncStatus(ctx context.Context, db DB) (*SemiSyncStatus, error)

	// SetReadOnly makes the server refuse (on) or accept (off) writes from clients other than replication.
	SetReadOnly(ctx context.Context, db DB, on bool) error
	// ChangeSource points the server at a source with GTID auto-positioning. Replication must be stopped.
	ChangeSource(ctx context.Context, db DB, src Source) error
	// StartReplica starts both replication threads.
	StartReplica(ctx context.Context, db DB) error
	// StopReplica stops both replication threads; stopping stopped threads is not an error.
	StopReplica(ctx context.Context, db DB) error
	// StopReplicaIO stops fetching from the source and leaves the applier running, so that what was received
	// (and possibly acknowledged) gets applied.
	StopReplicaIO(ctx context.Context, db DB) error
	// ResetReplica forgets the source and the relay log. Replication must be stopped.
	ResetReplica(ctx context.Context, db DB) error
	// ConfigureSemiSyncSource sets the source side of semi-synchronous replication.
	ConfigureSemiSyncSource(ctx context.Context, db DB, cfg SemiSync) error
	// ConfigureSemiSyncReplica sets whether the server acknowledges transactions as a semi-sync replica. It
	// takes effect when the replication I/O thread next connects.
	ConfigureSemiSyncReplica(ctx context.Context, db DB, on bool) error
	// WaitForGTIDSet waits until the server has applied set, at most timeout; ErrTimeout after that.
	WaitForGTIDSet(ctx context.Context, db DB, set GTIDSet, timeout time.Duration) error
	// EnsureUser creates the user if it does not exist, sets its password and grants its role's privileges.
	EnsureUser(ctx context.Context, db DB, u User) error
	// UserStatements are the statements EnsureUser runs, for a script that creates the user (InitScript).
	UserStatements(u User) ([]string, error)

	// DumpCommand is the command line of a consistent logical dump that records the GTID position, so that a
	// server restored from it can replicate from the dumped source. The password is not on it: give it in
	// the file named by DumpOptions.DefaultsFile.
	DumpCommand(o DumpOptions) []string
	// RestoreCommand is the command line that loads such a dump (on standard input) into an empty server
	// without writing the restored data as the server's own transactions. It runs as that server's root.
	RestoreCommand(o DumpOptions) []string
	// NewClusterRestoreCommand is the command line that loads a dump (on standard input) into the primary of a
	// new set as that set's own history: the binary log stays on, so that its replicas replicate what is
	// loaded. The dump must be stripped of what belongs to the source (see internal/backup).
	NewClusterRestoreCommand(o DumpOptions) []string
	// PurgedGTIDSet reads the transactions the server executed that its binary logs no longer hold (purged, or
	// loaded from a dump rather than written there): a replica lacking any of them cannot get it by GTID
	// auto-positioning from this server and must be seeded instead.
	PurgedGTIDSet(ctx context.Context, db DB) (GTIDSet, error)
	// ForgetTransactions empties the binary logs and the GTID state of a server whose replication is stopped
	// and reset: it has then executed nothing. It undoes PrepareLoad. See Server.Empty.
	ForgetTransactions(ctx context.Context, db DB) error
	// PrepareLoad lets the account that loads a dump into an empty server (its root) write while the server
	// stays read-only for every other client.
	PrepareLoad(ctx context.Context, db DB) error
	// SetGTIDPosition records, on a server that has just loaded a dump out of its binary log, that it has
	// executed pos (the dump's position) and that its binary logs do not hold those transactions, so that GTID
	// auto-positioning resumes right after the dump and PurgedGTIDSet tells the truth if it ever becomes a
	// source. It refuses a server whose binary log or executed set holds anything else. It undoes PrepareLoad.
	SetGTIDPosition(ctx context.Context, db DB, pos GTIDSet) error

	// DumpGTIDPosition reads the GTID position that a dump made by DumpCommand records, from the dump's first
	// and last bytes (DumpEdgeSize of each is enough): the set a server restored from it has applied. It fails
	// when neither holds one, as with a dump cut short.
	DumpGTIDPosition(head, tail []byte) (GTIDSet, error)
}

// DumpEdgeSize is how much of a dump's beginning and end DumpGTIDPosition needs: mysqldump writes the position
// before any table, mariadb-dump --all-databases at the very end (after mysql.gtid_slave_pos, which would
// otherwise overwrite it), each a statement of a few dozen bytes per GTID domain or server UUID. 1 MiB leaves
// room for thousands.
const DumpEdgeSize = 1 << 20

// ErrNoGTIDPosition is returned by DumpGTIDPosition when a dump's head records no GTID position.
var ErrNoGTIDPosition = errors.New("the dump records no GTID position")

// dumpStatement finds the first statement in head that starts with prefix (compared without case) at the start
// of a line, and returns the text between prefix and the statement's closing "';", with the line breaks that a
// dump tool puts into long GTID sets removed.
func dumpStatement(head []byte, prefix string) (string, bool) {
	// Byte by byte, ASCII only: bytes.ToLower and bytes.Map decode UTF-8 and would change the length of a
	// dump's binary data, and with it the offsets.
	lower := make([]byte, len(head))
	for i, c := range head {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	p := []byte(strings.ToLower(prefix))
	for off := 0; off < len(lower); {
		i := bytes.Index(lower[off:], p)
		if i < 0 {
			return "", false
		}
		i += off
		if i > 0 && lower[i-1] != '\n' {
			off = i + len(p)
			continue
		}
		rest := head[i+len(p):]
		end := bytes.Index(rest, []byte("';"))
		if end < 0 {
			return "", false
		}
		return strings.Join(strings.Fields(string(rest[:end])), ""), true
	}
	return "", false
}

// FlavorFor returns the flavor of an engine.
func FlavorFor(e Engine) (Flavor, error) {
	switch e {
	case MySQL:
		return MySQLFlavor{}, nil
	case MariaDB:
		return MariaDBFlavor{}, nil
	}
	return nil, fmt.Errorf("unknown database engine %q", e)
}

// ServerInfo is who a server is and whether it takes writes.
type ServerInfo struct {
	Version  string
	ServerID uint32
	// SourceID names the server in the GTIDs it writes: server_uuid on MySQL, server_id on MariaDB.
	SourceID string
	// ReadOnly is read_only: clients without the engine's override privilege cannot write.
	ReadOnly bool
	// SuperReadOnly is MySQL's super_read_only: nobody but replication writes. MariaDB has no such switch (see
	// MariaDBFlavor); there it is always false.
	SuperReadOnly bool
	// Executed is the set of transactions the server has applied.
	Executed GTIDSet
}

// ReplicaStatus is the state of a server's replication from its source.
type ReplicaStatus struct {
	SourceHost string
	SourcePort int
	// IOState is the receiver thread: "Yes", "No" or "Connecting" (the source is not reachable or refused).
	IOState string
	// SQLRunning tells whether the applier thread runs.
	SQLRunning bool
	// Lag is Seconds_Behind_Source; nil when the server cannot tell (a thread is stopped or not connected).
	Lag *time.Duration
	// LastIOErrno and the fields after it are the last errors of the receiver and the applier; 0 and "" when
	// there was none since replication last started.
	LastIOErrno  int
	LastIOError  string
	LastSQLErrno int
	LastSQLError string
	// Received is what the receiver has fetched from the source: the executed set plus what waits in the relay
	// log (MySQL: RECEIVED_TRANSACTION_SET; MariaDB: Gtid_IO_Pos, a position).
	Received GTIDSet
}

// IORunning tells whether the receiver is connected to the source.
func (r *ReplicaStatus) IORunning() bool { return r.IOState == "Yes" }

// Running tells whether both threads run and the receiver is connected.
func (r *ReplicaStatus) Running() bool { return r.IORunning() && r.SQLRunning }

// Source is where a replica replicates from.
type Source struct {
	Host     string
	Port     int
	User     string
	Password string
	// ConnectRetry is how long the receiver waits between attempts to reconnect; zero keeps the engine's
	// default (60s).
	ConnectRetry time.Duration
}

// SemiSync configures the source side of semi-synchronous replication. The zero value turns it off.
type SemiSync struct {
	// WaitForReplicas is how many replicas must acknowledge a transaction before its commit returns; 0 turns
	// semi-sync off on the source. The wait point is always AFTER_SYNC: other sessions do not see the
	// transaction until it is acknowledged, so a failover to the acknowledging replica cannot lose what a
	// client has read.
	WaitForReplicas int
	// Timeout is how long a commit waits for acknowledgements before the source gives up and commits
	// asynchronously. Zero or less means never: the engine's largest timeout (MariaDB: 2^64-1 ms; MySQL: 2^32-1
	// ms, about 49.7 days), so that no commit silently loses its guarantee.
	Timeout time.Duration
}

// SemiSyncStatus is what a server says about semi-synchronous replication.
type SemiSyncStatus struct {
	SourceEnabled       bool
	ReplicaEnabled      bool
	WaitPoint           string
	WaitForReplicaCount int
	Timeout             time.Duration
	// WaitNoReplica is rpl_semi_sync_source_wait_no_replica (MariaDB: rpl_semi_sync_master_wait_no_slave): commits
	// wait even while fewer replicas than the count are connected. Off, a source whose replicas are all gone
	// falls back to asynchronous at once, whatever the timeout.
	WaitNoReplica bool
	// SourceActive is true while commits wait for acknowledgements; false when semi-sync is off on the source
	// or the source has fallen back to asynchronous after a timeout. A source that fell back turns active again
	// only when a semi-sync replica catches up with it, or when semi-sync is turned off and on
	// (Server.ConfigureSemiSync does that).
	SourceActive bool
	// Replicas is the number of semi-sync replicas connected to the source.
	Replicas int
	// WaitingSessions is the number of commits waiting for an acknowledgement now.
	WaitingSessions int
	// AsyncCommits counts the commits since the server started that returned without an acknowledgement
	// (Rpl_semi_sync_source_no_tx; MariaDB: Rpl_semi_sync_master_no_tx). Only a restart resets it.
	AsyncCommits int64
}

// DumpOptions say where a dump is taken from or restored to.
type DumpOptions struct {
	// Path is the dump or client binary; empty means the engine's usual name on PATH.
	Path string
	// DefaultsFile is an option file with the [client] password (and user), so that it is not on a command
	// line where ps shows it. Optional.
	DefaultsFile string
	Host         string
	Port         int
	// Socket is used instead of Host and Port when set.
	Socket string
	User   string
}

func (o DumpOptions) connectionArgs(bin string) []string {
	args := []string{bin}
	if o.DefaultsFile != "" {
		// Must come first: both engines' clients ignore it anywhere else.
		args = append(args, "--defaults-extra-file="+o.DefaultsFile)
	}
	if o.Socket != "" {
		args = append(args, "--socket="+o.Socket)
	} else {
		if o.Host != "" {
			args = append(args, "--host="+o.Host)
		}
		if o.Port != 0 {
			args = append(args, fmt.Sprintf("--port=%d", o.Port))
		}
	}
	if o.User != "" {
		args = append(args, "--user="+o.User)
	}
	return args
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
