package render

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// The StatefulSet asks the member controller for the archive of spec.backup.archive, with the backups' own
// store, prefix and credentials Secret, only for MariaDB and an object store; a StatefulSet without it is as
// before the field existed.
func TestArchiveRequestOnTheStatefulSet(t *testing.T) {
	mariadb := func(c *v1alpha1.MySQLCluster) { c.Spec.Engine, c.Spec.Version = v1alpha1.EngineMariaDB, "10.11" }
	archived := func(c *v1alpha1.MySQLCluster) { c.Spec.Backup.Archive = &v1alpha1.BackupArchive{} }
	tests := []struct {
		name string
		c    *v1alpha1.MySQLCluster
		want *v1alpha1.ArchiveRequest
	}{
		{"s3, the defaults", cluster(mariadb, withBackup("@daily", s3Target("https://minio.example.com")), archived),
			&v1alpha1.ArchiveRequest{Target: "s3", Bucket: "fleet-backups", Endpoint: "https://minio.example.com",
				Prefix: "mysql/aws-eu-west-1/demo/orders", CredentialsSecret: "s3-credentials", MaxSegmentAge: "5s",
				MaxRecoveryPointAge: "1m0s"}},
		{"gcs, bounds set", cluster(mariadb, withBackup("@daily", gcsTarget("")), func(c *v1alpha1.MySQLCluster) {
			c.Spec.Backup.Archive = &v1alpha1.BackupArchive{MaxSegmentAge: &metav1.Duration{Duration: 2 * time.Second},
				MaxRecoveryPointAge: &metav1.Duration{Duration: 90 * time.Second}}
		}), &v1alpha1.ArchiveRequest{Target: "gcs", Bucket: "fleet-backups", Prefix: "aws-eu-west-1/demo/orders",
			CredentialsSecret: "gcs-credentials", MaxSegmentAge: "2s", MaxRecoveryPointAge: "1m30s"}},
		{"azblob", cluster(mariadb, withBackup("@daily", azureTarget("")), archived),
			&v1alpha1.ArchiveRequest{Target: "azblob", Container: "fleet-backups", Prefix: "prod/aws-eu-west-1/demo/orders",
				CredentialsSecret: "azure-credentials", MaxSegmentAge: "5s", MaxRecoveryPointAge: "1m0s"}},
		{"backups without archive", cluster(mariadb, withBackup("@daily", s3Target(""))), nil},
		{"a volume", cluster(mariadb, withBackup("@daily", pvcTarget()), archived), nil},
		{"MySQL", cluster(withBackup("@daily", s3Target("")), archived), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := Render(tt.c, awsMember, creds)
			g.Expect(err).NotTo(HaveOccurred())
			v, ok := o.StatefulSet.Annotations[v1alpha1.ArchiveAnnotation]
			if tt.want == nil {
				g.Expect(ok).To(BeFalse(), "annotation %s", v)
				return
			}
			var got v1alpha1.ArchiveRequest
			g.Expect(json.Unmarshal([]byte(v), &got)).To(Succeed())
			g.Expect(&got).To(Equal(tt.want))
		})
	}
}
