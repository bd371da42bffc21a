// Package archive is the binary-log archive benchmark (`make bench-archive`): it shows whether archiving keeps
// up under a steady write load, on real servers. One primary (mariadbd, booted with the product's options:
// sync_binlog=1, innodb_flush_log_at_trx_commit=1) takes -writers connections committing one-row transactions
// flat out for -duration, while an internal/archive Keeper archives its binary log as the member controller runs
// it (MaxAge -max-age, MaxSize 16 MiB, the controller's server_id) into an S3 bucket (versitygw on loopback,
// through internal/backup's S3 store as the controller opens it; -store=dir for a directory).
//
// Every 100 ms during the load it reads the Keeper's Status and records the recovery point's age as the member
// controller reports it, now less ArchivedThrough. Beside it, the stored-position age checks that figure
// without trusting the Keeper's clock: the primary's gtid_binlog_pos is read at each sample, and a sample's
// age is the time since the last position the newest stored segment holds (an upper bound, to the 100 ms of
// the samples). The Keeper dates ArchivedThrough by when transactions arrive, so the two part when the stream
// falls behind the server. It also records the commits the writers got acknowledged, the binary log the
// segments hold per second, the segments, their stored (zstd) size and the time each took to store (object and
// manifest).
//
// After the writers stop, it times the catch-up: until the newest stored segment ends at the primary's
// gtid_binlog_pos. Then it checks what was stored, and fails the run (b.Fatal) when it is not whole: no gap
// (archive.Chain), and the archive replayed (archive.Replay, the real mariadb-binlog) into an empty server holds
// every acknowledged write and the table's checksum.
//
// Each run starts fresh servers, a primary and the empty server the replay goes into, and a prefix of its own
// in the bucket: every run is the same experiment, from an empty binary log and an empty archive, and a run's
// replay checks its own archive from its first segment against its own acknowledgements rather than replaying
// the earlier runs' too. Starting a server costs seconds beside a load of a minute. The replay target relaxes
// durability (sync_binlog=0): it is the check, not what is measured.
//
// The benchmark is in archive_test.go, because the servers are tied to a testing.TB's life:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/archive -args -runs=3
//
// It prints a table and writes bench/results/archive-<UTC timestamp>.json and archive-latest.json. Nothing about
// time is asserted: the package documentation of internal/archive bounds the recovery point at about MaxAge
// plus an upload when the archive keeps up, and the figures say whether it does here.
package archive
