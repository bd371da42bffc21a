package clustering_test

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Builders of observations for table tests. Instance i has server_id i+1, so on MariaDB its own transactions
// read "0-<i+1>-<seq>"; hosts are db-<i>:3306.

func gtids(e mysql.Engine, s string) mysql.GTIDSet {
	f, err := mysql.FlavorFor(e)
	if err != nil {
		panic(err)
	}
	set, err := f.ParseGTIDSet(s)
	if err != nil {
		panic(err)
	}
	return set
}

func address(i int) clustering.Address {
	return clustering.Address{Host: fmt.Sprintf("db-%d", i), Port: 3306}
}

// desired is n MariaDB instances with a lag bound of 10s.
func desired(n int, opts ...func(*clustering.Desired)) clustering.Desired {
	d := clustering.Desired{Name: "shop", Engine: mysql.MariaDB, MaxLag: 10 * time.Second}
	for i := range n {
		d.Addresses = append(d.Addresses, address(i))
	}
	for _, o := range opts {
		o(&d)
	}
	return d
}

func engine(e mysql.Engine) func(*clustering.Desired) {
	return func(d *clustering.Desired) { d.Engine = e }
}

// withController marks the instances on the deciding controller's node.
func withController(is ...int) func(*clustering.Desired) {
	return func(d *clustering.Desired) {
		d.WithController = make([]bool, len(d.Addresses))
		for _, i := range is {
			d.WithController[i] = true
		}
	}
}

func requestPrimary(i int) func(*clustering.Desired) {
	return func(d *clustering.Desired) { d.Primary = &i }
}

func record(primary int, errant ...int) clustering.Record {
	r := clustering.Record{Errant: errant}
	if primary >= 0 {
		r.Primary, r.PrimaryServerID, r.SemiSyncWait = &primary, uint32(primary+1), 1
	}
	return r
}

// waitRecorded is r with the semi-sync wait count w in force.
func waitRecorded(r clustering.Record, w int) clustering.Record {
	r.SemiSyncWait = w
	return r
}

// instance is an observation under construction.
type instance struct {
	engine mysql.Engine
	obs    clustering.Observation
}

type option func(*instance)

var never = time.Duration(1<<63 - 1)

// builder builds observations of one engine: md for MariaDB (GTIDs domain-server-seq, server_id as source
// ID), my for MySQL (uuid:interval, the instance's server_uuid as source ID).
type builder struct{ engine mysql.Engine }

var (
	md = builder{mysql.MariaDB}
	my = builder{mysql.MySQL}
)

func mysqlUUID(i int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1) }

func (b builder) build(i int, executed string, opts []option) clustering.Observation {
	id := uint32(i + 1)
	in := &instance{engine: b.engine}
	in.obs.Status = &mysql.Status{
		ServerInfo: mysql.ServerInfo{
			Version: "10.11.19-MariaDB", ServerID: id, SourceID: strconv.Itoa(int(id)), ReadOnly: true,
			Executed: gtids(b.engine, executed),
		},
		Role: mysql.RoleNone,
		SemiSync: &mysql.SemiSyncStatus{
			WaitPoint: "AFTER_SYNC", WaitForReplicaCount: 1, Timeout: never, WaitNoReplica: true,
		},
	}
	if b.engine == mysql.MySQL {
		in.obs.Status.Version = "8.4.3"
		in.obs.Status.SourceID = mysqlUUID(i)
		in.obs.Status.SuperReadOnly = true
	}
	for _, o := range opts {
		o(in)
	}
	return in.obs
}

// fresh is a server that booted and was told nothing: read-only, no source, no transactions.
func (b builder) fresh(i int, opts ...option) clustering.Observation { return b.build(i, "", opts) }

// primary is a writable primary with semi-sync on, waiting for one acknowledgement.
func (b builder) primary(i int, executed string, opts ...option) clustering.Observation {
	return b.build(i, executed, append([]option{func(in *instance) {
		st := in.obs.Status
		st.Role, st.ReadOnly, st.SuperReadOnly = mysql.RolePrimary, false, false
		st.SemiSync.SourceEnabled, st.SemiSync.SourceActive, st.SemiSync.Replicas = true, true, 2
	}}, opts...))
}

