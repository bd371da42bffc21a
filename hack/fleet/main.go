// Command fleet runs mysqlfleet on a local fleet from clusters/: a hub and its members, each a real control plane
// with fake nodes (kwok) and a storage provisioner, so workloads run, and a real MariaDB server behind every
// database Pod, so databases replicate. It is what `make demo` and `make demo-down` call.
//
//	fleet up     start the fleet and mysqlfleet in the background (a supervisor process): the chart installed on
//	             the hub with helm, two manager replicas with the chart's ServiceAccount and leader election;
//	             then, as a user would, join every member with `mysqlfleet join`, apply the demo's MySQLCluster
//	             (hack/fleet/orders.yaml) placed on aws, azure and gcp, wait until it is Ready, print the fleet
//	             view and a tour of commands to try. A demo left half-way (interrupted, or its supervisor killed)
//	             is cleaned away first.
//	fleet down   stop the supervisor, which stops every process, and remove the fleet's directory
//	fleet status print the fleet's clusters
//	fleet sql MEMBER NAMESPACE/SERVICE "SQL"
//	             run SQL on the server a Service of a member leads to, as the database's application account
//	fleet kill MEMBER NAMESPACE/SERVICE
//	             kill (SIGKILL) the server a Service of a member leads to, as a crash would
//
// The supervisor owns the fleet's processes (they die with it): each member's storage provisioner, the servers
// behind the database Pods (localfleet.DatabasePods: kwok's nodes run no container, so the supervisor plays the
// kubelet's part with local mariadbd processes on loopback ports, booted with what the hub rendered) and each
// member's controller, in-process, as the member controller's ServiceAccount (join is told
// --skip-member-controller, since its Deployment could not run on kwok). Kubeconfigs land in
// .fleet/clusters/<cluster>/kubeconfig; manager logs in .fleet/manager-*.log; the servers' files in
// .fleet/db/<member>/, where servers.json says which Pod each serves and on which port.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	_ "github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/localfleet"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

type clusterInfo struct {
	Name           string   `json:"name"`
	Role           string   `json:"role"`
	Cloud          string   `json:"cloud,omitempty"`
	Region         string   `json:"region,omitempty"`
	Server         string   `json:"server"`
	Kubeconfig     string   `json:"kubeconfig"`
	StorageClasses []string `json:"storageClasses,omitempty"`
}

// defaultDir is where `make demo` keeps the fleet, relative to the module root.
const defaultDir = ".fleet"

