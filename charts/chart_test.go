// Package charts_test checks the Helm chart in charts/mysqlfleet: helm's linter, renderings for several value
// sets, the values schema, the rendered objects against a real Kubernetes 1.36 API server (server-side dry run),
// and a real helm install, upgrade and uninstall on a hub of the test fleet, where the manager runs as the chart's
// ServiceAccount with the chart's arguments and reconciles a MySQLCluster into a member.
package charts_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "mysqlfleet"
	releaseName = "mysqlfleet"
	releaseNS   = "mysqlfleet-system"
	// fullName is the objects' name for releaseName: the release name already contains the chart's.
	fullName = "mysqlfleet"
)

// kubeVersion is what the renderings assume: helm's default without a cluster is older than the chart's
// kubeVersion allows.
var kubeVersion = chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}

// valueSets are the values that lint, rendering and the API server check: the defaults, every optional part
// turned on and every knob turned, and every optional part turned off.
func valueSets() map[string]map[string]any {
	return map[string]map[string]any{
		"defaults": {},
		"everything": mustYAML(`
replicas: 3
image:
  repository: registry.example.com/mysqlfleet/manager
  tag: v9.9.9
  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  pullPolicy: Always
imagePullSecrets: [{name: regcred}]
nameOverride: fleet
fullnameOverride: hub-manager
crds: {enabled: true, keep: false}
serviceAccount: {create: true, name: hub-manager-sa, annotations: {example.com/role: manager}}
memberQPS: 12.5
memberBurst: 25
allowInsecureMemberTLS: true
memberSyncTimeout: 30s
memberHealthInterval: 5s
memberTimeout: 20s
memberMaxInFlight: 16
workers: 48
deletionTimeout: 10m
leaderElection: {leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 5s}
extraArgs: [--zap-log-level=4, --zap-encoder=console]
resources:
  requests: {cpu: 200m, memory: 256Mi}
  limits: {cpu: 2, memory: 1Gi}
podAnnotations: {example.com/scrape: "true"}
podLabels: {team: platform}
priorityClassName: system-cluster-critical
nodeSelector: {kubernetes.io/os: linux, node-role.example.com/infra: "true"}
tolerations:
  - {key: node-role.example.com/infra, operator: Exists, effect: NoSchedule}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}]
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: topology.kubernetes.io/zone
          labelSelector: {matchLabels: {app.kubernetes.io/component: manager}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {team: platform}}
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
podDisruptionBudget: {enabled: true, minAvailable: 50%}
metrics:
  enabled: true
  serviceMonitor: {enabled: true, interval: 15s, scrapeTimeout: 5s, labels: {release: prometheus}}
`),
		"minimal": mustYAML(`
replicas: 1
crds: {enabled: false}
serviceAccount: {create: false, name: existing-sa}
resources: null
nodeSelector: null
topologySpreadConstraints: []
podDisruptionBudget: {enabled: false}
metrics: {enabled: false}
`),
	}
}

