package charts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// pendingMetrics are metrics that the alerts or the dashboard use and the manager does not expose yet, with what
// is to expose them. The query check skips them while they are missing and fails once one is exposed, so that it
// is checked from then on: remove it here when it lands.
var pendingMetrics = map[string]string{}

// targetLabels are the labels Prometheus adds to every series it scrapes from the manager through the chart's
// ServiceMonitor; queries may group and match on them though the manager does not expose them.
var targetLabels = []string{"job", "instance", "namespace", "service", "endpoint", "pod", "container"}

// identityLabels are labels whose values name a part of the manager (a controller, work queue or Lease) and so
// appear in every run: a query's value for one of them must be one the manager exposes.
var identityLabels = []string{"controller", "name"}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string           `json:"name"`
			Type       string           `json:"type"`
			Query      any              `json:"query"`
			Datasource *panelDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int              `json:"id"`
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Datasource *panelDatasource `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		Expr       string           `json:"expr"`
		RefID      string           `json:"refId"`
		Datasource *panelDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type panelDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) (*dashboard, []panel) {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return &d, all
}

// TestDashboard checks the dashboard's form: every panel reads the data source the user picks (a variable, not
// a data source of the machine it was made on), has a unique id and fits the 24 columns without overlapping
// another, and every panel that is not a row has queries.
func TestDashboard(t *testing.T) {
	g := NewWithT(t)
	d, panels := readDashboard(t)
	g.Expect(d.UID).To(Equal("mysqlfleet-overview"))
	g.Expect(d.Title).NotTo(BeEmpty())
	g.Expect(d.SchemaVersion).To(BeNumerically(">=", 36))
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
		if v.Type == "query" {
			g.Expect(v.Datasource).To(HaveValue(Equal(panelDatasource{Type: "prometheus", UID: "${datasource}"})), "variable %s", v.Name)
		}
	}
	g.Expect(vars).To(ContainElement("datasource"))

	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range panels {
		g.Expect(ids).NotTo(HaveKey(p.ID), "panel %q reuses the id of %q", p.Title, ids[p.ID])
		ids[p.ID] = p.Title
		g.Expect(p.GridPos.W).To(BeNumerically(">", 0), p.Title)
		g.Expect(p.GridPos.X+p.GridPos.W).To(BeNumerically("<=", 24), "panel %q is wider than the dashboard", p.Title)
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				g.Expect(taken).NotTo(HaveKey(cell{x, y}), "panels %q and %q overlap", p.Title, taken[cell{x, y}])
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		g.Expect(p.Datasource).To(HaveValue(Equal(panelDatasource{Type: "prometheus", UID: "${datasource}"})), p.Title)
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			g.Expect(tg.Expr).NotTo(BeEmpty(), p.Title)
			g.Expect(tg.Datasource).To(HaveValue(Equal(*p.Datasource)), p.Title)
		}
	}
}

// TestQueriesUseExposedMetrics checks every query of the dashboard (panels and variables) and of the alerts
// against the /metrics of a real manager: the manager binary runs with the chart's arguments against a hub and
// one member of the test fleet, engages the member and reconciles the MySQLCluster of the chart's notes into it,
// so that its metrics with labels (which exist only once something was counted) are there too. Each query is
// parsed by Prometheus' own parser (testdata/promql, pinned to promtool's version); every metric it selects must
// be exposed, and every label it matches, groups or joins on must be one of that metric's labels or one that
// Prometheus adds to the scraped series. Values of the labels that name the manager's controllers and Lease must
// be exposed values.
func TestQueriesUseExposedMetrics(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	queries := allQueries(t)
	parsed := parseQueries(t, queries)

	_, defs, err := clusters.Fleet()
	g.Expect(err).NotTo(HaveOccurred())
	i := slices.IndexFunc(defs, func(d clusters.Definition) bool { return d.Name == memberName })
	g.Expect(i).To(BeNumerically(">=", 0), "clusters/ defines no member %s", memberName)
	fleet := testfleet.ForTest(t, testfleet.Options{
		Members:              []clusters.Definition{defs[i]},
		HubCRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
	})
	hub, err := client.New(fleet.Hub.Config, client.Options{Scheme: mysqlcluster.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}})).To(Succeed())
	registerMember(g, hub, fleet.Member(memberName))
	// As `mysqlfleet join` records a time-bound token, so that the token expiry is exported too.
	var reg corev1.Secret
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: memberName}, &reg)).To(Succeed())
	reg.Annotations = map[string]string{v1alpha1.TokenExpirationAnnotation: time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}
	g.Expect(hub.Update(ctx, &reg)).To(Succeed())
	r, err := render(t, nil)
	g.Expect(err).NotTo(HaveOccurred())
	c := notesExample(g, r.notes, memberName)
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}})).To(Succeed())
	g.Expect(hub.Create(ctx, c)).To(Succeed())

	// The Deployment's arguments; the flag package lets a later flag win.
	dep := get[appsv1.Deployment](t, r, "Deployment", fullName)
	addr := freeAddress(t)
	startManager(t, slices.Concat(dep.Spec.Template.Spec.Containers[0].Args, []string{
		"--kubeconfig=" + fleet.Hub.KubeconfigPath,
		"--metrics-bind-address=" + addr,
		"--health-probe-bind-address=0",
	}))

	var families map[string]*dto.MetricFamily
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		families = scrape(g, "http://"+addr+"/metrics")
		g.Expect(families).To(HaveKey("mysqlfleet_member_applies_total"))
		g.Expect(sample(families, "mysqlfleet_member_reachable", map[string]string{"member": memberName})).To(HaveValue(BeEquivalentTo(1)))
		g.Expect(sample(families, "leader_election_master_status", map[string]string{"name": "mysqlfleet-manager"})).To(HaveValue(BeEquivalentTo(1)))
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "the manager engaged the member and reconciled the MySQLCluster")
	// The member controller's report on the StatefulSet, as it writes it in the member: the hub reads it and
	// exports the replication series.
	memberClient, err := client.New(fleet.Member(memberName).Config, client.Options{Scheme: mysqlcluster.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	var sts appsv1.StatefulSet
	g.Expect(memberClient.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts)).To(Succeed())
	g.Expect(memberClient.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: v1alpha1.ReplicationReportName(sts.Name),
			Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue,
				v1alpha1.ReplicationComponentLabel: v1alpha1.ReplicationComponent,
				v1alpha1.ClusterNameLabel:          c.Name, v1alpha1.ClusterNamespaceLabel: c.Namespace},
			Annotations: map[string]string{v1alpha1.StatefulSetUIDAnnotation: string(sts.UID)}},
		Data: map[string]string{v1alpha1.ReplicationReportKey: `{"primary":"` + sts.Name + `-0","instances":[{"pod":"` +
			sts.Name + `-0","role":"primary"}],"decision":{"kind":"Steady"},` +
			`"archive":{"state":"Archiving","since":"2026-12-08T02:00:00Z","source":"` + sts.Name + `-0"}}`},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		families = scrape(g, "http://"+addr+"/metrics")
		g.Expect(families).To(HaveKey("mysqlfleet_member_writable_primary"))
		g.Expect(families).To(HaveKey("mysqlfleet_member_archive_behind"))
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "the manager read the member controller's report")
	var exposed []string
	for name := range families {
		if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			exposed = append(exposed, name)
		}
	}
	sort.Strings(exposed)
	t.Logf("the manager exposes %d metrics; besides go_* and process_*: %s", len(families), strings.Join(exposed, " "))

	for name := range pendingMetrics {
		g.Expect(families).NotTo(HaveKey(name), "the manager exposes %s now: remove it from pendingMetrics", name)
	}
	used := map[string]bool{}
	for _, q := range parsed {
		g.Expect(q.Error).To(BeEmpty(), "%s: %s", queries[q.Expr], q.Expr)
		g.Expect(q.Selectors).NotTo(BeEmpty(), "%s selects no metric: %s", queries[q.Expr], q.Expr)
		for _, s := range q.Selectors {
			used[s.Metric] = true
			if _, pending := pendingMetrics[s.Metric]; pending {
				continue
			}
			labels, values, ok := familyLabels(families, s.Metric)
			g.Expect(ok).To(BeTrue(), "%s uses %s, which the manager does not expose: %s", queries[q.Expr], s.Metric, q.Expr)
			for _, m := range s.Matchers {
				g.Expect(labels).To(ContainElement(m.Label), "%s matches %s on label %s, which it does not have", queries[q.Expr], s.Metric, m.Label)
				if slices.Contains(identityLabels, m.Label) && (m.Op == "=" || m.Op == "=~") {
					for _, v := range strings.Split(m.Value, "|") {
						g.Expect(values[m.Label]).To(ContainElement(v), "%s matches %s{%s%s%q}: the manager exposes no such value",
							queries[q.Expr], s.Metric, m.Label, m.Op, m.Value)
					}
				}
			}
		}
		for _, grp := range q.Groupings {
			if grp.Without {
				continue // labels taken away need not exist
			}
			have := slices.Clone(targetLabels)
			for _, name := range grp.Metrics {
				if _, pending := pendingMetrics[name]; pending {
					have = nil // unknown until it lands
					break
				}
				labels, _, _ := familyLabels(families, name)
				have = append(have, labels...)
			}
			if have == nil {
				continue
			}
			for _, l := range grp.Labels {
				g.Expect(have).To(ContainElement(l), "%s groups or joins on %s, which none of %v has: %s", queries[q.Expr], l, grp.Metrics, q.Expr)
			}
		}
	}
	for name := range pendingMetrics {
		g.Expect(used).To(HaveKey(name), "pendingMetrics lists %s, which no query uses", name)
	}
}

