// Package backup takes and restores backups of one MySQL or MariaDB server, logical (a SQL dump) or, for
// MariaDB, physical (mariadb-backup's copy of the data directory): the backup runner that cmd/backup (the
// mysqlfleet-backup binary) wraps, run in a member's backup Job inside the database image so that it uses that
// image's own dump tool and client. A physical backup must run where the server's data directory is.
//
// # Backup
//
// Run starts the engine's dump tool with the Flavor's DumpCommand (mariadb-dump --single-transaction --gtid
// --master-data=1, or mysqldump --single-transaction --source-data=2 --set-gtid-purged=ON; both with
// --all-databases --routines --triggers --events) and streams its output through gzip and SHA-256 straight into
// a Store, never buffering the dump: memory is bounded by the store's part or block size times its concurrency
// (4 × 16 MiB by default), plus 1 MiB each of the dump's head and tail, where the GTID position is read.
//
// A store holds, for each backup NAME (its start time, UTC, e.g. 20261123T194749519Z):
//
//	NAME.sql.gz          the dump, gzip-compressed
//	NAME.manifest.json   the Manifest: times, engine, server version, GTID position, cluster, member, Pod,
//	                     sizes, SHA-256 of NAME.sql.gz
//
// The manifest is written only after the dump tool exited 0, the position was read and the data object was
// stored whole, and listing reads manifests only: an interrupted backup is never listed, never restored and
// never counted. Prune keeps the newest N by manifest and deletes manifest then data, and removes data objects
// without a manifest that are older than the newest backup and than any run can be: a run takes at most
// MaxRunDuration (24 hours by default) and writes no manifest past it, and Prune deletes such an object only
// when its store dates it longer ago than that, plus an hour for clocks. Runs may overlap (a backup asked for
// now is not the CronJob's Job, whose Forbid policy does not see it): one run's prune never deletes the data
// of another that has stored it and is about to write its manifest.
//
// # Physical backup (Options.Method = Physical; MariaDB)
//
// Run starts mariadb-backup --backup --stream=xbstream with DefaultLogCopyInterval and streams its output
// through an in-process zstd encoder (ZstdLevel) and SHA-256 into the store as NAME.xb.zst, then writes the
// manifest (method "physical", manifest format 2, the server version and the GTID position that mariadb-backup
// logs at its BACKUP STAGE BLOCK_COMMIT). The manifest is written only after mariadb-backup exited 0 and logged
// "completed OK!", and the object was stored whole: as for dumps, an interrupted run is never listed. Memory is
// bounded by the zstd frames in flight (see compressFrames) and the store's parts, as for dumps.
//
// RestorePhysical streams the object through SHA-256 and zstd into mbstream -x in a work directory, and only
// once the whole object matched its manifest prepares it (mariadb-backup --prepare) and moves it into an empty
// data directory (--move-back) for a server that is not running, owned as the directory is. It refuses a backup
// of another major.minor version than the target's mariadbd (ErrVersionMismatch). It returns the manifest:
// its GTIDPosition is what the caller sets as gtid_slave_pos before the restored server replicates.
//
// List, Prune and Restore read one manifest format with a method field; a manifest without one (written before
// physical backups) is logical. Restore loads the newest logical backup, RestorePhysical the newest physical
// one; retention counts both together.
//
// # Restore
//
// Restore reads a manifest (the newest by default), streams its data object through SHA-256 and gunzip into
// the engine's client (RestoreCommand: binary log off for the session on MariaDB), and fails with
// ErrChecksumMismatch when the bytes are not those the manifest recorded; the client is then killed before it
// sees the end of its input. A failed restore leaves a partly loaded server, to be discarded.
//
// # Stores and their credentials
//
// The stores use the clouds' own SDKs. Credentials come from the environment or from files that the Secret named
// in spec.backup.target.*.credentialsSecretRef provides (as environment variables, or mounted files):
//
//   - dir (a PVC): none.
//   - s3 (aws-sdk-go-v2, multipart uploads through its transfer manager): the SDK's default chain, i.e.
//     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optionally AWS_SESSION_TOKEN; or AWS_WEB_IDENTITY_TOKEN_FILE
//     with AWS_ROLE_ARN (IRSA); or AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE with AWS_PROFILE. AWS_REGION
//     (default us-east-1). With an endpoint (S3-compatible services) requests are path-style and carry
//     checksums only where the API requires them.
//   - gcs (cloud.google.com/go/storage, resumable uploads): Application Default Credentials, i.e.
//     GOOGLE_APPLICATION_CREDENTIALS naming a service account key file, or workload identity.
//   - azblob (azblob, staged blocks and one commit): AZURE_STORAGE_CONNECTION_STRING; or
//     AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (Shared Key); or AZURE_STORAGE_SAS_TOKEN with an endpoint.
//     Microsoft Entra workload identity is not wired yet.
//
// StoreCredentials reads the same keys from the Secret's data, for a process that opens stores without such an
// environment (the member controller, archiving binary logs): keys only, since web identity, shared files and
// workload identity belong to a Job's Pod, and for gcs the service account key that GOOGLE_APPLICATION_CREDENTIALS
// names by its base name.
//
// # Tested how
//
// Against real mariadbd servers (test/mysqltest), the real mariadb-dump, mariadb client, mariadb-backup and
// mbstream (every physical restore is started as a server and checked), a real S3
// server (versitygw, posix backend) and a GCS emulator (fake-gcs-server) run as processes; Azure Blob only at
// the HTTP level (see azblob_test.go). The MySQL flavor's dump and restore have not run against a real MySQL
// 8.4 here.
package backup