// TestLint runs helm's linter (what `helm lint` runs) for every value set: errors and warnings fail.
func TestLint(t *testing.T) {
	for name, vals := range valueSets() {
		t.Run(name, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(chartDir, vals, releaseNS, &kubeVersion)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestDefaults renders the chart with its defaults and checks what the issue asks of it.
func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	r, err := render(t, nil)
	g.Expect(err).NotTo(HaveOccurred())
	ch := loadChart(t)

	// Every object carries the standard labels, the hook too.
	for _, o := range append(slices.Clone(r.objects), r.hooks...) {
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("helm.sh/chart", "mysqlfleet-"+ch.Metadata.Version), "%s %s", o.GetKind(), o.GetName())
		g.Expect(o.GetLabels()).To(And(
			HaveKeyWithValue("app.kubernetes.io/name", "mysqlfleet"),
			HaveKeyWithValue("app.kubernetes.io/instance", releaseName),
			HaveKeyWithValue("app.kubernetes.io/version", ch.Metadata.AppVersion),
			HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"),
		), "%s %s", o.GetKind(), o.GetName())
		if o.GetNamespace() != "" {
			g.Expect(o.GetNamespace()).To(Equal(releaseNS), "%s %s", o.GetKind(), o.GetName())
		}
	}
	g.Expect(kinds(r.objects)).To(ConsistOf(
		"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"Deployment", "Service", "PodDisruptionBudget"), "the ServiceMonitor is off by default")

	// The CRD is the generated one, kept on uninstall.
	crd := get[apiextensionsv1.CustomResourceDefinition](t, r, "CustomResourceDefinition", "mysqlclusters.mysqlfleet.io")
	generated := generatedCRD(t)
	g.Expect(crd.Spec).To(Equal(generated.Spec), "the chart's CRD is config/crd/bases: run make manifests")
	for k, v := range generated.Annotations {
		g.Expect(crd.Annotations).To(HaveKeyWithValue(k, v))
	}
	g.Expect(crd.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))

	// The Deployment.
	dep := get[appsv1.Deployment](t, r, "Deployment", fullName)
	g.Expect(dep.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
	pod := dep.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("mysqlfleet/manager:" + ch.Metadata.AppVersion))
	g.Expect(c.ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
	g.Expect(c.Args).To(ContainElements(
		"--namespace="+releaseNS,
		"--leader-elect=true",
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081",
		"--allow-insecure-member-tls=false",
		"--member-qps=200",
		"--member-burst=400",
	))
	g.Expect(c.Args).NotTo(ContainElement(HavePrefix("--sharding")), "sharding is gone: the manager has no such flag")
	g.Expect(r.notes).To(ContainSubstring("elect a leader, which reconciles MySQLClusters"))
	// Restricted Pod Security.
	g.Expect(pod.SecurityContext).To(Equal(&corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		RunAsGroup:     ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}))
	g.Expect(c.SecurityContext).To(Equal(&corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceCPU))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
	g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceCPU))
	g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
	// Probes on 8081.
	g.Expect(c.Ports).To(ConsistOf(
		corev1.ContainerPort{Name: "metrics", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
	))
	g.Expect(c.LivenessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}))
	g.Expect(c.ReadinessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}))
	// The two replicas prefer different nodes, counting the Pods of the Deployment only.
	g.Expect(pod.TopologySpreadConstraints).To(ConsistOf(corev1.TopologySpreadConstraint{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelHostname,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     dep.Spec.Selector,
		MatchLabelKeys:    []string{appsv1.DefaultDeploymentUniqueLabelKey},
	}))
	g.Expect(dep.Spec.Template.Labels).To(includesAll(dep.Spec.Selector.MatchLabels))

	// The ServiceAccount and its RBAC: exactly the generated rules, the Role in the release namespace.
	sa := get[corev1.ServiceAccount](t, r, "ServiceAccount", fullName)
	g.Expect(pod.ServiceAccountName).To(Equal(sa.Name))
	wantCluster, wantNamespaced := generatedRBAC(t)
	cr := get[rbacv1.ClusterRole](t, r, "ClusterRole", fullName)
	g.Expect(cr.Rules).To(Equal(wantCluster.Rules), "the chart's ClusterRole is config/rbac/role.yaml's: run make manifests")
	role := get[rbacv1.Role](t, r, "Role", fullName)
	g.Expect(role.Rules).To(Equal(wantNamespaced.Rules), "the chart's Role is config/rbac/role.yaml's: run make manifests")
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: releaseNS}
	crb := get[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", fullName)
	g.Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}))
	g.Expect(crb.Subjects).To(ConsistOf(subject))
	rb := get[rbacv1.RoleBinding](t, r, "RoleBinding", fullName)
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}))
	g.Expect(rb.Subjects).To(ConsistOf(subject))

	// The Service selects the manager's Pods and names both ports.
	svc := get[corev1.Service](t, r, "Service", fullName)
	g.Expect(svc.Spec.Selector).To(Equal(dep.Spec.Selector.MatchLabels))
	g.Expect(svc.Spec.Ports).To(ConsistOf(
		corev1.ServicePort{Name: "metrics", Port: 8080, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "health", Port: 8081, TargetPort: intstr.FromString("health"), Protocol: corev1.ProtocolTCP},
	))

	pdb := get[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", fullName)
	g.Expect(pdb.Spec.Selector).To(Equal(dep.Spec.Selector))
	g.Expect(pdb.Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
	g.Expect(pdb.Spec.MinAvailable).To(BeNil())

	// helm test: the manager image asks /readyz through the Service.
	g.Expect(r.hooks).To(HaveLen(1))
	g.Expect(r.hooks[0].GetAnnotations()).To(HaveKeyWithValue("helm.sh/hook", "test"))
	testPod := typed[corev1.Pod](t, r.hooks[0])
	g.Expect(testPod.Spec.Containers).To(HaveLen(1))
	g.Expect(testPod.Spec.Containers[0].Image).To(Equal(c.Image))
	g.Expect(testPod.Spec.Containers[0].Args).To(Equal([]string{"--probe=http://" + svc.Name + "." + releaseNS + ".svc:8081/readyz"}))
	g.Expect(testPod.Spec.SecurityContext).To(Equal(pod.SecurityContext))
	g.Expect(testPod.Spec.Containers[0].SecurityContext).To(Equal(c.SecurityContext))

	// NOTES.txt: the next steps.
	g.Expect(r.notes).To(ContainSubstring("kubectl mysqlfleet join <member> --fleet-namespace " + releaseNS))
	g.Expect(r.notes).To(ContainSubstring("kubectl --namespace " + releaseNS + " label secret <member> mysqlfleet.io/member=true"))
	g.Expect(r.notes).To(ContainSubstring("kind: MySQLCluster"))
	g.Expect(r.notes).To(ContainSubstring("kubectl get mysqlclusters.mysqlfleet.io -A"))
	g.Expect(r.notes).To(ContainSubstring("helm test " + releaseName + " --namespace " + releaseNS))
	g.Expect(r.notes).NotTo(ContainSubstring("WARNING"))
}

// TestValueSets renders the other value sets and checks that each value reaches its object.
func TestValueSets(t *testing.T) {
	t.Run("everything", func(t *testing.T) {
		g := NewWithT(t)
		r, err := render(t, valueSets()["everything"])
		g.Expect(err).NotTo(HaveOccurred())
		const name = "hub-manager"
		g.Expect(kinds(r.objects)).To(ContainElement("ServiceMonitor"))
		for _, o := range r.objects {
			g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "fleet"), "nameOverride")
		}

		crd := get[apiextensionsv1.CustomResourceDefinition](t, r, "CustomResourceDefinition", "mysqlclusters.mysqlfleet.io")
		g.Expect(crd.Annotations).NotTo(HaveKey("helm.sh/resource-policy"), "crds.keep=false")

		dep := get[appsv1.Deployment](t, r, "Deployment", name)
		g.Expect(dep.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		pod := dep.Spec.Template.Spec
		c := pod.Containers[0]
		g.Expect(c.Image).To(Equal("registry.example.com/mysqlfleet/manager@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
		g.Expect(c.ImagePullPolicy).To(Equal(corev1.PullAlways))
		g.Expect(c.Args).To(ContainElements(
			"--member-qps=12.5", "--member-burst=25", "--allow-insecure-member-tls=true",
			"--member-sync-timeout=30s", "--member-health-interval=5s", "--member-timeout=20s", "--member-max-in-flight=16", "--workers=48",
			"--deletion-timeout=10m",
			"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=5s",
		))
		g.Expect(c.Args[len(c.Args)-2:]).To(Equal([]string{"--zap-log-level=4", "--zap-encoder=console"}), "extraArgs come last, so they win")
		g.Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))
		g.Expect(pod.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "regcred"}}))
		g.Expect(pod.ServiceAccountName).To(Equal("hub-manager-sa"))
		g.Expect(pod.PriorityClassName).To(Equal("system-cluster-critical"))
		g.Expect(pod.NodeSelector).To(HaveKeyWithValue("node-role.example.com/infra", "true"))
		g.Expect(pod.Tolerations).To(ConsistOf(corev1.Toleration{Key: "node-role.example.com/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}))
		g.Expect(pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms).To(HaveLen(1))
		g.Expect(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1))
		g.Expect(dep.Spec.Template.Annotations).To(HaveKeyWithValue("example.com/scrape", "true"))
		g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue("team", "platform"))
		// A constraint with its own selector keeps it; one without gets the manager's.
		g.Expect(pod.TopologySpreadConstraints).To(HaveLen(2))
		g.Expect(pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels).To(Equal(map[string]string{"team": "platform"}))
		g.Expect(pod.TopologySpreadConstraints[1].LabelSelector).To(Equal(dep.Spec.Selector))

		sa := get[corev1.ServiceAccount](t, r, "ServiceAccount", "hub-manager-sa")
		g.Expect(sa.Annotations).To(HaveKeyWithValue("example.com/role", "manager"))
		crb := get[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", name)
		g.Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: releaseNS}))

		pdb := get[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", name)
		g.Expect(pdb.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromString("50%"))))
		g.Expect(pdb.Spec.MaxUnavailable).To(BeNil())

		// The ServiceMonitor scrapes the Service's metrics port in the release namespace.
		svc := get[corev1.Service](t, r, "Service", name)
		sm := find(r.objects, "ServiceMonitor", name)
		g.Expect(sm).NotTo(BeNil())
		g.Expect(sm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
		g.Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		g.Expect(svc.Labels).To(includesAll(selector))
		namespaces, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
		g.Expect(namespaces).To(Equal([]string{releaseNS}))
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		g.Expect(endpoints).To(Equal([]any{map[string]any{"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "5s"}}))
		g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", "metrics")))

		g.Expect(r.notes).To(ContainSubstring("WARNING: allowInsecureMemberTLS is true"))
	})

	t.Run("minimal", func(t *testing.T) {
		g := NewWithT(t)
		r, err := render(t, valueSets()["minimal"])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kinds(r.objects)).To(ConsistOf("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service"),
			"no CRD, ServiceAccount, PodDisruptionBudget or ServiceMonitor")
		dep := get[appsv1.Deployment](t, r, "Deployment", fullName)
		pod := dep.Spec.Template.Spec
		c := pod.Containers[0]
		g.Expect(pod.ServiceAccountName).To(Equal("existing-sa"))
		g.Expect(c.Args).To(ContainElement("--metrics-bind-address=0"))
		g.Expect(c.Ports).To(ConsistOf(HaveField("Name", "health")))
		g.Expect(pod.TopologySpreadConstraints).To(BeEmpty())
		g.Expect(pod.NodeSelector).To(BeEmpty())
		g.Expect(c.Resources).To(Equal(corev1.ResourceRequirements{}))
		svc := get[corev1.Service](t, r, "Service", fullName)
		g.Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Name", "health")))
		rb := get[rbacv1.RoleBinding](t, r, "RoleBinding", fullName)
		g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "existing-sa", Namespace: releaseNS}))
		g.Expect(r.notes).To(ContainSubstring("with one replica"))
	})

	// Combinations the templates refuse, with a message that says why.
	for name, tc := range map[string]struct {
		values string
		err    string
	}{
		"ServiceMonitor without metrics": {
			values: `metrics: {enabled: false, serviceMonitor: {enabled: true}}`,
			err:    "metrics.serviceMonitor.enabled needs metrics.enabled",
		},
		"existing ServiceAccount without a name": {
			values: `serviceAccount: {create: false}`,
			err:    "serviceAccount.name is required when serviceAccount.create is false",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, mustYAML(tc.values))
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

// TestSchemaRejects checks that values.schema.json refuses bad values, each with an error that says where and why.
func TestSchemaRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		values string
		err    string
	}{
		"unknown top-level key":     {`replica: 2`, `at '': additional properties 'replica' not allowed`},
		"unknown nested key":        {`crds: {keepIt: true}`, `at '/crds': additional properties 'keepIt' not allowed`},
		"replicas as a string":      {`replicas: "2"`, `at '/replicas': got string, want integer`},
		"no replicas":               {`replicas: 0`, `at '/replicas': minimum: got 0, want 1`},
		"bad pullPolicy":            {`image: {pullPolicy: Sometimes}`, `at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'`},
		"digest without algorithm":  {`image: {digest: "0123abcd"}`, `at '/image/digest': '0123abcd' does not match pattern`},
		"duration without unit":     {`memberTimeout: 15`, `at '/memberTimeout': got number, want string`},
		"malformed duration":        {`leaderElection: {leaseDuration: 15 seconds}`, `at '/leaderElection/leaseDuration': '15 seconds' does not match pattern`},
		"insecure TLS as a string":  {`allowInsecureMemberTLS: "false"`, `at '/allowInsecureMemberTLS': got string, want boolean`},
		"negative QPS":              {`memberQPS: -1`, `at '/memberQPS': exclusiveMinimum: got -1, want 0`},
		"no slot per member":        {`memberMaxInFlight: 0`, `at '/memberMaxInFlight': minimum: got 0, want 1`},
		"fractional slots":          {`memberMaxInFlight: 2.5`, `at '/memberMaxInFlight': got number, want integer`},
		"no worker":                 {`workers: 0`, `at '/workers': minimum: got 0, want 1`},
		"bad quantity":              {`resources: {limits: {memory: lots}}`, `at '/resources/limits/memory': 'lots' does not match pattern`},
		"bad toleration effect":     {`tolerations: [{key: a, effect: Sometimes}]`, `at '/tolerations/0/effect': value must be one of`},
		"typo deep in affinity":     {`affinity: {nodeAffinity: {requiredDuringScheduling: {}}}`, `at '/affinity/nodeAffinity': additional properties 'requiredDuringScheduling' not allowed`},
		"spread without key":        {`topologySpreadConstraints: [{maxSkew: 1, whenUnsatisfiable: ScheduleAnyway}]`, `at '/topologySpreadConstraints/0': missing property 'topologyKey'`},
		"extra argument not a flag": {`extraArgs: [zap-log-level=4]`, `at '/extraArgs/0': 'zap-log-level=4' does not match pattern`},
		"number as a node selector": {`nodeSelector: {disktype: 1}`, `at '/nodeSelector/disktype': got number, want string`},
		"sharding, which is gone":   {`sharding: {enabled: auto}`, `additional properties 'sharding' not allowed`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, mustYAML(tc.values))
			t.Logf("%v", err)
			g := NewWithT(t)
			g.Expect(err).To(MatchError(ContainSubstring("values don't meet the specifications of the schema")))
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

// TestSchemaClosed walks values.schema.json: every object refuses unknown keys (additionalProperties false, or a
// schema for the values of a map), and every top-level key has a default in values.yaml, where it is documented.
func TestSchemaClosed(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var schema map[string]any
	g.Expect(json.Unmarshal(data, &schema)).To(Succeed())
	var open []string
	var walk func(path string, node any)
	walk = func(path string, node any) {
		switch n := node.(type) {
		case map[string]any:
			isObject := n["type"] == "object"
			if types, ok := n["type"].([]any); ok {
				isObject = slices.Contains(types, any("object"))
			}
			if _, closed := n["additionalProperties"]; isObject && !closed {
				open = append(open, path)
			}
			for k, v := range n {
				walk(path+"/"+k, v)
			}
		case []any:
			for _, v := range n {
				walk(path+"/[]", v)
			}
		}
	}
	walk("#", schema)
	g.Expect(open).To(BeEmpty(), "objects in values.schema.json without additionalProperties")

	defaults := loadChart(t).Values
	props := schema["properties"].(map[string]any)
	for k := range props {
		g.Expect(defaults).To(HaveKey(k), "values.yaml documents %s", k)
	}
	for k := range defaults {
		g.Expect(props).To(HaveKey(k), "values.schema.json describes %s", k)
	}
}

// rendering is the chart rendered as `helm install --dry-run` renders it without a cluster.
type rendering struct {
	objects []*unstructured.Unstructured
	hooks   []*unstructured.Unstructured
	notes   string
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return ch
}

// render renders the chart through helm's install action in client-only dry-run mode, which validates the
// values against the schema and checks the chart's kubeVersion, as `helm template` does.
func render(t *testing.T, vals map[string]any) (*rendering, error) {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = releaseName
	install.Namespace = releaseNS
	install.KubeVersion = &kubeVersion
	if vals == nil {
		vals = map[string]any{}
	}
	rel, err := install.Run(loadChart(t), vals)
	if err != nil {
		return nil, err
	}
	r := &rendering{notes: rel.Info.Notes}
	if r.objects, err = decode(rel.Manifest); err != nil {
		return nil, err
	}
	for _, h := range rel.Hooks {
		objs, err := decode(h.Manifest)
		if err != nil {
			return nil, err
		}
		r.hooks = append(r.hooks, objs...)
	}
	return r, nil
}

// decode splits a YAML stream into objects.
func decode(manifest string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var o map[string]any
		if err := d.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(o) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: o})
		}
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// get finds a rendered object and converts it to its type, refusing fields the type does not have.
func get[T any](t *testing.T, r *rendering, kind, name string) *T {
	t.Helper()
	o := find(r.objects, kind, name)
	if o == nil {
		t.Fatalf("no %s %s in the rendering; it has %v", kind, name, kinds(r.objects))
	}
	return typed[T](t, o)
}