// allQueries returns every PromQL query of the dashboard and the alerts, with Grafana's interval variables
// replaced (the parser reads durations, not variables), mapped to where each comes from.
func allQueries(t *testing.T) map[string]string {
	t.Helper()
	queries := map[string]string{}
	interval := regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)
	add := func(expr, where string) {
		queries[interval.ReplaceAllString(expr, "5m")] = where
	}
	d, panels := readDashboard(t)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: %q is not label_values(<selector>, <label>)", v.Name, q)
		}
		add(m[1], "variable "+v.Name)
	}
	for _, p := range panels {
		for _, tg := range p.Targets {
			add(tg.Expr, fmt.Sprintf("panel %q query %s", p.Title, tg.RefID))
		}
	}
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.alerts() {
		add(r.Expr, "alert "+r.Alert)
	}
	return queries
}

// parsedQuery is what testdata/promql prints for one expression.
type parsedQuery struct {
	Expr      string `json:"expr"`
	Error     string `json:"error"`
	Selectors []struct {
		Metric   string `json:"metric"`
		Matchers []struct {
			Label string `json:"label"`
			Op    string `json:"op"`
			Value string `json:"value"`
		} `json:"matchers"`
	} `json:"selectors"`
	Groupings []struct {
		Labels  []string `json:"labels"`
		Without bool     `json:"without"`
		Metrics []string `json:"metrics"`
	} `json:"groupings"`
}

