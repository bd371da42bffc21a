// Command manager is mysqlfleet's hub manager: it reconciles MySQLClusters on the hub into the registered member
// clusters. Flags only; the assembly lives in controllers/mysqlcluster.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// client-go's leader election records an Event (core API) on the Lease in the manager's namespace whenever the
// leadership changes; markers here join the controllers' in the generated RBAC and the chart.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=mysqlfleet-system

func main() {
	var o mysqlcluster.Options
	var qps float64
	defaultNS := os.Getenv("POD_NAMESPACE")
	if defaultNS == "" {
		defaultNS = "mysqlfleet-system"
	}
	flag.StringVar(&o.Namespace, "namespace", defaultNS, "the manager's namespace: member registration Secrets, generated credentials and the leader Lease (default $POD_NAMESPACE)")
	flag.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader, so that only one of several replicas reconciles")
	flag.StringVar(&o.LeaderElectionID, "leader-election-id", "mysqlfleet-manager", "name of the leader election Lease")
	flag.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits before taking over a leader that stopped renewing")
	flag.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it gives up leadership")
	flag.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often leader election is attempted")
	flag.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&o.Kubeconfig.AllowInsecureTLS, "allow-insecure-member-tls", false, "accept member kubeconfigs with insecure-skip-tls-verify (never in production)")
	flag.Float64Var(&qps, "member-qps", kubeconfig.DefaultQPS, "queries per second to each member")
	flag.IntVar(&o.Kubeconfig.Burst, "member-burst", kubeconfig.DefaultBurst, "burst of queries to each member")
	flag.DurationVar(&o.MemberSyncTimeout, "member-sync-timeout", 20*time.Second, "how long a registering member has to answer before it is retried with backoff")
	flag.DurationVar(&o.MemberHealthInterval, "member-health-interval", 10*time.Second, "how often each member's /readyz is probed, so that an unreachable member is reported without waiting for a change")
	flag.DurationVar(&o.MemberTimeout, "member-timeout", fleet.DefaultRequestTimeout, "bound on one request to a member, counted from when it is sent (not while it waits for one of the member's in-flight slots)")
	flag.IntVar(&o.MemberMaxInFlight, "member-max-in-flight", fleet.DefaultMaxInFlight, "requests the manager keeps outstanding against one member API server at most (watches excluded); the rest wait in the manager")
	flag.IntVar(&o.Workers, "workers", mysqlcluster.DefaultWorkers, "MySQLClusters reconciled at once (each pass's requests to a member still wait for that member's in-flight slots)")
	flag.StringVar(&o.RunnerImage, "runner-image", render.DefaultRunnerImage, "image the backup and restore Jobs copy the backup runner (mysqlfleet-backup) from: this manager's own image (the chart sets it)")
	flag.DurationVar(&o.DeletionTimeout, "deletion-timeout", 5*time.Minute, "how long deleting a MySQLCluster waits for unreachable members before releasing it")
	flag.DurationVar(&o.OrphanScanInterval, "orphan-scan-interval", mysqlcluster.DefaultOrphanScanInterval, "how often the member caches are searched for objects of MySQLClusters the hub does not know (mysqlfleet_member_orphaned_objects)")
	probe := flag.String("probe", "", "GET this URL and exit, with 0 if it answers 200 OK and 1 otherwise: the health check of the image, which has no shell")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *probe != "" {
		os.Exit(probeURL(*probe))
	}
	o.Kubeconfig.QPS = float32(qps)
	mysqlcluster.SetGCPercent()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := mysqlcluster.New(ctrl.GetConfigOrDie(), o)
	if err != nil {
		log.Error(err, "Unable to set up the manager")
		os.Exit(1)
	}
	log.Info("Starting the manager", "namespace", o.Namespace, "leaderElection", o.LeaderElection)
	// SIGTERM cancels the context; the manager stops its controllers and, with ReleaseOnCancel, hands the Lease
	// over at once instead of making the standby wait for it to expire.
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "The manager stopped with an error")
		os.Exit(1)
	}
}

// probeURL is the manager image's own health check (a Docker HEALTHCHECK, the chart's helm test): the image is
// FROM scratch, with no shell or curl.
func probeURL(url string) int {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = resp.Body.Close()
	fmt.Printf("GET %s: %s\n", url, resp.Status)
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