func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	obj := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, obj, true); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return obj
}

func kinds(objs []*unstructured.Unstructured) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.GetKind())
	}
	return ks
}

// generatedCRD reads the CRD that controller-gen generates.
func generatedCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "mysqlfleet.io_mysqlclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

// generatedRBAC reads the ClusterRole and the Role that controller-gen generates from the RBAC markers.
func generatedRBAC(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(string(data))
	if err != nil {
		t.Fatal(err)
	}
	var cr *rbacv1.ClusterRole
	var role *rbacv1.Role
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			cr = typed[rbacv1.ClusterRole](t, o)
		case "Role":
			role = typed[rbacv1.Role](t, o)
		}
	}
	if cr == nil || role == nil {
		t.Fatal("config/rbac/role.yaml lacks the ClusterRole or the Role")
	}
	return cr, role
}

// includesAll matches a map that has every entry of m.
func includesAll(m map[string]string) types.GomegaMatcher {
	var ms []types.GomegaMatcher
	for k, v := range m {
		ms = append(ms, HaveKeyWithValue(k, v))
	}
	return And(ms...)
}

func mustYAML(s string) map[string]any {
	var v map[string]any
	if err := yaml.Unmarshal(bytes.TrimSpace([]byte(s)), &v); err != nil {
		panic(err)
	}
	return v
}
