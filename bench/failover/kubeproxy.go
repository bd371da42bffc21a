package failover

import (
	"regexp"
	"strings"
	"time"
)

// kubeProxyLine is a sync's start or end in the log of kube-proxy's nftables proxier at verbosity 2:
//
//	I1207 17:20:06.123456       1 proxier.go:1094] "Syncing nftables rules" ipFamily="IPv4" fullSync=false
//	I1207 17:20:06.135790       1 proxier.go:1088] "SyncProxyRules complete" ipFamily="IPv4" elapsed="12.3ms"
var kubeProxyLine = regexp.MustCompile(
	`(?m)^I(\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ \S+\] "(Syncing nftables rules|SyncProxyRules complete)"(.*)$`)

var elapsedField = regexp.MustCompile(`elapsed="([^"]+)"`)

// AddKubeProxySyncs records on tl, at the log's own times, the syncs a kube-proxy's log shows ("kube-proxy
// sync", "kube-proxy synced 12.3ms"): when the rules that send a client's new connections to the new primary
// were in. klog's lines carry neither year nor zone: kind's nodes log in UTC, and the year is ref's. It returns
// how many events it added.
func (tl *Timeline) AddKubeProxySyncs(logs string, ref time.Time) int {
	n := 0
	for _, m := range kubeProxyLine.FindAllStringSubmatch(logs, -1) {
		at, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.UTC)
		if err != nil {
			continue
		}
		at = at.AddDate(ref.UTC().Year(), 0, 0)
		what := "kube-proxy sync"
		if m[2] == "SyncProxyRules complete" {
			what = "kube-proxy synced"
			if e := elapsedField.FindStringSubmatch(m[3]); e != nil {
				what += " " + e[1]
			}
		}
		tl.addAt(at, what)
		n++
	}
	return n
}

// ProxyPhases are, from a kind run's timeline, the start and the end of the first sync of the writer node's
// kube-proxy that began once the bench saw <name>-primary's EndpointSlice name the new primary (r.To): from its
// end, new connections through the Service reach the new primary. The sync that starts within a few
// milliseconds of the bench's sight of the slice may have started just before kube-proxy's own, so this is the
// earliest sync that certainly holds the change. Nil for a run whose timeline holds no kube-proxy sync (runs
// before they were recorded) or none after the slice.
func ProxyPhases(r Run) []Phase {
	evs := parseRelative(r.Timeline)
	next := func(from float64, match func(string) bool) (float64, bool) {
		for _, e := range evs {
			if e.at >= from && match(e.what) {
				return e.at, true
			}
		}
		return 0, false
	}
	named, ok := next(0, func(w string) bool { return w == "endpoints "+r.To })
	if !ok {
		return nil
	}
	start, ok := next(named, func(w string) bool { return w == "kube-proxy sync" })
	if !ok {
		return nil
	}
	end, ok := next(start, func(w string) bool { return strings.HasPrefix(w, "kube-proxy synced") })
	if !ok {
		return nil
	}
	return []Phase{{Name: "kube-proxy sync after it", Seconds: start}, {Name: "kube-proxy synced it", Seconds: end}}
}

// ProxyPhaseMedians are the medians of ProxyPhases over the figure's completed runs that have them.
func (f *Figure) ProxyPhaseMedians() []Phase { return f.phaseMedians(ProxyPhases) }
