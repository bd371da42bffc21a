// Package member is the member controller: one leader-elected controller-runtime manager per member cluster
// that keeps every StatefulSet mysqlfleet manages there (label app.kubernetes.io/managed-by=mysqlfleet and a
// mysqlfleet.io/cluster-uid label) a replicated set with one writable primary and semi-sync replicas. The
// decisions are internal/clustering's; this package feeds them from Kubernetes and publishes their outcome.
//
// # One pass over one StatefulSet
//
//   - Desired: the instances are the StatefulSet's Pods <name>-0 .. <name>-(replicas-1); each is reached
//     through a Resolver (its Pod IP in the product, on port 3306 for replication and on the reserved
//     render.AdminPort for the controller's connections; a loopback server in tests). What the hub tells of
//     the set is its contract (api/v1alpha1's contract.go), annotations on the StatefulSet and nothing read
//     back from the Pod template: the engine and the credentials Secret (see readContract; a set without
//     them, written by an older hub, is reported Unobserved); a planned switchover with
//     mysqlfleet.io/primary=<ordinal> (v1alpha1.PrimaryAnnotation); a scale-down with mysqlfleet.io/replicas=<n>
//     below the StatefulSet's replicas (v1alpha1.ReplicasAnnotation), which the hub holds until the report
//     says scaleDownReady.
//   - Credentials: the account v1alpha1.AdminUser, with the password from the credentials Secret (the one the
//     contract names, read live: Secrets are get only); replicas replicate as v1alpha1.ReplicationUser. Render
//     creates both accounts on every server as its data directory is first initialised (an init script with
//     the binary log off, so that they are nobody's transactions). A server that refuses the admin login
//     (initialised without that script, by an earlier release) gets them created by the controller, as root
//     and with the binary log off.
//   - Observe, Decide, Execute (clustering), with the record read from and saved to the report ConfigMap
//     <name>-replication; the plan's save-record step writes it before any new primary turns writable. An
//     instance whose Pod is being deleted is marked unhealthy (see unhealthy): a primary there is fenced and
//     failed over.
//   - Seed: an instance the engine asks to seed (it has executed nothing and the primary's binary logs no
//     longer hold what it lacks) gets the Job <name>-seed-<ordinal>, which loads it with a dump; while the Job
//     runs the engine leaves the instance alone (see seed.go).
//   - Label each Pod mysqlfleet.io/role=primary|replica (replica only while in sync: within MaxLag), or remove
//     the label from Pods that are neither (unreachable, errant, not replicating, lagging), with a merge patch
//     where it differs. The Services <name>/<name>-primary and <name>-replicas select on it. After a failed plan labels
//     are only removed, never set. The Pod that loses role=primary loses it before another gets it, so that the
//     primary Service never has two endpoints.
//   - Write the report (v1alpha1.ReplicationReport, JSON) into the same ConfigMap, only when it changed, with
//     the resourceVersion the pass read (optimistic concurrency). It holds nothing that changes while the set
//     is idle, so an idle set costs its member no write at all: the steady pass reads the cache only (the
//     credentials Secret excepted, read live by get).
//   - Come back after BusyInterval when the plan had steps or failed, at once after the first of a failover's
//     two passes (the receivers are stopped; see Timing.BusyInterval), after PollInterval otherwise: the
//     servers change without Kubernetes events, so sets are polled.
//
// A set whose servers cannot be reached is reported so (role unreachable, the reason in the instance's error
// and in lastError), and a set that cannot be observed at all (no credentials, a contract missing or
// unreadable, an unreadable record) gets a report of kind Unobserved with the reason; the controller never
// reports a state it did not see.
//
// The record is the engine's memory, and reading it stale would be dangerous (a pass right after a switchover
// would fence the new primary). The cached ConfigMap is therefore used only when its resourceVersion is the one
// this controller last wrote or read; otherwise it is read from the API server.
//
// # Every change is fenced by the Lease
//
// Leader election alone does not keep two replicas of the controller from acting at once. A leader paused
// (SIGSTOP, a long GC pause, a frozen VM) in the middle of a plan resumes where it stopped, possibly after a
// standby took the Lease over and moved the primary elsewhere, and would then make a second primary writable:
// the record's save is fenced by resourceVersion, but the steps after it (a promotion waits, possibly long,
// for what the new primary received to be applied) were not. So every change the controller makes is refused
// with ErrLeaseMayHaveExpired (and counted in mysqlfleet_member_actions_refused_total) unless this process
// renewed the Lease less than RenewDeadline ago, counted from the moment that renewal was sent: every operation
// of clustering.ServerOps that changes a server or the record, and every statement it sends (the last one of a
// promotion, SET read_only = OFF, included, however long the wait before it took), the accounts created as
// root, the seed Jobs and the role labels, which steer the application's writes. Each statement also carries
// that moment plus RenewDeadline as its context's deadline. Without leader election nothing is refused.
//
// Why that is enough. A standby (client-go's leader election) takes the Lease over only once it has seen the
// Lease's record unchanged for leaseDurationSeconds (LeaseDuration in whole seconds) of its own clock, counted
// from the read that first showed it that record, and its takeover is an update conditional on that record's
// resourceVersion. A renewal of ours sent at s that succeeded was itself conditional: a takeover that reached
// the API server before it would have made it fail. So a takeover comes after our renewal, and is based on a
// read that showed our renewal (or a later write), made after s: the standby cannot hold the Lease before
// s + leaseDurationSeconds. The controller stops sending at s + RenewDeadline. The margin between the two,
// checked positive at start (3 s with the defaults of 8 s and 5 s), must cover the way of a statement sent
// just before the deadline to the server and its run there, and the difference of the two processes' clock
// rates over one lease (parts per million; Go's monotonic clock is never stepped).
//
// What it assumes, and leaves:
//   - The local monotonic clock counts the pause, as it does for a stopped process or a GC pause. A suspended
//     machine, or a frozen VM whose clock stops with it, defeats any local clock; only a fence that the
//     database server checks itself would cover that, and MySQL has none for read_only.
//   - Every contender follows client-go's rule: deleting the Lease by hand lets a standby take it at once.
//   - A statement already sent runs when it arrives. The deadline ends the connection after it, but the server
//     finishes what it started (a SET read_only = ON waiting for commits, for one); and between the last check
//     and the bytes leaving the process lie a few microseconds that no check in the process can cover.
//
// client-go makes a leader give up (controller-runtime then stops, and cmd/member exits) only when a renewal
// attempt has failed for RenewDeadline, which it notices between its retries; the guard has the same window
// but is asked at every change. The record also carries the Lease's leaderTransitions when it was saved
// (clustering.Record.LeaseTransitions), so that a human or the next leader sees which term wrote it. It refuses
// nothing: a Lease deleted and created again counts from zero.
//
// # The binary-log archive
//
// With spec.backup.archive (v1alpha1.ArchiveAnnotation) the leader also keeps the set's binary log in the backup
// target as it is written, reading the primary it has just established; archive.go says why here rather than in
// a Deployment of its own.
//
// # How it gets into each member
//
// Decision: `mysqlfleet join` installs it into the member, in its own namespace, with its own ServiceAccount
// and least-privilege RBAC (render.MemberControllerClusterRules and MemberControllerNamespaceRules), as a Deployment of the manager's image
// running mysqlfleet-member (cmd/member) with --leader-elect and two replicas. Reasons: it then runs with the
// member's own credentials, not the hub's, and goes on failing over when the hub is unreachable, which is the
// point of deciding inside the member; the hub's member credential needs no RBAC or Deployment rights; and it
// is one controller per member however many MySQLClusters are placed there. The hub only reads the report
// through the member API server (render.MemberController builds what join applies, with everything else
// mysqlfleet writes into a member).
package member
