package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

const (
	rootPassword = "r00t-Secret-Xy7"
	userPassword = "app-Secret-Qz9"
)

var (
	awsMember   = placement.Member{Name: "aws-eu-west-1", Cloud: v1alpha1.CloudAWS, Region: "eu-west-1"}
	azureMember = placement.Member{Name: "azure-westeurope", Cloud: v1alpha1.CloudAzure, Region: "westeurope"}
	gcpMember   = placement.Member{Name: "gcp-us-central1", Cloud: v1alpha1.CloudGCP, Region: "us-central1"}
	creds       = Credentials{RootPassword: rootPassword, Password: userPassword, AdminPassword: "adm1n-Secret-Pq4", ReplicationPassword: "r3pl-Secret-Lm2"}
)

type option func(*v1alpha1.MySQLCluster)

// cluster is demo/orders as the API server would return it: defaulted, with a UID.
func cluster(opts ...option) *v1alpha1.MySQLCluster {
	c := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "demo", UID: "8d3c1a52-0b7e-4e0f-9f59-2f3c1c6f0a11"},
		Spec: v1alpha1.MySQLClusterSpec{
			Version:        "8.4",
			Replicas:       3,
			ServiceType:    corev1.ServiceTypeClusterIP,
			DeletionPolicy: v1alpha1.DeletionPolicyRetain,
			Placement:      v1alpha1.Placement{Members: []string{awsMember.Name, azureMember.Name, gcpMember.Name}},
			Storage: v1alpha1.Storage{
				Size: resource.MustParse("20Gi"),
				StorageClassByCloud: v1alpha1.StorageClassByCloud{
					AWS: DefaultStorageClassAWS, Azure: DefaultStorageClassAzure, GCP: DefaultStorageClassGCP,
				},
			},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func withUser(db, user string) option {
	return func(c *v1alpha1.MySQLCluster) { c.Spec.Database, c.Spec.User = db, user }
}

func withStorageClassName(name string) option {
	return func(c *v1alpha1.MySQLCluster) { c.Spec.Storage.StorageClassName = ptr.To(name) }
}

func withByCloud(aws, azure, gcp string) option {
	return func(c *v1alpha1.MySQLCluster) {
		c.Spec.Storage.StorageClassByCloud = v1alpha1.StorageClassByCloud{AWS: aws, Azure: azure, GCP: gcp}
	}
}

func withDeletionPolicy(p v1alpha1.DeletionPolicy) option {
	return func(c *v1alpha1.MySQLCluster) { c.Spec.DeletionPolicy = p }
}

func withConfig(kv map[string]string) option {
	return func(c *v1alpha1.MySQLCluster) { c.Spec.Config = kv }
}

func withBackup(schedule string, target v1alpha1.BackupTarget) option {
	return func(c *v1alpha1.MySQLCluster) {
		c.Spec.Backup = &v1alpha1.Backup{Schedule: schedule, Retention: 5, Target: target}
	}
}

func withBackupImage(image string) option {
	return func(c *v1alpha1.MySQLCluster) { c.Spec.Backup.Image = image }
}

func pvcTarget() v1alpha1.BackupTarget {
	return v1alpha1.BackupTarget{PVC: &v1alpha1.PVCTarget{
		Size: resource.MustParse("50Gi"),
		StorageClassByCloud: v1alpha1.StorageClassByCloud{
			AWS: "st1", Azure: DefaultStorageClassAzure, GCP: DefaultStorageClassGCP,
		},
	}}
}

func s3Target(endpoint string) v1alpha1.BackupTarget {
	return v1alpha1.BackupTarget{S3: &v1alpha1.BucketTarget{
		Bucket: "fleet-backups", Endpoint: endpoint, Prefix: "/mysql/",
		CredentialsSecretRef: v1alpha1.SecretReference{Name: "s3-credentials"},
	}}
}

func gcsTarget(endpoint string) v1alpha1.BackupTarget {
	return v1alpha1.BackupTarget{GCS: &v1alpha1.BucketTarget{
		Bucket: "fleet-backups", Endpoint: endpoint,
		CredentialsSecretRef: v1alpha1.SecretReference{Name: "gcs-credentials"},
	}}
}

func azureTarget(endpoint string) v1alpha1.BackupTarget {
	return v1alpha1.BackupTarget{AzureBlob: &v1alpha1.AzureBlobTarget{
		Container: "fleet-backups", Endpoint: endpoint, Prefix: "prod",
		CredentialsSecretRef: v1alpha1.SecretReference{Name: "azure-credentials"},
	}}
}
