package mysql

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

func onOff(on bool) string {
	if on {
		return "ON"
	}
	return "OFF"
}

// execf runs one statement and wraps its error with what failed.
func execf(ctx context.Context, db DB, stmt, failure string) error {
	if err := db.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", failure, err)
	}
	return nil
}

// replicaColumns are the engine's names for the columns of SHOW REPLICA/SLAVE STATUS that differ; the error
// columns are named alike.
type replicaColumns struct {
	host, port, io, sql, lag string
}

func replicaStatus(row Row, received GTIDSet, c replicaColumns) (*ReplicaStatus, error) {
	port, err := row.Int(c.port)
	if err != nil {
		return nil, err
	}
	ioErrno, err := row.Int("Last_IO_Errno")
	if err != nil {
		return nil, err
	}
	sqlErrno, err := row.Int("Last_SQL_Errno")
	if err != nil {
		return nil, err
	}
	st := &ReplicaStatus{
		SourceHost:   row.String(c.host),
		SourcePort:   int(port),
		IOState:      row.String(c.io),
		SQLRunning:   row.Bool(c.sql),
		LastIOErrno:  int(ioErrno),
		LastIOError:  row.String("Last_IO_Error"),
		LastSQLErrno: int(sqlErrno),
		LastSQLError: row.String("Last_SQL_Error"),
		Received:     received,
	}
	if row[c.lag].Valid {
		secs, err := row.Int(c.lag)
		if err != nil {
			return nil, err
		}
		lag := time.Duration(secs) * time.Second
		st.Lag = &lag
	}
	return st, nil
}

// semiSyncNames are the engine's names (lower case) of the semi-sync variables and status counters.
type semiSyncNames struct {
	sourceEnabled, replicaEnabled, waitPoint, waitCount, timeout, waitNoReplica string
	sourceStatus, clients, waitSessions, noTx                                   string
}

// semiSyncStatus reads the semi-sync state from SHOW VARIABLES and SHOW STATUS. fixedWaitCount is the number
// of acknowledgements an engine without a wait-count variable waits for. Missing names (MySQL without the
// plugins) read as off and zero.
func semiSyncStatus(vars, status map[string]string, n semiSyncNames, fixedWaitCount int) (*SemiSyncStatus, error) {
	num := func(m map[string]string, name string) (int64, error) {
		v, ok := m[name]
		if !ok || v == "" {
			return 0, nil
		}
		// Timeouts go up to 2^64-1 on MariaDB.
		u, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is %q, not a number: %w", name, v, err)
		}
		return int64(min(u, uint64(1<<63-1))), nil
	}
	on := func(m map[string]string, name string) bool { return isOn(m[name]) }
	st := &SemiSyncStatus{
		SourceEnabled:       on(vars, n.sourceEnabled),
		ReplicaEnabled:      on(vars, n.replicaEnabled),
		WaitPoint:           vars[n.waitPoint],
		WaitForReplicaCount: fixedWaitCount,
		WaitNoReplica:       on(vars, n.waitNoReplica),
		SourceActive:        on(status, n.sourceStatus),
	}
	var err error
	var v int64
	if n.waitCount != "" {
		if v, err = num(vars, n.waitCount); err != nil {
			return nil, err
		}
		st.WaitForReplicaCount = int(v)
	}
	if v, err = num(vars, n.timeout); err != nil {
		return nil, err
	}
	st.Timeout = time.Duration(min(v, int64(1<<63-1)/int64(time.Millisecond))) * time.Millisecond
	if v, err = num(status, n.clients); err != nil {
		return nil, err
	}
	st.Replicas = int(v)
	if v, err = num(status, n.waitSessions); err != nil {
		return nil, err
	}
	st.WaitingSessions = int(v)
	if st.AsyncCommits, err = num(status, n.noTx); err != nil {
		return nil, err
	}
	return st, nil
}
