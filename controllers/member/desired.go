package member

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// Resolver tells where a Pod's server is reached on its reserved administrative port (render.AdminPort): by the
// controller's own connections and by the other instances' replication (the engine's Desired.Addresses), so
// that application sessions that exhaust max_connections lock out neither. A full server refuses a replica's
// receiver on the MySQL port too (ERROR 1040, measured on MariaDB 10.11): a replica that reconnected to a
// primary whose sessions all wait for its acknowledgement could never get in, and the writes would wait for
// good. PodIPResolver is the product's; tests map Pods to servers on loopback.
type Resolver func(pod *corev1.Pod) (clustering.Address, error)

// PodIPResolver reaches a Pod at its IP on render.AdminPort. A Pod IP changes when the Pod is recreated; the
// engine then sees its replicas replicating from an address that is not the primary's and repoints them.
func PodIPResolver(pod *corev1.Pod) (clustering.Address, error) {
	if pod.Status.PodIP == "" {
		return clustering.Address{}, fmt.Errorf("pod %s has no IP yet", pod.Name)
	}
	return clustering.Address{Host: pod.Status.PodIP, Port: render.AdminPort}, nil
}

// managed tells whether a StatefulSet is one the member controller keeps replicated: written by the hub for a
// MySQLCluster (managed-by mysqlfleet, with the hub object's UID).
func managed(sts *appsv1.StatefulSet) bool {
	l := sts.GetLabels()
	return l[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByValue && l[v1alpha1.ClusterUIDLabel] != ""
}

// podName is the name of the StatefulSet's Pod with ordinal i.
func podName(sts *appsv1.StatefulSet, i int) string { return fmt.Sprintf("%s-%d", sts.Name, i) }

// instances is spec.replicas, 1 when unset (the API server's default).
func instances(sts *appsv1.StatefulSet) int {
	if sts.Spec.Replicas == nil {
		return 1
	}
	return int(*sts.Spec.Replicas)
}

// contract is what the hub tells the member controller of a StatefulSet (v1alpha1.EngineAnnotation and its
// fellows), read from the StatefulSet's annotations and nowhere else: the Pod template's command, image and
// environment are render's business and may change shape; the contract may not.
type contract struct {
	// engine is the servers' engine, whose SQL the controller speaks and whose dump tool seed Jobs run.
	engine mysql.Engine
	// credentialsSecret is the Secret in the StatefulSet's namespace that holds the passwords, under the keys
	// of v1alpha1 (RootPasswordKey, AdminPasswordKey, ...).
	credentialsSecret string
}

// readContract reads the StatefulSet's contract. A missing annotation means an older hub wrote the StatefulSet,
// and a value that cannot be read means a hub this controller does not understand; neither is guessed at: the
// error says which annotation, and the pass reports the set Unobserved with it until the hub writes it.
func readContract(sts *appsv1.StatefulSet) (contract, error) {
	var missing []string
	for _, k := range []string{v1alpha1.EngineAnnotation, v1alpha1.CredentialsSecretAnnotation} {
		if _, ok := sts.Annotations[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return contract{}, fmt.Errorf("StatefulSet %s lacks %s of the hub's contract: it was written by a hub "+
			"older than this member controller, which does not guess the values; an upgraded hub writes them when "+
			"it next applies the StatefulSet", sts.Name, strings.Join(missing, " and "))
	}
	var k contract
	switch e := v1alpha1.Engine(sts.Annotations[v1alpha1.EngineAnnotation]); e {
	case v1alpha1.EngineMySQL:
		k.engine = mysql.MySQL
	case v1alpha1.EngineMariaDB:
		k.engine = mysql.MariaDB
	default:
		return contract{}, fmt.Errorf("annotation %s=%q on StatefulSet %s names no engine this member controller "+
			"knows (%s or %s)", v1alpha1.EngineAnnotation, e, sts.Name, v1alpha1.EngineMySQL, v1alpha1.EngineMariaDB)
	}
	k.credentialsSecret = sts.Annotations[v1alpha1.CredentialsSecretAnnotation]
	if errs := validation.IsDNS1123Subdomain(k.credentialsSecret); len(errs) > 0 {
		return contract{}, fmt.Errorf("annotation %s=%q on StatefulSet %s is no Secret name: %s",
			v1alpha1.CredentialsSecretAnnotation, k.credentialsSecret, sts.Name, strings.Join(errs, "; "))
	}
	return k, nil
}

// mysqlContainer is the Pod template's server container. Its image is the only thing read from it: seed Jobs
// run their dump tool from the very image the servers run.
func mysqlContainer(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == render.MySQLContainerName {
			return &spec.Containers[i]
		}
	}
	return nil
}

// requestedPrimary reads PrimaryAnnotation: nil when absent, an error when it is not an ordinal.
func requestedPrimary(sts *appsv1.StatefulSet) (*int, error) {
	v, ok := sts.Annotations[v1alpha1.PrimaryAnnotation]
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("annotation %s=%q is not a Pod ordinal", v1alpha1.PrimaryAnnotation, v)
	}
	return &n, nil
}