func main() {
	dir := flag.String("dir", defaultDir, "directory of the fleet's state, kubeconfigs and logs")
	flag.Parse()
	abs, err := filepath.Abs(*dir)
	if err == nil {
		switch flag.Arg(0) {
		case "up":
			err = up(abs)
		case "serve":
			err = serve(abs)
		case "down":
			err = down(abs)
		case "status":
			err = status(abs)
		case "sql":
			err = runSQL(abs, flag.Args()[1:])
		case "kill":
			err = kill(abs, flag.Args()[1:])
		default:
			err = errors.New(`usage: fleet [-dir DIR] up|down|status|sql MEMBER NS/SERVICE "SQL"|kill MEMBER NS/SERVICE`)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

func pidFile(dir string) string   { return filepath.Join(dir, "supervisor.pid") }
func stateFile(dir string) string { return filepath.Join(dir, "fleet.json") }

// doneFile marks a fleet whose demo ran to its end; a fleet without it was left half-way.
func doneFile(dir string) string { return filepath.Join(dir, "demo.done") }

// dbDir is where the servers behind a member's database Pods keep their files.
func dbDir(dir, member string) string { return filepath.Join(dir, "db", member) }

// up starts `fleet serve` in its own session, waits for it to write the fleet's state, and runs the demo. A
// fleet whose demo completed is shown again; anything else found in dir (a demo interrupted half-way, a
// supervisor that was killed) is brought down first, so that every run starts clean.
func up(dir string) error {
	if _, ok := running(dir); ok && exists(doneFile(dir)) {
		fmt.Println("The fleet is already running.")
		if err := status(dir); err != nil {
			return err
		}
		return view(dir)
	}
	if exists(dir) {
		fmt.Println("Cleaning up a demo left half-way in", dir)
		if err := down(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "supervisor.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(self, "-dir", dir, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	fmt.Printf("Starting the fleet (supervisor pid %d, log %s)...\n", cmd.Process.Pid, rel(logf.Name()))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Starting takes a minute or two; a cold build of the manager on a busy machine takes longer.
	deadline := time.After(15 * time.Minute)
	for !exists(stateFile(dir)) {
		select {
		case err := <-exited:
			return fmt.Errorf("the supervisor exited (%v); see %s", err, logf.Name())
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the fleet did not start within 15 minutes; see %s", logf.Name())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := status(dir); err != nil {
		return err
	}
	if err := demo(dir); err != nil {
		return err
	}
	if err := os.WriteFile(doneFile(dir), nil, 0o600); err != nil {
		return err
	}
	return view(dir)
}

// serve starts the fleet in the foreground and holds it until SIGTERM or SIGINT.
func serve(dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The member controllers log here, into supervisor.log.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stdout)))
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pidFile(dir)) }()
	f, err := testfleet.Start(ctx, testfleet.Options{Dir: filepath.Join(dir, "clusters"), Workloads: true})
	if err != nil {
		return err
	}
	defer func() { _ = f.Stop() }()
	replicas, err := startMysqlfleet(ctx, dir, f.Hub)
	defer func() {
		for _, p := range replicas {
			p.Stop(10 * time.Second)
		}
	}()
	if err != nil {
		return err
	}
	// Stopped before the managers and the clusters: the member controllers first, then the servers.
	stopMembers, err := startMembers(ctx, dir, f.Members)
	defer stopMembers()
	if err != nil {
		return err
	}
	var infos []clusterInfo
	for _, c := range append([]*testfleet.Cluster{f.Hub}, f.Members...) {
		infos = append(infos, clusterInfo{
			Name: c.Name, Role: string(c.Role), Cloud: c.Cloud, Region: c.Region, Server: c.Config.Host,
			Kubeconfig: c.KubeconfigPath, StorageClasses: c.StorageClassNames(),
		})
	}
	data, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(stateFile(dir), data, 0o600); err != nil {
		return err
	}
	fmt.Println("fleet ready")
	<-ctx.Done()
	fmt.Println("stopping the fleet")
	return nil
}

// startMembers stands a server behind every database Pod of each member and runs each member's controller. The
// returned function stops the controllers, then the servers, and waits for both.
func startMembers(ctx context.Context, dir string, members []*testfleet.Cluster) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var pods []*localfleet.DatabasePods
	var controllers []<-chan error
	stop := func() {
		cancel()
		for _, done := range controllers {
			if err := <-done; err != nil {
				fmt.Println("a member controller stopped with an error:", err)
			}
		}
		wg.Wait()
		for _, p := range pods {
			_ = p.Close()
		}
	}
	for _, m := range members {
		p, err := localfleet.NewDatabasePods(m.Name, m.Clientset(), dbDir(dir, m.Name))
		if err != nil {
			return stop, err
		}
		pods = append(pods, p)
		wg.Go(func() { p.Run(ctx) })
		// The backup, restore and seed Jobs the fleet runs reach the Pods' servers too.
		m.SetPodAddresses(p.MySQLAddr)
		done, err := localfleet.StartMemberController(ctx, m.Config, p.Resolve)
		if err != nil {
			return stop, fmt.Errorf("member controller of %s: %w", m.Name, err)
		}
		controllers = append(controllers, done)
	}
	return stop, nil
}