// replica is a read-only replica of source, both threads running, no lag, acknowledging; it has received
// what it executed.
func (b builder) replica(i, source int, executed string, opts ...option) clustering.Observation {
	return b.build(i, executed, append([]option{func(in *instance) {
		st := in.obs.Status
		st.Role = mysql.RoleReplica
		zero := time.Duration(0)
		st.Replica = &mysql.ReplicaStatus{SourceHost: address(source).Host, SourcePort: address(source).Port,
			IOState: "Yes", SQLRunning: true, Lag: &zero, Received: st.Executed}
		st.SemiSync.ReplicaEnabled = true
	}}, opts...))
}

func unreachable() clustering.Observation {
	return clustering.Observation{Err: errors.New("dial tcp: connection refused")}
}

func received(s string) option {
	return func(in *instance) { in.obs.Status.Replica.Received = gtids(in.engine, s) }
}

func lag(d time.Duration) option {
	return func(in *instance) { in.obs.Status.Replica.Lag = &d }
}

func unknownLag() option { return func(in *instance) { in.obs.Status.Replica.Lag = nil } }

// receiverStopped is a replica after STOP SLAVE IO_THREAD (the state a failover's first pass leaves).
func receiverStopped() option {
	return func(in *instance) { in.obs.Status.Replica.IOState, in.obs.Status.Replica.Lag = "No", nil }
}

// connecting is a replica whose source is gone.
func connecting() option {
	return func(in *instance) {
		r := in.obs.Status.Replica
		r.IOState, r.Lag, r.LastIOErrno, r.LastIOError = "Connecting", nil, 2003, "Can't connect to server"
	}
}

func stopped() option {
	return func(in *instance) {
		r := in.obs.Status.Replica
		r.IOState, r.SQLRunning, r.Lag = "No", false, nil
	}
}

func applierError(errno int, msg string) option {
	return func(in *instance) {
		r := in.obs.Status.Replica
		r.SQLRunning, r.LastSQLErrno, r.LastSQLError, r.Lag = false, errno, msg, nil
	}
}

func notAcknowledging() option {
	return func(in *instance) { in.obs.Status.SemiSync.ReplicaEnabled = false }
}

func writable() option {
	return func(in *instance) { in.obs.Status.ReadOnly, in.obs.Status.SuperReadOnly = false, false }
}

func readOnly() option { return func(in *instance) { in.obs.Status.ReadOnly = true } }

func semiSync(enabled bool, wait int, timeout time.Duration) option {
	return func(in *instance) {
		s := in.obs.Status.SemiSync
		s.SourceEnabled, s.WaitForReplicaCount, s.Timeout = enabled, wait, timeout
	}
}

// fellBack is a primary whose semi-sync fell back to asynchronous: enabled, not active, commits went
// without an acknowledgement.
func fellBack(asyncCommits int64) option {
	return func(in *instance) {
		in.obs.Status.SemiSync.SourceActive, in.obs.Status.SemiSync.AsyncCommits = false, asyncCommits
	}
}

func waitNoReplicaOff() option {
	return func(in *instance) { in.obs.Status.SemiSync.WaitNoReplica = false }
}

func unhealthy(reason string) option { return func(in *instance) { in.obs.Unhealthy = reason } }

func observe(obs ...clustering.Observation) []clustering.Observation { return obs }

// purged is a primary whose binary logs no longer hold s (Observe read it).
func purged(s string) option {
	return func(in *instance) { in.obs.Purged = gtids(in.engine, s) }
}

// purgedUnreadable is a primary whose purged set could not be read.
func purgedUnreadable() option {
	return func(in *instance) { in.obs.PurgedErr = errors.New("SHOW BINARY LOGS: lost connection") }
}

// receiverError is a replica whose receiver stopped on an error from its source.
func receiverError(errno int, msg string) option {
	return func(in *instance) {
		r := in.obs.Status.Replica
		r.IOState, r.Lag, r.LastIOErrno, r.LastIOError = "No", nil, errno, msg
	}
}

// seeding is an instance whose seed the member controller says is under way.
// serverID gives the instance another server_id, as a new data directory on its ordinal has.
func serverID(id uint32) option {
	return func(in *instance) {
		in.obs.Status.ServerID = id
		if in.engine == mysql.MariaDB {
			in.obs.Status.SourceID = strconv.Itoa(int(id))
		}
	}
}

func seeding(how string) option { return func(in *instance) { in.obs.Seeding = how } }

// unacked is r of a term in which commits could return without an acknowledgement (Record.Unacknowledged).
func unacked(r clustering.Record) clustering.Record {
	r.Unacknowledged = true
	return r
}
