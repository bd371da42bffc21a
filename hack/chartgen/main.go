// Command chartgen copies what controller-gen generates into the Helm chart, so that the chart cannot drift from
// the code. `make manifests` runs it after controller-gen:
//
//   - every CRD in config/crd/bases becomes a template in charts/mysqlfleet/templates/crds/, rendered only with
//     crds.enabled and annotated helm.sh/resource-policy: keep with crds.keep;
//   - the rules of the ClusterRole and the Role in config/rbac/role.yaml become the named templates
//     "mysqlfleet.clusterRules" and "mysqlfleet.namespaceRules" in charts/mysqlfleet/templates/_rbac_rules.tpl,
//     which the chart's ClusterRole and its Role in the release namespace include.
//
// The output depends only on the input files: YAML is re-marshalled with sorted keys, so running it twice
// changes nothing and check-generate can diff the chart.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	crdDir := flag.String("crds", "config/crd/bases", "directory of the CRDs that controller-gen generates")
	rbacFile := flag.String("rbac", "config/rbac/role.yaml", "the RBAC that controller-gen generates")
	chartDir := flag.String("chart", "charts/mysqlfleet", "the chart to write into")
	flag.Parse()
	if err := run(*crdDir, *rbacFile, *chartDir); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

func run(crdDir, rbacFile, chartDir string) error {
	crds, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return fmt.Errorf("no CRDs in %s", crdDir)
	}
	// Templates of CRDs that no longer exist must go too, so the directory is rewritten as a whole.
	outDir := filepath.Join(chartDir, "templates", "crds")
	if err := os.RemoveAll(outDir); err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	for _, src := range crds {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		name, out, err := crdTemplate(filepath.ToSlash(src), data)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(outDir, name+".yaml"), out, 0o644); err != nil {
			return err
		}
	}

	data, err := os.ReadFile(rbacFile)
	if err != nil {
		return err
	}
	out, err := rulesTemplate(filepath.ToSlash(rbacFile), data)
	if err != nil {
		return fmt.Errorf("%s: %w", rbacFile, err)
	}
	return os.WriteFile(filepath.Join(chartDir, "templates", "_rbac_rules.tpl"), out, 0o644)
}

// crdTemplate turns one generated CRD into a chart template and returns the CRD's name with it.
func crdTemplate(src string, data []byte) (string, []byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return "", nil, err
	}
	if crd["kind"] != "CustomResourceDefinition" {
		return "", nil, fmt.Errorf("kind %v, want CustomResourceDefinition", crd["kind"])
	}
	meta, _ := crd["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return "", nil, errors.New("the CRD has no name")
	}
	// The template writes metadata itself; a field it does not know would be lost, so it is refused instead.
	for k := range meta {
		if k != "name" && k != "annotations" {
			return "", nil, fmt.Errorf("metadata.%s is not carried into the chart: teach hack/chartgen about it", k)
		}
	}
	for k := range crd {
		if !slices.Contains([]string{"apiVersion", "kind", "metadata", "spec"}, k) {
			return "", nil, fmt.Errorf("%s is not carried into the chart: teach hack/chartgen about it", k)
		}
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "{{- /* Generated from %s by hack/chartgen (make manifests). DO NOT EDIT. */ -}}\n", src)
	b.WriteString("{{- if .Values.crds.enabled }}\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n", crd["apiVersion"], name)
	b.WriteString("  annotations:\n")
	b.WriteString("    {{- if .Values.crds.keep }}\n")
	b.WriteString("    # helm uninstall leaves the CRD, and with it every MySQLCluster.\n")
	b.WriteString("    helm.sh/resource-policy: keep\n")
	b.WriteString("    {{- end }}\n")
	if annotations, ok := meta["annotations"].(map[string]any); ok && len(annotations) > 0 {
		out, err := marshal(annotations)
		if err != nil {
			return "", nil, err
		}
		b.WriteString(indent(out, "    "))
	}
	b.WriteString("  labels:\n")
	b.WriteString("    {{- include \"mysqlfleet.labels\" . | nindent 4 }}\n")
	out, err := marshal(map[string]any{"spec": crd["spec"]})
	if err != nil {
		return "", nil, err
	}
	b.Write(out)
	b.WriteString("{{- end }}\n")
	return name, b.Bytes(), nil
}

// rulesTemplate turns the generated ClusterRole and Role into named templates of their rules. controller-gen
// writes the namespaced rules into a Role in the namespace of the markers; the chart puts them in the release
// namespace, which is the namespace the manager is started with.
func rulesTemplate(src string, data []byte) ([]byte, error) {
	var clusterRoles []rbacv1.ClusterRole
	var roles []rbacv1.Role
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		var typeMeta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &typeMeta); err != nil {
			return nil, err
		}
		switch typeMeta.Kind {
		case "":
			continue // an empty document
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(doc, &cr); err != nil {
				return nil, err
			}
			clusterRoles = append(clusterRoles, cr)
		case "Role":
			var role rbacv1.Role
			if err := yaml.UnmarshalStrict(doc, &role); err != nil {
				return nil, err
			}
			roles = append(roles, role)
		default:
			return nil, fmt.Errorf("kind %s is not carried into the chart: teach hack/chartgen about it", typeMeta.Kind)
		}
	}
	// One Role means one namespace: the manager's. A marker naming another namespace would need a Role there,
	// which the chart does not make.
	if len(clusterRoles) != 1 || len(roles) != 1 {
		return nil, fmt.Errorf("want one ClusterRole and one Role, got %d and %d", len(clusterRoles), len(roles))
	}
	clusterRules, err := marshal(clusterRoles[0].Rules)
	if err != nil {
		return nil, err
	}
	namespaceRules, err := marshal(roles[0].Rules)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "{{- /* Generated from %s by hack/chartgen (make manifests). DO NOT EDIT. */ -}}\n\n", src)
	fmt.Fprintf(&b, "{{- /* Rules of the manager's ClusterRole (%s in %s). */ -}}\n", clusterRoles[0].Name, src)
	b.WriteString("{{- define \"mysqlfleet.clusterRules\" -}}\n")
	b.Write(clusterRules)
	b.WriteString("{{- end }}\n\n")
	fmt.Fprintf(&b, "{{- /* Rules of the manager's Role in its own namespace (%s/%s in %s). */ -}}\n", roles[0].Namespace, roles[0].Name, src)
	b.WriteString("{{- define \"mysqlfleet.namespaceRules\" -}}\n")
	b.Write(namespaceRules)
	b.WriteString("{{- end }}\n")
	return b.Bytes(), nil
}

// marshal writes YAML with sorted keys, and escapes what Helm would read as template actions.
func marshal(v any) ([]byte, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(out, []byte("{{"), []byte(`{{ "{{" }}`)), nil
}

func indent(data []byte, prefix string) string {
	lines := strings.SplitAfter(string(data), "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
