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

func TestProxyPhases(t *testing.T) {
	g := NewWithT(t)
	r := Run{To: "db-1", Timeline: []string{
		"-3.000s kube-proxy sync", "-2.900s kube-proxy synced 100ms", "-2.000s endpoints db-0",
		"+0.400s slice shop/db db-1", "+0.402s kube-proxy sync", "+0.405s endpoints db-1",
		"+0.700s kube-proxy synced 298ms", "+1.402s kube-proxy sync", "+1.500s kube-proxy synced 98ms",
	}}
	// The sync that began 3 ms before the bench saw the slice may not hold it: the next one does.
	g.Expect(ProxyPhases(r)).To(Equal([]Phase{
		{Name: "kube-proxy sync after it", Seconds: 1.402}, {Name: "kube-proxy synced it", Seconds: 1.5},
	}))
	g.Expect(ProxyPhases(Run{To: "db-1", Timeline: r.Timeline[:6]})).To(BeNil(), "no sync after the slice")
	g.Expect(ProxyPhases(Run{To: "db-2", Timeline: r.Timeline})).To(BeNil(), "the slice never named it")

	f := Figure{Runs: []Run{r, {To: "db-1", Error: "failed", Timeline: r.Timeline}, {To: "db-1", Timeline: []string{
		"+0.100s endpoints db-1", "+0.200s kube-proxy sync", "+0.300s kube-proxy synced 100ms"}}}}
	medians := f.ProxyPhaseMedians()
	g.Expect(medians).To(HaveLen(2))
	g.Expect(medians[0].Name).To(Equal("kube-proxy sync after it"))
	g.Expect(medians[0].Seconds).To(BeNumerically("~", 0.801, 1e-9))
	g.Expect(medians[1].Name).To(Equal("kube-proxy synced it"))
	g.Expect(medians[1].Seconds).To(BeNumerically("~", 0.9, 1e-9))
}
