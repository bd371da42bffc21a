package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// GetOptions choose the MySQLClusters to show.
type GetOptions struct {
	// Name, if set, shows one MySQLCluster.
	Name string
	// AllNamespaces shows every namespace; otherwise the namespace is -n or the hub context's.
	AllNamespaces bool
	Output        string
}

// ClusterView is one MySQLCluster as its status reports it.
type ClusterView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase,omitempty"`
	// Ready is the status of the Ready condition: True, False or Unknown; empty before the manager reported.
	Ready         string `json:"ready,omitempty"`
	ReadyMembers  string `json:"readyMembers,omitempty"`
	ReadyReplicas string `json:"readyReplicas,omitempty"`
	// Serving is "serving/desired" servers: writable primaries plus replicas in sync.
	Serving        string       `json:"serving,omitempty"`
	StorageClasses string       `json:"storageClasses,omitempty"`
	LastBackup     *metav1.Time `json:"lastBackup,omitempty"`
	// Message is the Ready condition's message.
	Message string              `json:"message,omitempty"`
	Members []ClusterMemberView `json:"members"`
}

// ClusterMemberView is one member of a MySQLCluster.
type ClusterMemberView struct {
	Name          string       `json:"name"`
	Phase         string       `json:"phase,omitempty"`
	ReadyReplicas int32        `json:"readyReplicas"`
	Replicas      int32        `json:"replicas"`
	StorageClass  string       `json:"storageClass,omitempty"`
	LastBackup    *metav1.Time `json:"lastBackup,omitempty"`
	LastError     string       `json:"lastError,omitempty"`
	// Replication is what the member controller reports; absent while nothing reports.
	Replication *v1alpha1.MemberReplication `json:"replication,omitempty"`
	// Replicating is the status of the member's Replicating condition: True, False or Unknown.
	Replicating string `json:"replicating,omitempty"`
}

// ListClusters reads MySQLClusters from the hub, sorted by namespace and name, members by name.
func ListClusters(ctx context.Context, hub Hub, opts GetOptions) ([]ClusterView, error) {
	if opts.AllNamespaces && opts.Name != "" {
		return nil, errors.New("a MySQLCluster cannot be retrieved by name across all namespaces; use -n")
	}
	hc, err := hub.connect()
	if err != nil {
		return nil, err
	}
	ns := ""
	if !opts.AllNamespaces {
		if ns, err = hub.defaultNamespace(); err != nil {
			return nil, err
		}
	}
	var items []v1alpha1.MySQLCluster
	if opts.Name != "" {
		var c v1alpha1.MySQLCluster
		if err := hc.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.Name}, &c); err != nil {
			return nil, explainHubError(err)
		}
		items = append(items, c)
	} else {
		var list v1alpha1.MySQLClusterList
		if err := hc.cl.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, explainHubError(err)
		}
		items = list.Items
	}
	views := make([]ClusterView, 0, len(items))
	for i := range items {
		views = append(views, clusterView(&items[i]))
	}
	sort.Slice(views, func(i, j int) bool {
		if views[i].Namespace != views[j].Namespace {
			return views[i].Namespace < views[j].Namespace
		}
		return views[i].Name < views[j].Name
	})
	return views, nil
}

func clusterView(c *v1alpha1.MySQLCluster) ClusterView {
	v := ClusterView{
		Namespace: c.Namespace, Name: c.Name, Phase: string(c.Status.Phase),
		ReadyMembers: c.Status.ReadyMembers, ReadyReplicas: c.Status.ReadyReplicas, Serving: c.Status.Serving,
		StorageClasses: c.Status.StorageClasses, LastBackup: c.Status.LastBackup,
		Members: []ClusterMemberView{},
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
		v.Ready, v.Message = string(cond.Status), cond.Message
	}
	for _, m := range c.Status.Members {
		mv := ClusterMemberView{
			Name: m.Name, Phase: string(m.Phase), ReadyReplicas: m.ReadyReplicas, Replicas: m.Replicas,
			StorageClass: m.StorageClass, LastBackup: m.LastBackup, LastError: m.LastError,
			Replication: m.Replication.DeepCopy(),
		}
		if cond := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionReplicating); cond != nil {
			mv.Replicating = string(cond.Status)
			if mv.LastError == "" && cond.Status != metav1.ConditionTrue {
				mv.LastError = cond.Message
			}
		}
		v.Members = append(v.Members, mv)
	}
	sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].Name < v.Members[j].Name })
	return v
}

