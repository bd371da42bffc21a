package render

import (
	"encoding/json"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Defaults of spec.backup.archive, as the API server defaults them; stated again for objects that were stored
// before the field existed or are rendered without the server's defaulting (tests, the plan of a paused cluster).
const (
	defaultArchiveSegmentAge  = "5s"
	defaultArchiveMaxRPOValue = "1m0s"
)

// archiveRequest is the value of the StatefulSet's ArchiveAnnotation in member: where the member controller
// archives the set's binary log (the backups' own target and prefix, so that a restore finds both together)
// and how; "" without spec.backup.archive, or for a target the archive does not support (CEL refuses a PVC).
func archiveRequest(c *v1alpha1.MySQLCluster, member string) string {
	b := c.Spec.Backup
	if b == nil || b.Archive == nil || engine(c) != v1alpha1.EngineMariaDB {
		return ""
	}
	s, ok := objectStoreOf(b.Target)
	if !ok {
		return ""
	}
	r := v1alpha1.ArchiveRequest{Target: s.kind, Bucket: s.bucket, Container: s.container, Endpoint: s.endpoint,
		Prefix: BackupPrefix(c, member), CredentialsSecret: s.secret, MaxSegmentAge: defaultArchiveSegmentAge,
		MaxRecoveryPointAge: defaultArchiveMaxRPOValue}
	if d := b.Archive.MaxSegmentAge; d != nil {
		r.MaxSegmentAge = d.Duration.String()
	}
	if d := b.Archive.MaxRecoveryPointAge; d != nil {
		r.MaxRecoveryPointAge = d.Duration.String()
	}
	v, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings only
	}
	return string(v)
}