// down stops the supervisor, waits for it to stop the fleet, and removes the fleet's directory.
func down(dir string) error {
	if pid, ok := running(dir); ok {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		exited := func(context.Context) (bool, error) { return syscall.Kill(pid, 0) != nil, nil }
		if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, exited) != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Processes die with the supervisor; sweep anything that names the directory (control planes, managers and
	// mariadbd, whose data directories are there), in case it was killed.
	_ = exec.Command("pkill", "-KILL", "-f", "--", dir+"/").Run()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Println("The fleet is down and", dir, "is removed.")
	return nil
}

func running(dir string) (int, bool) {
	data, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return pid, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readState(dir string) ([]clusterInfo, error) {
	data, err := os.ReadFile(stateFile(dir))
	if err != nil {
		return nil, fmt.Errorf("no fleet in %s: run `make demo`", dir)
	}
	var infos []clusterInfo
	return infos, json.Unmarshal(data, &infos)
}

func status(dir string) error {
	infos, err := readState(dir)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "CLUSTER\tROLE\tCLOUD\tREGION\tSERVER\tSTORAGE CLASSES\tKUBECONFIG")
	for _, c := range infos {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Role, dash(c.Cloud), dash(c.Region), c.Server,
			dash(strings.Join(c.StorageClasses, ",")), rel(c.Kubeconfig))
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const (
	managerNamespace = "mysqlfleet-system"
	release          = "mysqlfleet"
)

// startMysqlfleet installs the chart on the hub and starts two manager replicas as the chart's ServiceAccount.
// The local hub runs no Pods, so the replicas of the chart's Deployment run here as processes.
func startMysqlfleet(ctx context.Context, dir string, hub *testfleet.Cluster) ([]*localfleet.Process, error) {
	fmt.Println("installing the chart on the hub")
	if err := localfleet.InstallChart(hub.KubeconfigPath, filepath.Join("charts", "mysqlfleet"), managerNamespace, release, nil); err != nil {
		return nil, err
	}
	kc, err := localfleet.ServiceAccountKubeconfig(ctx, hub.Config, managerNamespace, release, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "manager.kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return nil, err
	}
	bin, err := localfleet.Build(".", "./cmd/manager", dir)
	if err != nil {
		return nil, err
	}
	var replicas []*localfleet.Process
	for _, name := range []string{"manager-a", "manager-b"} {
		p, err := localfleet.StartManager(bin, name, dir, "--kubeconfig="+kcPath, "--namespace="+managerNamespace,
			"--leader-elect=true", "--metrics-bind-address=0", "--health-probe-bind-address=0")
		if err != nil {
			return replicas, err
		}
		replicas = append(replicas, p)
	}
	return replicas, nil
}

// commands are the programs the demo runs and prints, as paths the user can paste from the module root.
type commands struct {
	dir                        string
	hub                        string
	fleet, mysqlfleet, kubectl string
	members                    []string
}

func newCommands(dir string) (*commands, error) {
	infos, err := readState(dir)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bin := os.Getenv("MYSQLFLEET_BIN")
	if bin == "" {
		bin = "bin"
	}
	c := &commands{dir: dir, fleet: rel(self), mysqlfleet: rel(filepath.Join(filepath.Dir(self), "mysqlfleet")),
		kubectl: rel(filepath.Join(bin, "kubectl"))}
	for _, i := range infos {
		if i.Role == "hub" {
			c.hub = rel(i.Kubeconfig)
		} else {
			c.members = append(c.members, i.Name)
		}
	}
	if wd, err := os.Getwd(); err != nil || dir != filepath.Join(wd, defaultDir) {
		c.fleet += " -dir " + rel(dir)
	}
	return c, nil
}

func (c *commands) onHub(program string) string { return program + " --kubeconfig " + c.hub }

// demo does what a user does once mysqlfleet runs: join the members, create a MySQLCluster across the three
// clouds, wait until it is Ready.
func demo(dir string) error {
	infos, err := readState(dir)
	if err != nil {
		return err
	}
	c, err := newCommands(dir)
	if err != nil {
		return err
	}
	for _, m := range infos {
		if m.Role != "member" {
			continue
		}
		// The local members run no token controller, so join falls back to a TokenRequest token at once. kwok's
		// nodes run no container, so the member controller's Deployment is left out: the supervisor runs each
		// member's controller instead, as the same ServiceAccount.
		if err := show(c.onHub(c.mysqlfleet) + " join " + m.Name + " --member-kubeconfig " + rel(m.Kubeconfig) +
			" --cloud " + m.Cloud + " --region " + m.Region + " --token-wait=1s --skip-member-controller"); err != nil {
			return err
		}
	}
	kubectl := c.onHub(c.kubectl)
	for _, cmd := range []string{
		kubectl + " apply --server-side -f " + filepath.Join("hack", "fleet", "shop-namespace.yaml"),
		kubectl + " apply --server-side -f " + filepath.Join("hack", "fleet", "orders.yaml"),
		// Ready: in every member the Pods are ready, one server is the writable primary and every replica
		// replicates in sync, as the member controller reports it.
		kubectl + " wait --for=condition=Ready mysqlclusters.mysqlfleet.io/orders -n shop --timeout=10m",
	} {
		if err := show(cmd); err != nil {
			return err
		}
	}
	return nil
}

// view prints the fleet view and the tour.
func view(dir string) error {
	c, err := newCommands(dir)
	if err != nil {
		return err
	}
	for _, cmd := range []string{
		c.onHub(c.kubectl) + " get mysqlclusters.mysqlfleet.io -A -o wide",
		c.onHub(c.mysqlfleet) + " members",
		c.onHub(c.mysqlfleet) + " get -A -o wide",
	} {
		if err := show(cmd); err != nil {
			return err
		}
	}
	fmt.Print(tour(c))
	return nil
}

// tour is what to try next, every command as it works on this fleet (TestDemo runs them as printed).
func tour(c *commands) string {
	m, other := c.members[0], c.members[min(1, len(c.members)-1)]
	get := c.onHub(c.mysqlfleet) + " get orders -n shop -o wide"
	var b strings.Builder
	say := func(s string) { fmt.Fprintf(&b, "\n# %s\n", s) }
	cmd := func(s string) { fmt.Fprintf(&b, "  $ %s\n", s) }
	fmt.Fprintf(&b, "\nThe servers are real mariadbd processes on loopback, one behind each Pod of kwok's fake nodes. Try:\n")
	say("Write through orders-primary and read through orders-replicas in " + m + ", as the application's\n" +
		"# account: `fleet sql` follows the Service to the server behind its ready endpoint, as kube-proxy would.")
	cmd(c.fleet + " sql " + m + ` shop/orders-primary "CREATE TABLE IF NOT EXISTS items (id INT PRIMARY KEY, name TEXT); REPLACE INTO items VALUES (1, 'tea')"`)
	cmd(c.fleet + " sql " + m + ` shop/orders-replicas "SELECT @@report_host AS server, id, name FROM items"`)
	say("Kill the primary's server: the member controller fails over to a replica in seconds, and the hub shows\n" +
		"# it (LAST PRIMARY CHANGE: Failover); the killed server comes back 10s later and rejoins as a replica.")
	cmd(c.fleet + " kill " + m + " shop/orders-primary")
	cmd(get)
	say("Ask the hub for a switchover: orders-1 becomes the primary in " + other + ".")
	cmd(c.onHub(c.kubectl) + ` patch mysqlclusters.mysqlfleet.io orders -n shop --type merge -p '{"spec":{"primaries":{"` +
		other + `":1}}}'`)
	cmd(get)
	say("Take a backup in " + m + " now (a replica's dump, into the member's backup volume); list it once done.")
	cmd(c.onHub(c.mysqlfleet) + " backup orders -n shop --member " + m)
	cmd(c.onHub(c.mysqlfleet) + " backups orders -n shop")
	say("Restore the newest backup into a new MySQLCluster, orders-copy, and read the row there.")
	cmd(c.onHub(c.kubectl) + " apply --server-side -f " + filepath.Join("hack", "fleet", "orders-copy.yaml"))
	cmd(c.onHub(c.mysqlfleet) + " get orders-copy -n shop")
	cmd(c.fleet + " sql " + m + ` shop/orders-copy-primary "SELECT id, name FROM items"`)
	say("Stop everything (every server and control plane) and remove " + rel(c.dir) + ".")
	cmd("make demo-down")
	return b.String()
}

// show runs a command line as the user would type it, echoing it first.
func show(line string) error {
	fmt.Printf("\n$ %s\n", line)
	cmd := exec.Command("sh", "-c", line)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// rel is path relative to the working directory when it lies below it, so that printed commands are short and
// can be pasted there; otherwise path itself.
func rel(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	r, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return path
	}
	return r
}

// memberTarget reads MEMBER NAMESPACE/NAME: the member's admin client, the file of its servers, the namespace
// and the Service (or Pod) name.
func memberTarget(dir string, args []string) (kubernetes.Interface, string, string, string, error) {
	if len(args) < 2 {
		return nil, "", "", "", errors.New("name the member and NAMESPACE/SERVICE")
	}
	ns, name, ok := strings.Cut(args[1], "/")
	if !ok {
		return nil, "", "", "", fmt.Errorf("%q is not NAMESPACE/SERVICE", args[1])
	}
	infos, err := readState(dir)
	if err != nil {
		return nil, "", "", "", err
	}
	for _, i := range infos {
		if i.Name == args[0] && i.Role == "member" {
			cfg, err := clientcmd.BuildConfigFromFlags("", i.Kubeconfig)
			if err != nil {
				return nil, "", "", "", err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			return cs, localfleet.ServerFile(dbDir(dir, i.Name)), ns, name, err
		}
	}
	return nil, "", "", "", fmt.Errorf("no member %q in the fleet", args[0])
}

// runSQL runs SQL on the server behind a Service (or Pod) of a member and prints what it returns. The servers
// listen on loopback ports that no Service IP leads to, and a port printed once would go stale as soon as the
// primary moves: resolving the Service at each call, as kube-proxy does for every connection, keeps
// <name>-primary meaning the current primary through failovers and switchovers. It logs in as the
// MySQLCluster's application account (spec.user, its password from the credentials Secret in the member) on
// spec.database, as an application of the member would; the hub says which.
func runSQL(dir string, args []string) error {
	if len(args) != 3 {
		return errors.New(`usage: fleet sql MEMBER NAMESPACE/SERVICE "SQL"`)
	}
	ctx := context.Background()
	cs, file, ns, name, err := memberTarget(dir, args)
	if err != nil {
		return err
	}
	srv, err := localfleet.ServiceServer(ctx, cs, file, ns, name)
	if err != nil {
		return err
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, srv.Pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	user, database, password, err := account(ctx, dir, cs, pod)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "(%s in %s: pod %s, mariadbd on %s:%d, as %s)\n", name, args[0], srv.Pod, srv.Host, srv.Port, user)
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%d)/%s?multiStatements=true&timeout=5s", user, password, srv.Host, srv.Port, database)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	rows, err := db.QueryContext(ctx, args[2])
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for {
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		if len(cols) > 0 {
			_, _ = fmt.Fprintln(w, strings.ToUpper(strings.Join(cols, "\t")))
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = "NULL"
				if v.Valid {
					cells[i] = v.String
				}
			}
			_, _ = fmt.Fprintln(w, strings.Join(cells, "\t"))
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}

// account is the application account of the Pod's MySQLCluster: the hub's spec.user and spec.database, and the
// password from the credentials Secret in the member; root when the MySQLCluster names no user.
func account(ctx context.Context, dir string, cs kubernetes.Interface, pod *corev1.Pod) (string, string, string, error) {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: pod.Labels[v1alpha1.InstanceLabel]}}
	secret, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, c.CredentialsSecretName(), metav1.GetOptions{})
	if err != nil {
		return "", "", "", err
	}
	infos, err := readState(dir)
	if err != nil {
		return "", "", "", err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return "", "", "", err
	}
	for _, i := range infos {
		if i.Role != "hub" {
			continue
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", i.Kubeconfig)
		if err != nil {
			return "", "", "", err
		}
		hub, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return "", "", "", err
		}
		key := client.ObjectKey{Namespace: secret.Labels[v1alpha1.ClusterNamespaceLabel], Name: c.Name}
		if err := hub.Get(ctx, key, c); err != nil {
			return "", "", "", err
		}
	}
	if c.Spec.User == "" {
		return "root", c.Spec.Database, string(secret.Data[v1alpha1.RootPasswordKey]), nil
	}
	return c.Spec.User, c.Spec.Database, string(secret.Data[v1alpha1.PasswordKey]), nil
}

// kill ends the server behind a Service (or Pod) of a member with SIGKILL, as a crash or the OOM killer would.
func kill(dir string, args []string) error {
	if len(args) != 2 {
		return errors.New("usage: fleet kill MEMBER NAMESPACE/SERVICE")
	}
	cs, file, ns, name, err := memberTarget(dir, args)
	if err != nil {
		return err
	}
	srv, err := localfleet.ServiceServer(context.Background(), cs, file, ns, name)
	if err != nil {
		return err
	}
	if srv.Pid == 0 {
		return fmt.Errorf("the server of pod %s is down already", srv.Pod)
	}
	if err := syscall.Kill(srv.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	fmt.Printf("Killed mariadbd (pid %d) behind %s in %s: pod %s\n", srv.Pid, name, args[0], srv.Pod)
	return nil
}
