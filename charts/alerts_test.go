package charts_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

const (
	alertsFile    = chartDir + "/files/alerts.yaml"
	dashboardFile = chartDir + "/files/dashboard.json"
	runbookFile   = "../docs/runbook.md"
	// defaultRunbook is where the default runbookBaseURL puts docs/runbook.md.
	defaultRunbook = "https://github.com/mysqlfleet/mysqlfleet/blob/main/docs/runbook.md"
)

// ruleFile is a Prometheus rule file, and the spec of a PrometheusRule.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (f ruleFile) alerts() []rule {
	var rs []rule
	for _, g := range f.Groups {
		rs = append(rs, g.Rules...)
	}
	return rs
}

func (f ruleFile) alertNames() []string {
	var names []string
	for _, r := range f.alerts() {
		names = append(names, r.Alert)
	}
	return names
}

// TestAlertRules runs `promtool test rules` with charts/testdata/alerts_test.yaml on the alerts as the chart
// renders them with metrics.prometheusRule enabled and otherwise default values, after `promtool check rules`
// with every lint fatal. It first checks that the tests cover every alert both ways: each is expected to fire
// somewhere and expected silent somewhere (promtool compares the whole set of firing alerts at each evaluation,
// so the other series of a test stay silent too).
func TestAlertRules(t *testing.T) {
	g := NewWithT(t)
	promtool := promtoolPath(t)
	rendered := renderedRules(t, nil)

	testFile, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var tests struct {
		Tests []struct {
			Name          string `json:"name"`
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	g.Expect(yaml.Unmarshal(testFile, &tests)).To(Succeed())
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			g.Expect(rendered.alertNames()).To(ContainElement(a.Alertname), "test %q", tc.Name)
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, name := range rendered.alertNames() {
		g.Expect(fires).To(HaveKey(name), "testdata/alerts_test.yaml never expects %s to fire", name)
		g.Expect(silent).To(HaveKey(name), "testdata/alerts_test.yaml never expects %s to stay silent", name)
	}

	dir := t.TempDir()
	data, err := yaml.Marshal(rendered)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), data, 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), testFile, 0o644)).To(Succeed())

	out, err := runIn(dir, promtool, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
	g.Expect(err).NotTo(HaveOccurred(), "promtool check rules:\n%s", out)
	out, err = runIn(dir, promtool, "test", "rules", "alerts_test.yaml")
	t.Logf("promtool test rules:\n%s", out)
	g.Expect(err).NotTo(HaveOccurred(), "promtool test rules failed")
}

