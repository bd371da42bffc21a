package main

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mysqlfleet/mysqlfleet/internal/cli"
)

// displayName is how the user invoked us: `kubectl mysqlfleet` when the binary is the kubectl plugin
// kubectl-mysqlfleet, else mysqlfleet.
func displayName(argv0 string) string {
	if strings.HasPrefix(argv0, "kubectl-") {
		return "kubectl " + strings.TrimSuffix(strings.TrimPrefix(argv0, "kubectl-"), ".exe")
	}
	return "mysqlfleet"
}

func newRootCommand(argv0 string, streams genericiooptions.IOStreams) *cobra.Command {
	name := displayName(argv0)
	// The hub is chosen as kubectl chooses a cluster. kubectl's --server/-s is left out: join's --server is the
	// member's address as the hub reaches it.
	hubFlags := genericclioptions.NewConfigFlags(true).WithWarningPrinter(streams)
	hubFlags.APIServer = nil
	hub := &cli.Hub{Getter: hubFlags}
	root := &cobra.Command{
		Use:   "mysqlfleet",
		Short: "Register member clusters with a mysqlfleet hub and see the fleet",
		Long: `Register member clusters with a mysqlfleet hub and see the fleet.

The hub is the cluster of your kubeconfig's current context (or --kubeconfig and --context). The manager's
namespace on the hub, which holds the member registrations, is --fleet-namespace. -n is the namespace of
MySQLClusters, for get and plan, as in kubectl.`,
		SilenceUsage: true,
	}
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	hubFlags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Lookup("namespace").Usage = "Namespace of the MySQLClusters for get and plan (default: the context's)"
	root.PersistentFlags().StringVar(&hub.Namespace, "fleet-namespace", cli.DefaultFleetNamespace,
		"The manager's namespace on the hub, which holds the member registration Secrets")
	root.AddCommand(
		newJoinCommand(name, hub, streams),
		newUnjoinCommand(name, hub, streams),
		newMembersCommand(name, hub, streams),
		newOrphansCommand(name, hub, streams),
		newGetCommand(name, hub, streams),
		newPlanCommand(name, hub, streams),
		newBackupsCommand(name, hub, streams),
		newBackupCommand(name, hub, streams),
		newRestorePointsCommand(name, hub, streams),
		newRebuildCommand(name, hub, streams),
	)
	return root
}

func newJoinCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.JoinOptions
	var labels []string
	cmd := &cobra.Command{
		Use:   "join NAME --member-context CONTEXT --cloud aws|azure|gcp --region REGION",
		Short: "Register a member cluster with the hub",
		Long: `Register a member cluster with the hub.

In the member (reached with --member-context/--member-kubeconfig, your own credentials) join creates namespace
mysqlfleet-system, ServiceAccount mysqlfleet-member and RBAC that allows exactly what the manager does there:
Namespaces get/list/watch/create/patch; Secrets, ConfigMaps, Services, PersistentVolumeClaims, StatefulSets,
PodDisruptionBudgets, CronJobs and Jobs get/list/watch/create/update/patch/delete; Pods get/list; nothing else. With
--namespaces the namespaced kinds are granted by Roles in those namespaces only.

It also installs the member controller there (--skip-member-controller leaves it out): Deployment
mysqlfleet-member-controller of the manager's image (--member-controller-image), two replicas with leader
election, ServiceAccount mysqlfleet-member-controller that may read StatefulSets and Jobs, read and label Pods,
write its report ConfigMaps and read the credentials Secrets. It decides inside the member which server of each
database is the primary, so that failover goes on while the hub is unreachable.

It then takes the ServiceAccount's token (a long-lived token Secret, or, where no token controller fills it, a
TokenRequest token that expires), builds a kubeconfig with the member's server, CA and that token (no exec
plugin, no file paths), checks it against the manager's rules and the member, and applies the registration
Secret NAME in the hub's --fleet-namespace. Running join again changes nothing unless something changed;
--rotate-token replaces the token and revokes the old one.`,
		Example: `  ` + name + ` join aws-eu-west-1 --member-context aws-eu-west-1 --cloud aws --region eu-west-1
  ` + name + ` join gcp-us-central1 --member-kubeconfig gcp.kubeconfig --cloud gcp --region us-central1 \
      --label tier=gold --storage-class standard-rwo --server https://10.0.0.12:6443`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.Labels, err = cli.ParseLabels(labels); err != nil {
				return err
			}
			_, err = cli.Join(cmd.Context(), *hub, o, streams.Out)
			return err
		},
	}
	f := cmd.Flags()
	addMemberFlags(cmd, &o.Member)
	f.StringVar(&o.Cloud, "cloud", "", "The member's cloud: aws, azure or gcp (picks its default storage class)")
	f.StringVar(&o.Region, "region", "", "The member's region, e.g. eu-west-1")
	f.StringArrayVar(&labels, "label", nil, "Extra label key=value of the registration, for placement.memberSelector (repeatable)")
	f.StringVar(&o.StorageClass, "storage-class", "", "Storage class for every database placed on this member, overriding the cloud's default")
	f.StringSliceVar(&o.Namespaces, "namespaces", nil, "Confine the manager to these member namespaces (comma separated); default cluster-wide")
	f.StringVar(&o.Server, "server", "", "The member API server's URL as the hub reaches it; default the URL in the member kubeconfig")
	f.BoolVar(&o.RotateToken, "rotate-token", false, "Replace the registered token and revoke the old one")
	f.DurationVar(&o.TokenWait, "token-wait", cli.DefaultTokenWait, "How long to wait for the member's token controller before using a TokenRequest token")
	f.DurationVar(&o.TokenExpiration, "token-expiration", cli.DefaultTokenExpiration, "Lifetime asked for a TokenRequest token (the member may cap it)")
	f.BoolVar(&o.SkipMemberController, "skip-member-controller", false, "Do not install the member controller (which keeps each database's servers a replicated set inside the member); for a member where it is installed otherwise")
	f.StringVar(&o.MemberControllerImage, "member-controller-image", cli.DefaultMemberControllerImage(), "Image of the member controller's Deployment (the manager's image)")
	_ = cmd.MarkFlagRequired("cloud")
	_ = cmd.MarkFlagRequired("region")
	return cmd
}

