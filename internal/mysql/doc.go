// Package mysql is the database layer of mysqlfleet: what a member controller says to one MySQL or MariaDB
// server. It holds
//   - Flavor, with one implementation per engine (MySQLFlavor, MariaDBFlavor): every statement that differs
//     between the engines, and the dump and restore command lines;
//   - GTIDSet: GTID set arithmetic (containment, union, difference, errant transactions) done in Go on
//     github.com/go-mysql-org/go-mysql's parsed sets;
//   - Server: the operations (Status, SetReadOnly, StartReplicaOf, Promote, ConfigureSemiSync, WaitForGTID,
//     KillConnections, EnsureUser) over database/sql with github.com/go-sql-driver/mysql; Guarded asks a
//     Guard (the caller's, e.g. its leader election lease) before every statement that changes the server.
//
// It is a plain library: no Kubernetes, no clock of its own beyond the waits it is asked for, no decisions.
// Which server is primary, and when to fail over, is the member controller's business.
//
// Tested against real MariaDB 10.11 servers that test/mysqltest starts on loopback. The MySQL
// flavor has not run against a real MySQL 8.4 server: none can be installed where this was written; its
// statements are checked by unit tests that record them.
package mysql
