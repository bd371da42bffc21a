// Package backup is the backup and restore benchmark (`make bench-backup`): on one real mariadbd holding a
// database of at least -size-mib (default 1.1 GiB on disk), it times the backup runner (cmd/backup, the binary a
// backup Job runs) against the plain pipe a person would write, in the same run on the same server:
//
//	backup:  mariadb-dump FLAGS | gzip > FILE        vs  mysqlfleet-backup backup  --target dir
//	restore: gzip -dc FILE | mariadb FLAGS           vs  mysqlfleet-backup restore --target dir
//
// FLAGS are the flavor's own (mysql.MariaDBFlavor's DumpCommand and RestoreCommand), so both sides run the same
// dump and the same client with the same options; gzip is Debian's at its default level, as the runner's is.
// The runner adds to the pipe what makes a backup a backup: SHA-256 of the stored object, the GTID position read
// from the dump, a manifest written last, and on restore the check of the object against its manifest.
//
// Each run takes both backups and both restores, the order alternating between runs (plain first, then runner
// first) so that neither side always meets a warmer cache. Every restore goes into a fresh empty server and is
// checked: CHECKSUM TABLE of every table equal to the source's, or the run fails.
//
// The benchmark is in backup_test.go, because the servers are tied to a testing.TB's life:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 90m ./bench/backup -args -runs=3
//
// It prints a table and writes bench/results/backup-<UTC timestamp>.json and backup-latest.json. Nothing about
// time is asserted; the target (the runner adds at most 10 % to the pipe's time) is reported as met or
// not, from the medians.
//
// BenchmarkPhysical (physical_test.go) does the same for physical backups of MariaDB: internal/backup's physical
// method in process against `mariadb-backup --backup --stream=xbstream | zstd -1 -T2`, their restores up to a
// server that answers on the restored data directory, and the longest gap between a concurrent writer's commits
// during each backup; it writes bench/results/physical-<UTC timestamp>.json and physical-latest.json.
package backup
