package backup

import (
	"bufio"
	"bytes"
	"io"
)

// A backup restored into a new MySQLCluster becomes that cluster's own history: the data, the routines, views,
// triggers and events of every database but mysql, written to the new primary's binary log like any
// transaction, so that its replicas replicate them and it needs no position of the source. newClusterFilter
// leaves out of the dump what belongs to the source only:
//   - the mysql schema (accounts, grants and passwords of the source: the new cluster has its own, and the
//     restored ones would lock its member controller out);
//   - the statements that set a GTID position, replication source or the session's binary log (mariadb-dump's
//     CHANGE MASTER and SET GLOBAL gtid_slave_pos; mysqldump's SET @@GLOBAL.GTID_PURGED and its toggling of
//     SQL_LOG_BIN), which would make the new primary claim the source's transactions without holding them in
//     its binary log.
//
// Both dump tools start each database with a line "-- Current Database: `name`". The filter looks at the
// start of each line only, so lines of any length (extended INSERTs) stream through without being buffered.

// sourceOnlyStatements start the lines that are dropped wherever they are.
var sourceOnlyStatements = [][]byte{
	[]byte("CHANGE MASTER TO"),
	[]byte("CHANGE REPLICATION SOURCE TO"),
	[]byte("SET GLOBAL gtid_slave_pos"),
	[]byte("SET @@GLOBAL.GTID_PURGED"),
	[]byte("SET @@SESSION.SQL_LOG_BIN"),
	[]byte("SET @MYSQLDUMP_TEMP_LOG_BIN"),
}

var (
	currentDatabase = []byte("-- Current Database: `")
	mysqlSchema     = []byte("-- Current Database: `mysql`")
)

// peek is how much of a line decides whether it is kept: the longest marker, with room.
const peek = 64

// newClusterFilter copies r to w without the source-only parts of a dump.
func newClusterFilter(w io.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	inMySQL := false
	for {
		start, err := br.Peek(peek)
		if len(start) == 0 {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if i := bytes.IndexByte(start, '\n'); i >= 0 {
			start = start[:i+1]
		}
		if bytes.HasPrefix(start, currentDatabase) {
			inMySQL = bytes.HasPrefix(start, mysqlSchema)
		}
		keep := !inMySQL
		for _, s := range sourceOnlyStatements {
			if bytes.HasPrefix(start, s) {
				keep = false
			}
		}
		if err := copyLine(w, br, keep); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// copyLine copies (or, with keep false, skips) one line, however long, newline included.
func copyLine(w io.Writer, br *bufio.Reader, keep bool) error {
	for {
		chunk, err := br.ReadSlice('\n')
		if keep && len(chunk) > 0 {
			if _, werr := w.Write(chunk); werr != nil {
				return werr
			}
		}
		switch err {
		case nil:
			return nil
		case bufio.ErrBufferFull:
			continue
		default:
			return err
		}
	}
}
