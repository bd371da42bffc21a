// Package failover is the failover and switchover benchmark (`make bench-failover`): on real servers, how long a
// MariaDB MySQLCluster's set in one member goes without a writable primary when its primary's server is killed
// (kill -9) and when a planned switchover is requested, as a client writing through <name>-primary sees it, and
// how many acknowledged writes are lost (there must be none).
//
// Everything that takes part is real, as controllers/replication_test.go has it: one member cluster from
// test/testfleet with workloads (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), the
// objects render makes for one member applied with server-side apply as the hub applies them, Pods made by the
// member's StatefulSet controller, a real mariadbd behind each Pod (test/dbpods) booted with the
// rendered my.cnf and init script, and the member controller (controllers/member) running in-process with cmd/member's
// flag defaults, leader election included. The client writes through the Service the way a client behind
// kube-proxy does: each write goes to the Pod that the ready endpoint of the Service's EndpointSlices names.
//
// The benchmark is in failover_test.go, because the servers and the fleet are tied to a testing.TB's life:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/failover -args -runs=10
//
// The writer writes for -warmup plus a random part of up to -spread (the controller's poll interval) before the
// fault, so that faults land anywhere in the controller's poll cycle, as real ones do. The benchmark prints a
// table and writes bench/results/failover-<UTC timestamp>.json and bench/results/failover-latest.json; the member
// controller's and the member's kube-controller-manager's logs go to bench/results/profiles/failover-<UTC
// timestamp>/. Nothing about time is asserted; a lost acknowledged write fails the run.
package failover
