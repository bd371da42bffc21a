package main

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// baselineManagedBy replaces the managed-by label on the objects the baselines write. Everything else is the
// rendered object unchanged; with mysqlfleet's own value the manager's filtered member caches would pick the
// baseline objects up, grow, and map their events to hub objects, so the baselines would disturb the very
// process whose memory is measured.
const baselineManagedBy = "mysqlfleet-baseline"

// benchCredentials are the fixed passwords of the baselines' credentials Secrets. mysqlfleet generates its own.
var benchCredentials = render.Credentials{RootPassword: "bench-root-password-0123456789", Password: "bench-password-0123456789",
	AdminPassword: "bench-admin-password-0123456789", ReplicationPassword: "bench-replication-password-0123456"}

// key names one object in one member.
type key struct {
	member, resource, namespace, name string
}

// resourceOfKind maps the kinds render produces to the resources the observer watches.
var resourceOfKind = map[string]string{
	"Namespace": "namespaces", "Secret": "secrets", "ConfigMap": "configmaps", "Service": "services",
	"PersistentVolumeClaim": "persistentvolumeclaims", "StatefulSet": "statefulsets",
	"PodDisruptionBudget": "poddisruptionbudgets", "CronJob": "cronjobs",
}

// group is the MySQLClusters of one run, in namespaces of their own, and what they render to in each member.
type group struct {
	prefix string
	// clusters are the hub objects as the bench creates them (spec only). Baseline groups never create them.
	clusters []*v1alpha1.MySQLCluster
	// keys[i] are the objects of cluster i in every member of the group (its Namespace included).
	keys [][]key
	// objects[member] are the rendered objects per member, for the baselines.
	objects map[string]*memberObjects
	// children counts the labelled objects (Namespaces excluded) over all members.
	children int
	// namespaces counts member Namespaces over all members.
	namespaces int
}

type memberObjects struct {
	namespaces []*unstructured.Unstructured
	// clusters[i] are cluster i's objects without its Namespace, in apply order.
	clusters [][]*unstructured.Unstructured
}

func (g *group) allKeys() []key {
	var all []key
	for _, ks := range g.keys {
		all = append(all, ks...)
	}
	return all
}

// merge is groups as one, to wait for all their objects.
func merge(groups []*group) *group {
	out := &group{}
	for _, g := range groups {
		out.clusters = append(out.clusters, g.clusters...)
		out.keys = append(out.keys, g.keys...)
	}
	return out
}

// keysIn returns the keys of the group that live in the named members.
func (g *group) keysIn(members ...string) []key {
	in := map[string]bool{}
	for _, m := range members {
		in[m] = true
	}
	var out []key
	for _, k := range g.allKeys() {
		if in[k.member] {
			out = append(out, k)
		}
	}
	return out
}

// benchCluster is the MySQLCluster of the benchmark: one replica, small storage and a daily backup at an H time
// onto a volume, placed on every registered member (an empty selector selects all). Each member gets a Secret, a
// ConfigMap, two Services, a StatefulSet, a PodDisruptionBudget, a backup PVC and a backup CronJob.
func benchCluster(namespace, name string) *v1alpha1.MySQLCluster {
	return &v1alpha1.MySQLCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MySQLCluster"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.MySQLClusterSpec{
			Version:   "8.4",
			Replicas:  1,
			Placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{}},
			Storage:   v1alpha1.Storage{Size: resource.MustParse("1Gi")},
			Backup: &v1alpha1.Backup{
				Schedule: "H H * * *",
				Target:   v1alpha1.BackupTarget{PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")}},
			},
		},
	}
}

func namespaceName(prefix string, i, perNamespace int) string {
	return fmt.Sprintf("bench-%s-%02d", prefix, i/perNamespace)
}

// newGroup renders n MySQLClusters for members. The spec is defaulted by the hub with a dry-run create, so that
// the baselines write exactly what the controller renders from the stored object. The hub namespaces are
// created, as a user would before creating MySQLClusters there.
func newGroup(ctx context.Context, hub client.Client, prefix string, n, perNamespace int, members []placement.Member,
	baseline bool) (*group, error) {
	g := &group{prefix: prefix, objects: map[string]*memberObjects{}}
	for i := 0; i < n; i += perNamespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(prefix, i, perNamespace)}}
		if err := hub.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating hub namespace %s: %w", ns.Name, err)
		}
	}
	defaulted := benchCluster(namespaceName(prefix, 0, perNamespace), "dry-run")
	if err := hub.Create(ctx, defaulted, client.DryRunAll); err != nil {
		return nil, fmt.Errorf("dry-run create of a MySQLCluster: %w", err)
	}
	for _, m := range members {
		g.objects[m.Name] = &memberObjects{}
	}
	seenNS := map[key]bool{}
	for i := range n {
		ns, name := namespaceName(prefix, i, perNamespace), fmt.Sprintf("db-%03d", i)
		g.clusters = append(g.clusters, benchCluster(ns, name))
		c := defaulted.DeepCopy()
		c.Namespace, c.Name = ns, name
		c.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		var keys []key
		for _, m := range members {
			objs, err := render.Render(c, m, benchCredentials)
			if err != nil {
				return nil, fmt.Errorf("rendering %s/%s for %s: %w", ns, name, m.Name, err)
			}
			mo := g.objects[m.Name]
			var mine []*unstructured.Unstructured
			for _, ac := range objs.All() {
				u, err := toUnstructured(ac)
				if err != nil {
					return nil, err
				}
				if baseline {
					l := u.GetLabels()
					l[v1alpha1.ManagedByLabel] = baselineManagedBy
					u.SetLabels(l)
				}
				k := key{member: m.Name, resource: resourceOfKind[u.GetKind()], namespace: u.GetNamespace(), name: u.GetName()}
				if k.resource == "" {
					return nil, fmt.Errorf("render produced a %s, which the observer does not watch", u.GetKind())
				}
				keys = append(keys, k)
				if u.GetKind() == "Namespace" {
					if !seenNS[k] {
						seenNS[k] = true
						mo.namespaces = append(mo.namespaces, u)
						g.namespaces++
					}
					continue
				}
				mine = append(mine, u)
				g.children++
			}
			mo.clusters = append(mo.clusters, mine)
		}
		g.keys = append(g.keys, keys)
	}
	return g, nil
}

func toUnstructured(ac any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, err
	}
	return u, nil
}
