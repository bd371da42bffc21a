package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// Output formats of members, get and plan. Tables are printed by cli-runtime's table printer, as kubectl prints
// them; json and yaml print the same information as the table, as documented structures (MemberView,
// ClusterView, PlanView) rather than the raw objects, which `kubectl get -o yaml` already shows.
const (
	OutputTable = ""
	OutputWide  = "wide"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// ValidateOutput checks an -o value.
func ValidateOutput(format string) error {
	switch format {
	case OutputTable, OutputWide, OutputJSON, OutputYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use wide, json or yaml", format)
}

// column is a table column; wide columns show with -o wide only.
func column(name string, wide bool) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: "string"}
	if wide {
		c.Priority = 1
	}
	return c
}

func row(cells ...any) metav1.TableRow { return metav1.TableRow{Cells: cells} }

// printView writes view as json or yaml, or the table; an empty table prints empty to the error stream, as kubectl
// says "No resources found".
func printView(streams genericiooptions.IOStreams, format string, view any, table *metav1.Table, empty string) error {
	switch format {
	case OutputJSON:
		data, err := json.MarshalIndent(view, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(streams.Out, "%s\n", data)
		return err
	case OutputYAML:
		data, err := yaml.Marshal(view)
		if err != nil {
			return err
		}
		_, err = streams.Out.Write(data)
		return err
	}
	if len(table.Rows) == 0 {
		_, err := fmt.Fprintln(errOut(streams), empty)
		return err
	}
	return printers.NewTablePrinter(printers.PrintOptions{Wide: format == OutputWide}).PrintObj(table, streams.Out)
}

func errOut(streams genericiooptions.IOStreams) io.Writer {
	if streams.ErrOut == nil {
		return io.Discard
	}
	return streams.ErrOut
}

// age is how long ago t was, as kubectl prints ages; "-" for never.
func age(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// say writes a progress or advice line for a person. A failed write to the terminal is not worth failing a
// command that has already changed clusters.
func say(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