// shrinkTo reads ReplicasAnnotation: the number of instances the hub asks for when it is below the StatefulSet's
// (a scale-down to prepare), 0 otherwise, or when the annotation is absent or not a count.
func shrinkTo(sts *appsv1.StatefulSet) int {
	n, err := strconv.Atoi(strings.TrimSpace(sts.Annotations[v1alpha1.ReplicasAnnotation]))
	if err != nil || n < 1 || n >= instances(sts) {
		return 0
	}
	return n
}

// target is where one instance is reached (see Resolver), or why it cannot be, and why it must not be primary
// (see unhealthy).
type target struct {
	pod       *corev1.Pod
	addr      clustering.Address
	err       error
	unhealthy string
}

// unhealthy is clustering.Observation.Unhealthy for an instance, from what Kubernetes says of its Pod: why its
// server, though it may answer, must not stay or become the primary; "" when nothing says so. The rule: a Pod
// being deleted (DeletionTimestamp set) is going away. Its server runs until its shutdown ends (up to the grace
// period) or, on a node that stopped reporting, for as long as the node does; it is therefore still read. A
// primary there is failed over, and fenced first while it answers, so that it is never writable beside the new
// primary; a replica there counts towards a failover's quorum and is never chosen.
//
// A switchover away from such a primary (MOCO's way) would lose no commit in flight, but it needs the server to
// stay up until the role has moved, and the server receives SIGTERM as soon as the Pod is deleted (render has no
// preStop hook that would wait). Readiness and the node's state are not in the rule: the readiness probe fails
// with the server's load, and a failover on it would move the primary for a slow query.
func unhealthy(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return fmt.Sprintf("pod %s is being deleted", p.Name)
	}
	return ""
}

// desiredSet builds what the engine is asked for from the StatefulSet and its Pods (by ordinal; a missing Pod
// is nil), without the switchover request (see requestedPrimary); node is the controller's own node ("" when
// unknown), which a failover avoids among equal candidates. An instance that cannot be resolved keeps an
// empty address: the engine then finds it unreachable (it has no server), which is what it is.
func desiredSet(sts *appsv1.StatefulSet, pods []*corev1.Pod, resolve Resolver, maxLag time.Duration, node string) (
	clustering.Desired, []target, error) {
	k, err := readContract(sts)
	if err != nil {
		return clustering.Desired{}, nil, err
	}
	d := clustering.Desired{Name: sts.Name, Engine: k.engine, MaxLag: maxLag, ShrinkTo: shrinkTo(sts),
		Preferred:   sts.Annotations[v1alpha1.DurabilityAnnotation] == string(v1alpha1.DurabilityPreferred),
		FenceErrant: sts.Annotations[v1alpha1.ErrantServersAnnotation] == string(v1alpha1.ErrantServersFence),
		Rebuild:     rebuildRequests(sts, len(pods))}
	if n := sts.Labels[v1alpha1.ClusterNameLabel]; n != "" {
		d.Name = n
	}
	targets := make([]target, len(pods))
	for i, p := range pods {
		t := target{pod: p}
		if p == nil {
			t.err = fmt.Errorf("pod %s does not exist", podName(sts, i))
		} else {
			t.addr, t.err = resolve(p)
			t.unhealthy = unhealthy(p)
		}
		if t.err != nil {
			t.addr = clustering.Address{}
		}
		targets[i] = t
		d.Addresses = append(d.Addresses, t.addr)
		d.WithController = append(d.WithController, node != "" && p != nil && p.Spec.NodeName == node)
	}
	return d, targets, nil
}

// dsn is the go-sql-driver DSN of the controller's connection to an instance.
func dsn(user, password string, a clustering.Address, timeout time.Duration) string {
	cfg := driver.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	cfg.Timeout = timeout
	return cfg.FormatDSN()
}
