package provisioner

// Fallback is the provisioner name of a member whose cloud has no CSI driver named in ForCloud.
const Fallback = "test.mysqlfleet.io"

// ForCloud names a cloud's StorageClass provisioner after its CSI driver, so that a test member (test/testfleet,
// test/kindfleet) looks like one of that cloud; a Provisioner configured with the name serves its classes. Both
// rigs name their classes here, so that a member looks the same whichever rig made it.
func ForCloud(cloud string) string {
	switch cloud {
	case "aws":
		return "ebs.csi.aws.com"
	case "azure":
		return "disk.csi.azure.com"
	case "gcp":
		return "pd.csi.storage.gke.io"
	}
	return Fallback
}
