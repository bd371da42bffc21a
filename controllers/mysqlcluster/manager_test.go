package mysqlcluster

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// A negative member bound is refused when the manager is built, not found later as a member that never works.
func TestNewRefusesNegativeMemberBounds(t *testing.T) {
	for name, o := range map[string]Options{
		"max in flight": {Namespace: "mysqlfleet-system", MemberMaxInFlight: -1},
		"timeout":       {Namespace: "mysqlfleet-system", MemberTimeout: -time.Second},
		"workers":       {Namespace: "mysqlfleet-system", Workers: -1},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, o)
			g.Expect(err).To(MatchError(ContainSubstring("must not be negative")))
		})
	}
}
