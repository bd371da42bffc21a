package localfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/dbpods"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// DatabasePods plays the kubelet's part for the database Pods of one member of the local fleet, whose kwok nodes
// run no container: a real mariadbd (dbpods, as the tests stand them) runs behind every Pod of every StatefulSet
// mysqlfleet places there, booted with what the hub rendered (the ConfigMap's my.cnf, the credentials Secret's
// init script and root password). Like a container's, a server outlives neither its Pod nor its volume: the
// server is the Pod's data claim's, so a Pod recreated on the same claim finds its data again, a new claim
// starts an empty server, and a server that dies (killed, crashed) is started again on its data after the
// kubelet's first back-off. The servers listen on loopback ports; ServerFile records where, for clients that
// follow a Service to its Pod as kube-proxy would (ServiceServer).
type DatabasePods struct {
	member string
	cs     kubernetes.Interface
	rig    *rig
	// file is where the servers are recorded (ServerFile).
	file string

	mu      sync.Mutex
	byNS    map[string]*dbpods.Servers
	volumes map[types.NamespacedName]*volume
}

// volume is a Pod's data claim and the server running on it.
type volume struct {
	claim  types.UID
	server *mysqltest.Server
	// podGone is set while the Pod does not exist: its server is stopped, its data kept.
	podGone bool
	// diedAt is when the server was first seen dead, zero while it runs.
	diedAt time.Time
}

// restartBackOff is how long a dead server stays down before it is started again: the kubelet's first back-off
// for a crashed container. It also leaves the member controller time to see the server gone and act.
const restartBackOff = 10 * time.Second

