package mysqlcluster

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target for the manager when GOGC is not set. The manager's heap is
// mostly its member caches: long-lived objects that a collection keeps anyway. At Go's default of 100 the process
// holds about twice its live heap before collecting; at 50 it holds one and a half times. It costs more frequent
// collections while a fleet converges, and nothing when it is idle. Prometheus makes the same trade (75).
// make bench (10 members, 100 MySQLClusters) measured the effect when it was set: see commit 1a5b7e9's message.
const DefaultGCPercent = 50

// SetGCPercent applies DefaultGCPercent unless the GOGC environment variable chooses otherwise. It changes the
// whole process, so only a manager's main calls it.
func SetGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