// Get prints MySQLClusters: a summary row for each, then a row for each of its members.
func Get(ctx context.Context, hub Hub, opts GetOptions, streams genericiooptions.IOStreams) error {
	if err := ValidateOutput(opts.Output); err != nil {
		return err
	}
	views, err := ListClusters(ctx, hub, opts)
	if err != nil {
		return err
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Namespace/Name", false), column("Member", false), column("Phase", false), column("Ready", false),
		column("Primary", false), column("Serving", false), column("Storage Class", false),
		column("Last Backup", false), column("Last Primary Change", true), column("Message", true),
	}}
	for _, v := range views {
		members := "-"
		if v.ReadyMembers != "" {
			members = v.ReadyMembers + " ready"
		}
		table.Rows = append(table.Rows, row(v.Namespace+"/"+v.Name, members, orDash(v.Phase), orDash(v.Ready), "-",
			orDash(v.Serving), orDash(v.StorageClasses), age(v.LastBackup), "-", orDash(v.Message)))
		for _, m := range v.Members {
			primary, serving, change := "-", "-", "-"
			if r := m.Replication; r != nil {
				primary = orDash(r.Primary)
				if r.RequestedPrimary != "" && r.RequestedPrimary != r.Primary {
					primary += "→" + r.RequestedPrimary // a switchover under way, or refused (see the message)
				}
				n := r.ReplicasInSync
				if r.Primary != "" {
					n++
				}
				serving = fmt.Sprintf("%d/%d", n, m.Replicas)
				if t := r.LastTransition; t != nil {
					change = fmt.Sprintf("%s:%s→%s", t.Kind, orDash(t.From), orDash(t.To))
					if t.ObservedTime != nil {
						change += "," + age(t.ObservedTime) + "-ago"
					}
				}
			}
			table.Rows = append(table.Rows, row("", m.Name, orDash(m.Phase), fmt.Sprintf("%d/%d", m.ReadyReplicas, m.Replicas),
				primary, serving, orDash(m.StorageClass), age(m.LastBackup), change, orDash(m.LastError)))
		}
	}
	empty := "No MySQLClusters found."
	if !opts.AllNamespaces {
		if ns, err := hub.defaultNamespace(); err == nil {
			empty = "No MySQLClusters found in namespace " + ns + "."
		}
	}
	return printView(streams, opts.Output, views, table, empty)
}

// PlanOptions name the MySQLCluster whose plan to show; its namespace is -n or the hub context's.
type PlanOptions struct {
	Name   string
	Output string
}

// PlanView is what a paused MySQLCluster would apply, per member.
type PlanView struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Paused    bool             `json:"paused"`
	Members   []MemberPlanView `json:"members"`
}

// MemberPlanView is one member's plan.
type MemberPlanView struct {
	Member  string                   `json:"member"`
	Phase   string                   `json:"phase,omitempty"`
	Objects []v1alpha1.PlannedObject `json:"objects"`
	// LastError says why a member has no plan, e.g. it is unreachable.
	LastError string `json:"lastError,omitempty"`
}

// GetPlan reads one MySQLCluster's plan from its status.
func GetPlan(ctx context.Context, hub Hub, opts PlanOptions) (*PlanView, error) {
	if opts.Name == "" {
		return nil, errors.New("name the MySQLCluster")
	}
	hc, err := hub.connect()
	if err != nil {
		return nil, err
	}
	ns, err := hub.defaultNamespace()
	if err != nil {
		return nil, err
	}
	var c v1alpha1.MySQLCluster
	if err := hc.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.Name}, &c); err != nil {
		return nil, explainHubError(err)
	}
	v := &PlanView{Namespace: c.Namespace, Name: c.Name, Paused: c.Spec.Paused, Members: []MemberPlanView{}}
	for _, m := range c.Status.Members {
		objs := append([]v1alpha1.PlannedObject{}, m.Plan...)
		v.Members = append(v.Members, MemberPlanView{Member: m.Name, Phase: string(m.Phase), Objects: objs, LastError: m.LastError})
	}
	sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].Member < v.Members[j].Member })
	return v, nil
}

// Plan prints a MySQLCluster's plan: one row per object per member, in the order the manager would apply them.
func Plan(ctx context.Context, hub Hub, opts PlanOptions, streams genericiooptions.IOStreams) error {
	if err := ValidateOutput(opts.Output); err != nil {
		return err
	}
	v, err := GetPlan(ctx, hub, opts)
	if err != nil {
		return err
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Member", false), column("Kind", false), column("Name", false), column("Action", false),
	}}
	for _, m := range v.Members {
		for _, o := range m.Objects {
			table.Rows = append(table.Rows, row(m.Member, o.Kind, o.Name, o.Action))
		}
	}
	if opts.Output == OutputTable || opts.Output == OutputWide {
		w := errOut(streams)
		if !v.Paused {
			say(w, "%s/%s is not paused: the manager applies changes directly and keeps no plan "+
				"(set spec.paused: true to see what it would apply)\n", v.Namespace, v.Name)
		}
		for _, m := range v.Members {
			if len(m.Objects) == 0 && v.Paused {
				say(w, "member %s: no plan (phase %s) %s\n", m.Member, orDash(m.Phase), m.LastError)
			}
		}
	}
	return printView(streams, opts.Output, v, table, "No plan for "+v.Namespace+"/"+v.Name+".")
}

// defaultNamespace is -n, else the namespace of the hub's kubeconfig context, else "default".
func (h Hub) defaultNamespace() (string, error) {
	ns, _, err := h.Getter.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("failed to read the hub context's namespace: %w", err)
	}
	return ns, nil
}

// explainHubError turns "no matches for kind" into advice: the hub has no mysqlfleet CRD.
func explainHubError(err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("the hub has no mysqlclusters.%s API: is mysqlfleet installed there, and is --context the hub? (%w)",
			v1alpha1.GroupVersion.Group, err)
	}
	return err
}