func addMemberFlags(cmd *cobra.Command, m *cli.MemberFlags) {
	cmd.Flags().StringVar(&m.Context, "member-context", "", "The member's context in your kubeconfig (or in --member-kubeconfig)")
	cmd.Flags().StringVar(&m.Kubeconfig, "member-kubeconfig", "", "The member's kubeconfig file; default the hub's --kubeconfig, $KUBECONFIG or ~/.kube/config")
}

func newUnjoinCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.UnjoinOptions
	cmd := &cobra.Command{
		Use:   "unjoin NAME --member-context CONTEXT",
		Short: "Remove a member from the fleet",
		Long: `Remove a member from the fleet.

unjoin deletes the registration Secret on the hub first, which ends the manager's access to the member, then
the ServiceAccount, its token and its RBAC in the member. It deletes no database: the databases placed there
keep running, and the manager, which can no longer reach the member, reports it as an unknown member of their
MySQLClusters. The member's mysqlfleet-system namespace is kept.`,
		Example: `  ` + name + ` unjoin aws-eu-west-1 --member-context aws-eu-west-1
  ` + name + ` unjoin old-member --hub-only   # the member cluster is gone`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cli.Unjoin(cmd.Context(), *hub, o, streams.Out)
		},
	}
	addMemberFlags(cmd, &o.Member)
	cmd.Flags().BoolVar(&o.HubOnly, "hub-only", false, "Only delete the registration on the hub; leave the member as it is")
	cmd.Flags().BoolVar(&o.ForgetPending, "forget-pending", false, "Also delete the member's pending teardowns (deletions of MySQLClusters it was away for), which are otherwise kept and finished if it is joined again")
	return cmd
}

func newOrphansCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.OrphansOptions
	cmd := &cobra.Command{
		Use:   "orphans [--member MEMBER [--delete [--delete-volumes]]]",
		Short: "List objects in members that belong to no MySQLCluster, and delete them when asked",
		Long: `List objects in members that belong to no MySQLCluster, and delete them when asked.

An orphan carries mysqlfleet's labels and a MySQLCluster UID (mysqlfleet.io/cluster-uid) that no MySQLCluster on
the hub has, and that no pending teardown (a deletion the hub still owes the member) names. Volumes kept by
deletionPolicy Retain are orphans of that kind. Each member is searched with the kubeconfig of its registration,
and only if the manager's rules accept that kubeconfig. The manager never deletes an orphan on its own: --delete
deletes those of one member (--member), by UID; PersistentVolumeClaims, and their data, only with
--delete-volumes too.`,
		Example: `  ` + name + ` orphans
  ` + name + ` orphans --member gcp-us-central1 --delete
  ` + name + ` orphans --member gcp-us-central1 --uid 0b3c... --delete --delete-volumes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.Orphans(cmd.Context(), *hub, o, streams)
		},
	}
	addOutputFlag(cmd, &o.Output)
	f := cmd.Flags()
	f.StringVar(&o.Member, "member", "", "Search this member only (needed by --delete)")
	f.StringVar(&o.UID, "uid", "", "Only the orphans of this MySQLCluster UID")
	f.BoolVar(&o.Delete, "delete", false, "Delete the orphans found in --member, except volumes")
	f.BoolVar(&o.DeleteVolumes, "delete-volumes", false, "With --delete, delete the orphaned PersistentVolumeClaims too, and their data")
	f.DurationVar(&o.Timeout, "timeout", 0, "How long to wait for each member (default 30s)")
	return cmd
}

func newMembersCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.MembersOptions
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the registered members, whether they answer, and how many databases each holds",
		Long: `List the registered members, whether they answer, and how many databases each holds.

Each member is probed (GET /readyz and /version) from this machine with the kubeconfig of its registration,
and only if the manager's rules accept that kubeconfig; otherwise REACHABLE says why it is refused. PLACED
counts the MySQLClusters whose status lists the member.`,
		Example: `  ` + name + ` members
  ` + name + ` members -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.Members(cmd.Context(), *hub, o, streams)
		},
	}
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().DurationVar(&o.Timeout, "probe-timeout", 0, "How long to wait for each member (default 10s)")
	return cmd
}

func newGetCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.GetOptions
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "Show MySQLClusters and their state in each member",
		Example: `  ` + name + ` get -A
  ` + name + ` get orders -n shop -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
			}
			return cli.Get(cmd.Context(), *hub, o, streams)
		},
	}
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show MySQLClusters of every namespace")
	return cmd
}

func newPlanCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.PlanOptions
	cmd := &cobra.Command{
		Use:     "plan NAME",
		Short:   "Show what a paused MySQLCluster would apply in each member",
		Example: `  ` + name + ` plan orders -n shop`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cli.Plan(cmd.Context(), *hub, o, streams)
		},
	}
	addOutputFlag(cmd, &o.Output)
	return cmd
}

func newBackupsCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.BackupsOptions
	cmd := &cobra.Command{
		Use:   "backups NAME",
		Short: "List a MySQLCluster's backups across its members",
		Long: `List a MySQLCluster's backups across its members, newest first: TIME MEMBER BACKUP METHOD SIZE DURATION POD GTID.

The list is what the manager reports: per member, the backups its store kept after the last successful backup
(from the backup runner's report of that backup's Job, at most 25), and the last failed backup Job when it is
newer. A backup restored with spec.restore.backup is named by its BACKUP column.`,
		Example: `  ` + name + ` backups orders -n shop
  ` + name + ` backups orders -n shop -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cli.Backups(cmd.Context(), *hub, o, streams)
		},
	}
	addOutputFlag(cmd, &o.Output)
	return cmd
}

func newRestorePointsCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.RestorePointsOptions
	cmd := &cobra.Command{
		Use:   "restore-points NAME",
		Short: "Show how far a restore from each of a MySQLCluster's backups can reach",
		Long: `Show how far a restore from each of a MySQLCluster's backups can reach: MEMBER BACKUP FROM TO POSITION NOTE.

FROM is when the backup was complete. TO is, with spec.backup.archive, the newest transaction the member's
binary-log archive has stored (or the last one before the first gap after the backup; NOTE says so), without
it the backup itself. It is what the manager reports, which, while writes go on, says the archive's newest
transaction again only once it moved by a minute: TO can be that much behind the archive.`,
		Example: `  ` + name + ` restore-points orders -n shop`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cli.RestorePoints(cmd.Context(), *hub, o, streams)
		},
	}
	addOutputFlag(cmd, &o.Output)
	return cmd
}

func newBackupCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.BackupNowOptions
	cmd := &cobra.Command{
		Use:   "backup NAME --member MEMBER",
		Short: "Take a backup of a MySQLCluster in a member now",
		Long: `Take a backup of a MySQLCluster in a member now.

The request is recorded on the MySQLCluster (annotation mysqlfleet.io/backup-now); the manager runs one Job of
the member's backup CronJob for it, and stops once the member reports a backup, or a failure, newer than the
request. mysqlfleet backups shows the outcome.`,
		Example: `  ` + name + ` backup orders -n shop --member aws-eu-west-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cli.BackupNow(cmd.Context(), *hub, o, streams.Out)
		},
	}
	cmd.Flags().StringVar(&o.Member, "member", "", "The member whose backup CronJob runs")
	_ = cmd.MarkFlagRequired("member")
	return cmd
}

func newRebuildCommand(name string, hub *cli.Hub, streams genericiooptions.IOStreams) *cobra.Command {
	var o cli.RebuildOptions
	cmd := &cobra.Command{
		Use:   "rebuild NAME --member MEMBER --pod POD",
		Short: "Rebuild one server of a MySQLCluster: empty its data and seed it again from the set",
		Long: `Rebuild one server of a MySQLCluster: empty its data and seed it again from the set.

This is how an errant server (one holding transactions the primary lacks, fenced out of every Service) comes
back when the member controller did not rebuild it by itself (spec.errantServers Fence, or RebuildWhenSafe could
not prove the rebuild safe). The rebuild discards everything the server holds that the primary lacks: those
transactions are gone for good unless you saved them first (see docs/runbook.md).

The request is recorded on the MySQLCluster (annotation mysqlfleet.io/rebuild, the time of the request as its
id) and copied by the manager to the member; the member controller carries it out once and reports it, with the
transactions discarded, in status.members[].replication.rebuilds. The primary is refused: move it first
(spec.primaries).`,
		Example: `  ` + name + ` rebuild orders -n shop --member aws-eu-west-1 --pod orders-2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cli.Rebuild(cmd.Context(), *hub, o, streams.Out)
		},
	}
	cmd.Flags().StringVar(&o.Member, "member", "", "The member whose server to rebuild")
	cmd.Flags().StringVar(&o.Pod, "pod", "", "The server's Pod, NAME-ORDINAL")
	_ = cmd.MarkFlagRequired("member")
	_ = cmd.MarkFlagRequired("pod")
	return cmd
}

func addOutputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", "", "Output format: wide, json or yaml (default a table)")
}
