// Command mysqlfleet-member is the member controller: it runs inside a member cluster, one leader-elected
// instance per member, and keeps each MySQL StatefulSet mysqlfleet manages there a replicated set with one
// writable primary, labelling Pods by role and reporting per set in a ConfigMap. Flags only; the assembly lives
// in controllers/member, whose documentation says how it is installed and what it may do.
package main

import (
	"flag"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mysqlfleet/mysqlfleet/controllers/member"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

func main() {
	var o member.Options
	defaultNS := os.Getenv("POD_NAMESPACE")
	if defaultNS == "" {
		defaultNS = "mysqlfleet-system"
	}
	flag.StringVar(&o.Namespace, "namespace", defaultNS, "the controller's own namespace, where its leader election Lease lives (default $POD_NAMESPACE)")
	flag.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader on a Lease, so that only one of several replicas acts on the servers")
	flag.StringVar(&o.LeaderElectionID, "leader-election-id", member.DefaultLeaderElectionID, "name of the leader election Lease")
	flag.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", member.DefaultLeaseDuration, "how long a standby waits before taking over a leader that stopped renewing")
	flag.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", member.DefaultRenewDeadline, "how long the leader tries to renew before it gives up leadership, and how long after the start of its last renewal it may still change a server; must be shorter than the lease duration in whole seconds, the difference covering clock drift and a statement's way to the server")
	flag.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", member.DefaultRetryPeriod, "how often leader election is attempted")
	flag.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.DurationVar(&o.PollInterval, "poll-interval", time.Second, "how often an idle set's servers are checked; bounds how long a dead primary goes unnoticed")
	flag.DurationVar(&o.BusyInterval, "busy-interval", 500*time.Millisecond, "how soon a set is checked again after a pass that changed something or failed")
	flag.DurationVar(&o.StatusTimeout, "status-timeout", 2*time.Second, "bound on logging in to one server and reading its status; a slower server is unreachable for that pass")
	flag.DurationVar(&o.PassTimeout, "pass-timeout", 2*time.Minute, "bound on one pass's work on a set's servers, switchover waits included")
	flag.DurationVar(&o.MaxLag, "max-lag", 10*time.Second, "replication lag within which a replica counts as in sync and may become primary by switchover")
	flag.DurationVar(&o.ReplicaConnectRetry, "replica-connect-retry", 10*time.Second, "how long a replica waits between attempts to reconnect to its primary")
	flag.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-sets", 4, "how many sets are worked on at once")
	flag.StringVar(&o.NodeName, "node-name", os.Getenv("NODE_NAME"), "the node this process runs on (default $NODE_NAME, from the downward API); a failover prefers, among equally fit replicas, one on another node")
	flag.StringVar(&o.RunnerImage, "runner-image", render.DefaultRunnerImage, "image whose backup runner the seed Jobs copy into the database image (mysqlfleet join passes the controller's own)")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := member.New(ctrl.GetConfigOrDie(), o)
	if err != nil {
		log.Error(err, "Unable to set up the member controller")
		os.Exit(1)
	}
	log.Info("Starting the member controller", "namespace", o.Namespace, "leaderElection", o.LeaderElection)
	// SIGTERM cancels the context; with ReleaseOnCancel the Lease is handed over at once.
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "The member controller stopped with an error")
		os.Exit(1)
	}
}
