package provisioner

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestForCloudNamesTheCloudsCSIDriver(t *testing.T) {
	g := NewWithT(t)
	for cloud, want := range map[string]string{
		"aws":    "ebs.csi.aws.com",
		"azure":  "disk.csi.azure.com",
		"gcp":    "pd.csi.storage.gke.io",
		"":       Fallback,
		"onprem": Fallback,
	} {
		g.Expect(ForCloud(cloud)).To(Equal(want), "cloud %q", cloud)
	}
}