// parseQueries builds testdata/promql, a module of its own that requires Prometheus at PROMETHEUS_VERSION of
// hack/versions.env (promtool's), and has it parse the queries.
func parseQueries(t *testing.T, queries map[string]string) []parsedQuery {
	t.Helper()
	dir := filepath.Join("testdata", "promql")
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	list := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/prometheus/prometheus")
	list.Dir, list.Env = dir, env
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), prometheusModuleVersion(t); got != want {
		t.Fatalf("%s parses with Prometheus %s, promtool is %s (hack/versions.env): run `go get github.com/prometheus/prometheus@%s` there",
			dir, got, want, want)
	}
	bin := filepath.Join(t.TempDir(), "promql")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir, build.Env = dir, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out)
	}
	exprs := make([]string, 0, len(queries))
	for q := range queries {
		exprs = append(exprs, q)
	}
	sort.Strings(exprs)
	in, err := json.Marshal(exprs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	var parsed []parsedQuery
	if err := json.Unmarshal(out, &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed) != len(exprs) {
		t.Fatalf("%s answered %d of %d expressions", bin, len(parsed), len(exprs))
	}
	return parsed
}

// scrape reads a Prometheus text exposition.
func scrape(g Gomega, url string) map[string]*dto.MetricFamily {
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// familyLabels returns the label names of a metric as a query names it, and the values of each label: a
// histogram's series are its name with _bucket (which adds le), _sum and _count, a summary's with _sum and _count.
func familyLabels(families map[string]*dto.MetricFamily, metric string) ([]string, map[string][]string, bool) {
	f, ok := families[metric]
	var extra []string
	if !ok {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, found := strings.CutSuffix(metric, suffix)
			if !found {
				continue
			}
			if bf, exists := families[base]; exists {
				switch bf.GetType() {
				case dto.MetricType_HISTOGRAM:
					f, ok = bf, true
					if suffix == "_bucket" {
						extra = []string{"le"}
					}
				case dto.MetricType_SUMMARY:
					f, ok = bf, suffix != "_bucket"
				}
			}
		}
	}
	if !ok {
		return nil, nil, false
	}
	labels := extra
	values := map[string][]string{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(labels, l.GetName()) {
				labels = append(labels, l.GetName())
			}
			if !slices.Contains(values[l.GetName()], l.GetValue()) {
				values[l.GetName()] = append(values[l.GetName()], l.GetValue())
			}
		}
	}
	return labels, values, true
}

// sample returns the value of the gauge's series with the given labels, nil without one.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) *float64 {
	f, ok := families[name]
	if !ok {
		return nil
	}
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match && m.GetGauge() != nil {
			v := m.GetGauge().GetValue()
			return &v
		}
	}
	return nil
}

// freeAddress returns a loopback address with a port nobody listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
