// Command promql parses PromQL expressions with Prometheus' own parser and prints what they read: the metric
// name and label matchers of every selector, the labels every aggregation groups by, and the labels every vector
// match joins on. charts/dashboard_test.go runs it to check the dashboard's and the alerts' queries against the
// metrics the manager exposes.
//
// It is a module of its own so that the parser, pinned to the Prometheus version of promtool (PROMETHEUS_VERSION
// in hack/versions.env), does not raise the versions of the manager's dependencies: Prometheus requires newer
// go-openapi, gRPC and golang.org/x modules than Kubernetes 1.36 ships with.
//
// Input: a JSON array of expressions on stdin. Output: a JSON array with one result per expression.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Selector is one vector selector: its metric name and its label matchers (the name's excluded).
type Selector struct {
	Metric   string    `json:"metric"`
	Matchers []Matcher `json:"matchers,omitempty"`
}

// Matcher is a label matcher: label, operator (=, !=, =~, !~) and value.
type Matcher struct {
	Label string `json:"label"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

// Grouping is an aggregation's by or without list, or a binary operation's on or ignoring list, with the metrics
// of the selectors beneath it (for a binary operation, of both sides).
type Grouping struct {
	Labels  []string `json:"labels"`
	Without bool     `json:"without,omitempty"`
	Metrics []string `json:"metrics"`
}

// Result is what one expression reads.
type Result struct {
	Expr      string     `json:"expr"`
	Error     string     `json:"error,omitempty"`
	Selectors []Selector `json:"selectors,omitempty"`
	Groupings []Grouping `json:"groupings,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promql: reading a JSON array of expressions:", err)
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	results := make([]Result, 0, len(exprs))
	for _, e := range exprs {
		results = append(results, analyse(p, e))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "promql:", err)
		os.Exit(1)
	}
}

func analyse(p parser.Parser, e string) Result {
	r := Result{Expr: e}
	expr, err := p.ParseExpr(e)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			r.Selectors = append(r.Selectors, selector(n))
		case *parser.AggregateExpr:
			if len(n.Grouping) > 0 {
				r.Groupings = append(r.Groupings, Grouping{Labels: n.Grouping, Without: n.Without, Metrics: metrics(n.Expr)})
			}
		case *parser.BinaryExpr:
			if m := n.VectorMatching; m != nil && len(m.MatchingLabels) > 0 {
				r.Groupings = append(r.Groupings, Grouping{Labels: m.MatchingLabels, Without: !m.On,
					Metrics: append(metrics(n.LHS), metrics(n.RHS)...)})
			}
		}
		return nil
	})
	return r
}

func selector(vs *parser.VectorSelector) Selector {
	s := Selector{Metric: vs.Name}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName {
			if s.Metric == "" && m.Type == labels.MatchEqual {
				s.Metric = m.Value
			}
			continue
		}
		s.Matchers = append(s.Matchers, Matcher{Label: m.Name, Op: m.Type.String(), Value: m.Value})
	}
	return s
}

// metrics returns the metric names of the selectors in a subtree.
func metrics(node parser.Node) []string {
	var names []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if name := selector(vs).Metric; !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		return nil
	})
	return names
}