// TestAlertRulesAreTheFile checks that the PrometheusRule is files/alerts.yaml and nothing else: the same groups,
// rules, expressions and durations, with the chart's additions only: runbook_url, additionalRuleLabels (never over
// an alert's own label), and the disabled alerts left out. It also checks what every alert needs to be of use
// on call, that every alert has its section in docs/runbook.md and every section an alert, and that the values
// schema offers exactly the file's alerts to disable.
func TestAlertRulesAreTheFile(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(alertsFile)
	g.Expect(err).NotTo(HaveOccurred())
	var file ruleFile
	g.Expect(yaml.UnmarshalStrict(data, &file)).To(Succeed())
	g.Expect(file.alerts()).NotTo(BeEmpty())

	sections := runbookSections(t)
	for _, r := range file.alerts() {
		g.Expect(r.Alert).To(MatchRegexp(`^MySQLFleet[A-Za-z0-9]+$`), "every rule is an alert named MySQLFleet...")
		g.Expect(r.Record).To(BeEmpty())
		g.Expect(r.Labels).To(HaveKeyWithValue("severity", BeElementOf("warning", "critical")), r.Alert)
		g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
		g.Expect(r.Annotations).To(HaveKey("description"), r.Alert)
		g.Expect(r.Annotations).NotTo(HaveKey("runbook_url"), "%s: the chart sets runbook_url", r.Alert)
		g.Expect(sections).To(ContainElement(strings.ToLower(r.Alert)), "docs/runbook.md has no section ## %s", r.Alert)
	}
	for _, s := range sections {
		if strings.HasPrefix(s, "mysqlfleet") {
			g.Expect(slices.ContainsFunc(file.alerts(), func(r rule) bool { return strings.ToLower(r.Alert) == s })).
				To(BeTrue(), "docs/runbook.md has a section #%s for no alert", s)
		}
	}

	// The schema's list of alerts to disable is the file's.
	schema, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var s struct {
		Properties struct {
			Metrics struct {
				Properties struct {
					PrometheusRule struct {
						Properties struct {
							Disabled struct {
								Items struct {
									Enum []string `json:"enum"`
								} `json:"items"`
							} `json:"disabled"`
						} `json:"properties"`
					} `json:"prometheusRule"`
				} `json:"properties"`
			} `json:"metrics"`
		} `json:"properties"`
	}
	g.Expect(yaml.Unmarshal(schema, &s)).To(Succeed())
	g.Expect(s.Properties.Metrics.Properties.PrometheusRule.Properties.Disabled.Items.Enum).To(ConsistOf(file.alertNames()))

	// Defaults: the file plus runbook_url.
	want := file
	want.Groups = slices.Clone(file.Groups)
	for i := range want.Groups {
		want.Groups[i].Rules = slices.Clone(want.Groups[i].Rules)
		for j := range want.Groups[i].Rules {
			r := &want.Groups[i].Rules[j]
			r.Annotations = withEntry(r.Annotations, "runbook_url", defaultRunbook+"#"+strings.ToLower(r.Alert))
		}
	}
	g.Expect(renderedRules(t, nil)).To(Equal(want))

	// Another runbook location, labels for every alert, an alert and a whole group disabled.
	var disabled []any
	for _, r := range file.Groups[1].Rules {
		disabled = append(disabled, r.Alert)
	}
	disabled = append(disabled, file.Groups[0].Rules[0].Alert)
	got := renderedRules(t, map[string]any{
		"runbookBaseURL":       "https://git.example.com/mirrors/mysqlfleet/-/blob/v0.1.0/",
		"additionalRuleLabels": map[string]any{"team": "platform", "severity": "page"},
		"disabled":             disabled,
	})
	want = ruleFile{}
	for i, grp := range file.Groups {
		if i == 1 {
			continue
		}
		var rules []rule
		for j, r := range grp.Rules {
			if i == 0 && j == 0 {
				continue
			}
			r.Labels = withEntry(map[string]string{"team": "platform"}, "severity", r.Labels["severity"])
			r.Annotations = withEntry(r.Annotations, "runbook_url",
				"https://git.example.com/mirrors/mysqlfleet/-/blob/v0.1.0/docs/runbook.md#"+strings.ToLower(r.Alert))
			rules = append(rules, r)
		}
		want.Groups = append(want.Groups, ruleGroup{Name: grp.Name, Rules: rules})
	}
	g.Expect(got).To(Equal(want))
}