// ServerRecord is where the server behind one database Pod listens.
type ServerRecord struct {
	Member    string `json:"member"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Host      string `json:"host"`
	// Port is the MySQL port; AdminPort the administrative extra_port (render.AdminPort's stand-in).
	Port      int `json:"port"`
	AdminPort int `json:"adminPort"`
	// Pid is mariadbd's process id, 0 while it is down.
	Pid int `json:"pid"`
}

// ServerFile is where the servers of a member whose database Pods run under dir are recorded.
func ServerFile(dir string) string { return filepath.Join(dir, "servers.json") }

// NewDatabasePods returns the database Pods of the member whose admin client is cs; the servers' files live
// under dir, which Close removes.
func NewDatabasePods(member string, cs kubernetes.Interface, dir string) (*DatabasePods, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &DatabasePods{
		member: member, cs: cs, rig: newRig(dir), file: ServerFile(dir),
		byNS: map[string]*dbpods.Servers{}, volumes: map[types.NamespacedName]*volume{},
	}, nil
}

// Resolve is the member controller's Resolver: the administrative address of the Pod's server.
func (d *DatabasePods) Resolve(pod *corev1.Pod) (clustering.Address, error) {
	return d.servers(pod.Namespace).Resolve(pod)
}

// MySQLAddr is the Pod's server's MySQL address, as host:port: where the fleet's jobs runner (backups, restores,
// seeds) reaches a Pod (testfleet.Cluster.SetPodAddresses).
func (d *DatabasePods) MySQLAddr(pod *corev1.Pod) (string, error) {
	a, err := d.servers(pod.Namespace).MySQLAddr(pod)
	return a.String(), err
}

func (d *DatabasePods) servers(ns string) *dbpods.Servers {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.byNS[ns]
	if !ok {
		s = dbpods.New(d.rig)
		d.byNS[ns] = s
	}
	return s
}

// Run keeps a server behind every database Pod until ctx ends, then stops them all. Errors (a Pod whose
// ConfigMap is not there yet, a server that does not boot) are logged and tried again.
func (d *DatabasePods) Run(ctx context.Context) {
	sel := metav1.ListOptions{LabelSelector: v1alpha1.ManagedByLabel + "=" + v1alpha1.ManagedByValue + "," +
		v1alpha1.ComponentLabel + "=" + render.ComponentDatabase}
	logged := map[string]bool{}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		pods, err := d.cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
		if err != nil {
			return
		}
		seen := map[types.NamespacedName]bool{}
		for i := range pods.Items {
			p := &pods.Items[i]
			key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
			seen[key] = true
			if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
				continue
			}
			// One message per failure, not one per tick.
			if err := d.sync(ctx, p); err != nil && !logged[err.Error()] {
				logged[err.Error()] = true
				fmt.Printf("member %s: pod %s: %v\n", d.member, key, err)
			}
		}
		d.stopGone(seen)
		d.record()
	}, 500*time.Millisecond)
}

// sync makes the Pod's server run on its claim's data.
func (d *DatabasePods) sync(ctx context.Context, p *corev1.Pod) error {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	claim, err := d.cs.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx,
		v1alpha1.DataVolumeName+"-"+p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("data claim: %w", err)
	}
	d.mu.Lock()
	v := d.volumes[key]
	d.mu.Unlock()
	if v != nil && v.claim == claim.UID {
		return d.keepRunning(v)
	}
	// A new Pod, or a new claim: a server on an empty data directory, initialised as the image's entrypoint does.
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: p.Labels[v1alpha1.InstanceLabel]}}
	cm, err := d.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, c.ConfigMapName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	secret, err := d.cs.CoreV1().Secrets(p.Namespace).Get(ctx, c.CredentialsSecretName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	var s *mysqltest.Server
	err = d.rig.do(func() {
		s = d.servers(p.Namespace).StartWithRoot(p.Name, cm.Data[render.MyCnfKey],
			string(secret.Data[v1alpha1.InitScriptKey]), string(secret.Data[v1alpha1.RootPasswordKey]))
	})
	if err != nil {
		return err
	}
	fmt.Printf("member %s: pod %s: mariadbd (pid %d) serves on %s:%d\n", d.member, key, s.Pid(), s.Host, s.Port)
	d.mu.Lock()
	d.volumes[key] = &volume{claim: claim.UID, server: s}
	d.mu.Unlock()
	return nil
}

// keepRunning starts the server of a Pod that came back at once, and a dead one after the back-off.
func (d *DatabasePods) keepRunning(v *volume) error {
	d.mu.Lock()
	switch {
	case v.server.Pid() != 0:
		v.diedAt = time.Time{}
		d.mu.Unlock()
		return nil
	case v.podGone:
	case v.diedAt.IsZero():
		v.diedAt = time.Now()
		d.mu.Unlock()
		return nil
	case time.Since(v.diedAt) < restartBackOff:
		d.mu.Unlock()
		return nil
	}
	v.podGone, v.diedAt = false, time.Time{}
	d.mu.Unlock()
	// Outside the lock: a restart takes seconds, and the member controller resolves Pods meanwhile.
	return d.rig.do(v.server.Restart)
}

// stopGone stops the servers of Pods that no longer exist, keeping their data for a Pod on the same claim.
func (d *DatabasePods) stopGone(seen map[types.NamespacedName]bool) {
	var stop []*mysqltest.Server
	d.mu.Lock()
	for key, v := range d.volumes {
		if !seen[key] && !v.podGone {
			v.podGone = true
			stop = append(stop, v.server)
		}
	}
	d.mu.Unlock()
	for _, s := range stop {
		s.Stop()
	}
}

// record writes ServerFile, replacing it whole so that a reader never sees half of it.
func (d *DatabasePods) record() {
	d.mu.Lock()
	recs := make([]ServerRecord, 0, len(d.volumes))
	for key, v := range d.volumes {
		recs = append(recs, ServerRecord{Member: d.member, Namespace: key.Namespace, Pod: key.Name,
			Host: v.server.Host, Port: v.server.Port, AdminPort: v.server.AdminPort, Pid: v.server.Pid()})
	}
	d.mu.Unlock()
	slices.SortFunc(recs, func(a, b ServerRecord) int {
		return strings.Compare(a.Namespace+"/"+a.Pod, b.Namespace+"/"+b.Pod)
	})
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return
	}
	tmp := d.file + ".tmp"
	if os.WriteFile(tmp, data, 0o600) == nil {
		_ = os.Rename(tmp, d.file)
	}
}

// Close stops every server and removes their files.
func (d *DatabasePods) Close() error { return d.rig.close() }

// ReadServers reads a member's ServerFile.
func ReadServers(file string) ([]ServerRecord, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var recs []ServerRecord
	return recs, json.Unmarshal(data, &recs)
}

// ServiceServer is the server a client of the Service in namespace ns reaches, as kube-proxy routes it: the
// first ready endpoint of the Service's EndpointSlices (for <name> and <name>-primary the one the member
// controller writes, naming the primary; for <name>-replicas those the member's kube-controller-manager keeps
// from its selector), looked up in the member's ServerFile. A name that is no Service is taken as a Pod's.
func ServiceServer(ctx context.Context, cs kubernetes.Interface, file, ns, name string) (ServerRecord, error) {
	pod := name
	eps, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return ServerRecord{}, err
	}
	if _, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		var ready []string
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					ready = append(ready, e.TargetRef.Name)
				}
			}
		}
		if len(ready) == 0 {
			return ServerRecord{}, fmt.Errorf("service %s/%s has no ready endpoint", ns, name)
		}
		slices.Sort(ready)
		pod = ready[0]
	}
	recs, err := ReadServers(file)
	if err != nil {
		return ServerRecord{}, err
	}
	for _, r := range recs {
		if r.Namespace == ns && r.Pod == pod {
			return r, nil
		}
	}
	return ServerRecord{}, errors.New("no server runs for pod " + ns + "/" + pod)
}
