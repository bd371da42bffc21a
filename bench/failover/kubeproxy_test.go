package failover

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestAddKubeProxySyncs(t *testing.T) {
	g := NewWithT(t)
	logs := `I1207 17:20:05.900000       1 proxier.go:1712] "Reloading service nftables data" ipFamily="IPv4" numServices=9
I1207 17:20:06.123456       1 proxier.go:1094] "Syncing nftables rules" ipFamily="IPv4" fullSync=false
I1207 17:20:06.135790       1 proxier.go:1088] "SyncProxyRules complete" ipFamily="IPv4" elapsed="12.334ms"
E1207 17:20:07.000000       1 proxier.go:1094] "Syncing nftables rules" ipFamily="IPv4"
I1207 17:20:07.5000`
	tl := &Timeline{}
	ref := time.Date(2026, 12, 7, 17, 20, 6, 0, time.UTC)
	g.Expect(tl.AddKubeProxySyncs(logs, ref)).To(Equal(2))
	tl.addAt(ref, "endpoints db-1")
	g.Expect(tl.Relative(ref)).To(Equal([]string{
		"+0.000s endpoints db-1", "+0.123s kube-proxy sync", "+0.136s kube-proxy synced 12.334ms",
	}))
}