// TestMonitoringValues checks the objects' metadata and what the templates refuse.
func TestMonitoringValues(t *testing.T) {
	g := NewWithT(t)
	r, err := render(t, mustYAML(`
metrics:
  prometheusRule: {enabled: true, labels: {release: prometheus}}
  grafanaDashboard: {enabled: true, namespace: monitoring, labels: {grafana_dashboard: "yes"}, annotations: {grafana_folder: Databases}}
`))
	g.Expect(err).NotTo(HaveOccurred())
	pr := find(r.objects, "PrometheusRule", fullName)
	g.Expect(pr).NotTo(BeNil())
	g.Expect(pr.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(pr.GetNamespace()).To(Equal(releaseNS))
	g.Expect(pr.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
	g.Expect(pr.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "mysqlfleet"))
	cm := get[corev1.ConfigMap](t, r, "ConfigMap", fullName+"-dashboard")
	g.Expect(cm.Namespace).To(Equal("monitoring"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "yes"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", releaseName))
	g.Expect(cm.Annotations).To(Equal(map[string]string{"grafana_folder": "Databases"}))
	dashboard, err := os.ReadFile(dashboardFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cm.Data).To(Equal(map[string]string{"mysqlfleet.json": strings.TrimRight(string(dashboard), "\n")}))
	g.Expect(r.notes).To(ContainSubstring("Alerts: the PrometheusRule " + fullName + " in " + releaseNS))
	g.Expect(r.notes).To(ContainSubstring(defaultRunbook))
	g.Expect(r.notes).To(ContainSubstring("Dashboard: the ConfigMap " + fullName + "-dashboard in monitoring"))

	// The defaults: the sidecar's default label, in the release namespace; both are off.
	r, err = render(t, mustYAML(`metrics: {grafanaDashboard: {enabled: true}}`))
	g.Expect(err).NotTo(HaveOccurred())
	cm = get[corev1.ConfigMap](t, r, "ConfigMap", fullName+"-dashboard")
	g.Expect(cm.Namespace).To(Equal(releaseNS))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(cm.Annotations).To(BeEmpty())
	r, err = render(t, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(r.objects)).NotTo(ContainElement(BeElementOf("PrometheusRule", "ConfigMap")))
	g.Expect(r.notes).NotTo(ContainSubstring("Alerts:"))
	g.Expect(r.notes).NotTo(ContainSubstring("Dashboard:"))

	for name, tc := range map[string]struct{ values, err string }{
		"alerts without metrics": {
			`metrics: {enabled: false, prometheusRule: {enabled: true}}`,
			"metrics.prometheusRule.enabled needs metrics.enabled",
		},
		"dashboard without metrics": {
			`metrics: {enabled: false, grafanaDashboard: {enabled: true}}`,
			"metrics.grafanaDashboard.enabled needs metrics.enabled",
		},
		"unknown alert disabled": {
			`metrics: {prometheusRule: {disabled: [MySQLFleetMemberUnreachabel]}}`,
			"at '/metrics/prometheusRule/disabled/0': value must be one of",
		},
		"runbook base not a URL": {
			`metrics: {prometheusRule: {runbookBaseURL: docs}}`,
			"at '/metrics/prometheusRule/runbookBaseURL': 'docs' does not match pattern",
		},
		"dashboard namespace not a name": {
			`metrics: {grafanaDashboard: {namespace: Monitoring}}`,
			"at '/metrics/grafanaDashboard/namespace': 'Monitoring' does not match pattern",
		},
		"unknown key": {
			`metrics: {prometheusRule: {runbookURL: "https://example.com"}}`,
			"at '/metrics/prometheusRule': additional properties 'runbookURL' not allowed",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, mustYAML(tc.values))
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

// TestMonitoringAgainstAPIServer sends the PrometheusRule, the ServiceMonitor and the dashboard's ConfigMap, every
// optional field set, to a real Kubernetes 1.36 API server that serves the Prometheus Operator's CRDs, as a
// server-side dry run with strict field validation: the server checks them against the CRDs' schemas (durations,
// required fields, unknown fields) and stores nothing. The CRDs are the Prometheus Operator's own, copied into
// testdata/crds from its Go module (see the header of each).
func TestMonitoringAgainstAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	fleet := testfleet.ForTest(t, testfleet.Options{
		Members:              []clusters.Definition{},
		HubCRDDirectoryPaths: []string{filepath.Join("testdata", "crds")},
	})
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(fleet.Hub.Config)
	cfg.WarningHandlerWithContext = warnings
	hub, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{releaseNS, "monitoring"} {
		g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}

	r, err := render(t, mustYAML(`
metrics:
  serviceMonitor: {enabled: true, interval: 15s, scrapeTimeout: 5s, labels: {release: prometheus}}
  prometheusRule:
    enabled: true
    labels: {release: prometheus}
    additionalRuleLabels: {team: platform}
    disabled: [MySQLFleetMemberTokenExpiringSoon]
    runbookBaseURL: https://git.example.com/mysqlfleet
  grafanaDashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: Databases}}
`))
	g.Expect(err).NotTo(HaveOccurred())
	sent := map[string]bool{}
	for _, o := range r.objects {
		if o.GetAPIVersion() != "monitoring.coreos.com/v1" && o.GetKind() != "ConfigMap" {
			continue // TestManifestsAgainstAPIServer checks the others
		}
		what := o.GetKind() + " " + o.GetName()
		warnings.take()
		g.Expect(hub.Create(ctx, o.DeepCopy(), client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))).
			To(Succeed(), what)
		g.Expect(warnings.take()).To(BeEmpty(), "warnings for %s", what)
		sent[o.GetKind()] = true
	}
	g.Expect(sent).To(Equal(map[string]bool{"PrometheusRule": true, "ServiceMonitor": true, "ConfigMap": true}))

	// The check can fail: the CRD refuses a duration Prometheus would not read, and strict validation an
	// unknown field.
	pr := find(r.objects, "PrometheusRule", fullName).DeepCopy()
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	rules := groups[0].(map[string]any)["rules"].([]any)
	rules[0].(map[string]any)["for"] = "5 minutes"
	g.Expect(unstructured.SetNestedSlice(pr.Object, groups, "spec", "groups")).To(Succeed())
	g.Expect(hub.Create(ctx, pr, client.DryRunAll)).To(MatchError(ContainSubstring("spec.groups[0].rules[0].for")))
	pr = find(r.objects, "PrometheusRule", fullName).DeepCopy()
	g.Expect(unstructured.SetNestedField(pr.Object, "1m", "spec", "evaluationInterval")).To(Succeed())
	g.Expect(hub.Create(ctx, pr, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))).
		To(MatchError(ContainSubstring(`unknown field "spec.evaluationInterval"`)))
}

// renderedRules renders the chart with metrics.prometheusRule enabled and the given values under it, and returns
// the PrometheusRule's spec.
func renderedRules(t *testing.T, prometheusRule map[string]any) ruleFile {
	t.Helper()
	values := map[string]any{"enabled": true}
	for k, v := range prometheusRule {
		values[k] = v
	}
	r, err := render(t, map[string]any{"metrics": map[string]any{"prometheusRule": values}})
	if err != nil {
		t.Fatal(err)
	}
	o := find(r.objects, "PrometheusRule", fullName)
	if o == nil {
		t.Fatalf("no PrometheusRule in the rendering; it has %v", kinds(r.objects))
	}
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	data, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("the PrometheusRule's spec: %v", err)
	}
	return f
}

// runbookSections returns the anchors GitHub makes of the level-2 headings of docs/runbook.md.
func runbookSections(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	notAnchor := regexp.MustCompile(`[^a-z0-9 _-]`)
	var anchors []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if h, ok := strings.CutPrefix(s.Text(), "## "); ok {
			anchors = append(anchors, strings.ReplaceAll(notAnchor.ReplaceAllString(strings.ToLower(h), ""), " ", "-"))
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

// promtoolPath is bin/promtool, which must be the version hack/versions.env pins.
func promtoolPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MYSQLFLEET_BIN")
	if dir == "" {
		dir = filepath.Join("..", "bin")
	}
	path, err := filepath.Abs(filepath.Join(dir, "promtool"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: run `make test-tools` (or hack/tools.sh promtool) to build it", path)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	if want := "promtool, version " + prometheusRelease(t) + " "; !strings.HasPrefix(string(out), want) {
		t.Fatalf("%s is not the pinned version (%q): %s\nrun `make test-tools`", path, want, out)
	}
	return path
}

// prometheusModuleVersion is PROMETHEUS_VERSION of hack/versions.env, the Go module version of Prometheus.
func prometheusModuleVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "PROMETHEUS_VERSION="); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("hack/versions.env pins no PROMETHEUS_VERSION")
	return ""
}

// prometheusRelease is the Prometheus release of the pinned module version: v0.313.5 is 3.13.5.
func prometheusRelease(t *testing.T) string {
	t.Helper()
	v := prometheusModuleVersion(t)
	m := regexp.MustCompile(`^v0\.3(\d\d)\.(\d+)$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("PROMETHEUS_VERSION %s is not a Prometheus 3.x module version (v0.3XX.Y)", v)
	}
	minor, _ := strconv.Atoi(m[1])
	return "3." + strconv.Itoa(minor) + "." + m[2]
}

func runIn(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// withEntry returns a copy of m with k set to v.
func withEntry(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for mk, mv := range m {
		if mk != k {
			out[mk] = mv
		}
	}
	return out
}
