package charts_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
)

// managerBin is the manager binary, built once for the package by TestMain.
var managerBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mysqlfleet-chart-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	managerBin = filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", managerBin, "github.com/mysqlfleet/mysqlfleet/cmd/manager")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/manager: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// TestChartArgsAreManagerDefaults checks the Deployment's arguments against the manager binary's flags: every
// argument the chart passes is a flag of the manager (a renamed flag would crash the Pods), and the chart's
// default values are the manager's defaults, so that values.yaml tells the truth about them.
func TestChartArgsAreManagerDefaults(t *testing.T) {
	g := NewWithT(t)
	flags := managerFlags(t)
	r, err := render(t, nil)
	g.Expect(err).NotTo(HaveOccurred())
	dep := get[appsv1.Deployment](t, r, "Deployment", fullName)
	args := dep.Spec.Template.Spec.Containers[0].Args
	g.Expect(args).NotTo(BeEmpty())
	for _, arg := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		g.Expect(ok).To(BeTrue(), "%s: the chart passes flags as --name=value", arg)
		f, ok := flags[name]
		g.Expect(ok).To(BeTrue(), "%s is not a flag of the manager", arg)
		switch name {
		case "namespace":
			continue // the release namespace, deliberately
		case "runner-image":
			// The chart's own image, deliberately: the backup runner must match the manager.
			g.Expect(value).To(Equal("mysqlfleet/manager:0.1.0"))
			continue
		}
		g.Expect(sameValue(f.typ, value, f.def)).To(BeTrue(), "%s: the manager's default is %q", arg, f.def)
	}
}

type managerFlag struct{ typ, def string }

// managerFlags reads the flags, their types and defaults from the manager's -help.
func managerFlags(t *testing.T) map[string]managerFlag {
	t.Helper()
	out, err := exec.Command(managerBin, "-help").CombinedOutput()
	if err != nil {
		t.Fatalf("manager -help: %v\n%s", err, out)
	}
	usage := regexp.MustCompile(`(?m)^  -(\S+)(?: (\S+))?\n\s+\t(.*)$`)
	def := regexp.MustCompile(`\(default (.*)\)$`)
	flags := map[string]managerFlag{}
	for _, m := range usage.FindAllStringSubmatch(string(out), -1) {
		f := managerFlag{typ: m[2]}
		if d := def.FindStringSubmatch(m[3]); d != nil {
			f.def = d[1]
			if s, err := strconv.Unquote(f.def); err == nil {
				f.def = s
			}
		}
		flags[m[1]] = f
	}
	if len(flags) < 10 {
		t.Fatalf("could not read the manager's flags from:\n%s", out)
	}
	return flags
}

// sameValue compares a flag's value with its default as the flag package would parse them.
func sameValue(typ, value, def string) bool {
	switch typ {
	case "": // a boolean; the flag package prints no default for false
		if def == "" {
			def = "false"
		}
		a, err1 := strconv.ParseBool(value)
		b, err2 := strconv.ParseBool(def)
		return err1 == nil && err2 == nil && a == b
	case "duration":
		a, err1 := time.ParseDuration(value)
		b, err2 := time.ParseDuration(def)
		return err1 == nil && err2 == nil && a == b
	case "float", "int":
		a, err1 := strconv.ParseFloat(value, 64)
		b, err2 := strconv.ParseFloat(def, 64)
		return err1 == nil && err2 == nil && a == b
	default:
		return value == def
	}
}

// TestProbe checks the manager's --probe mode, which the chart's helm test Pod and the image's HEALTHCHECK run:
// exit status 0 for 200 OK, 1 for anything else or no answer.
func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for url, want := range map[string]int{
		srv.URL + "/readyz":    0,
		srv.URL + "/healthz":   1,
		closed.URL + "/readyz": 1,
	} {
		out, err := exec.Command(managerBin, "--probe="+url).CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Errorf("manager --probe=%s: exit status %d, want %d\n%s", url, code, want, out)
		}
	}
}
