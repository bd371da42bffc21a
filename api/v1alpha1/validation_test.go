package v1alpha1_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// These tests send MySQLClusters to a real kube-apiserver with the generated CRD installed, so that what they
// check is what users meet: OpenAPI validation, CEL rules (including transition rules), defaulting and pruning.

var (
	// k8sClient talks to the package's one API server; it knows v1alpha1, core and apiextensions types.
	k8sClient client.Client
	// ctx is the context of every request; the API server lives for the whole package.
	ctx = context.Background()
)

const (
	repoRoot = "../.."
	// validationNamespace holds the objects of the validation cases, apart from the samples' namespaces.
	validationNamespace = "validation"
)

func TestMain(m *testing.M) {
	os.Exit(runWithAPIServer(m))
}

// runWithAPIServer starts kube-apiserver and etcd with the CRD installed, runs the tests and stops them. Missing
// binaries fail the package: these tests are the only check of the CRD's validation, so they never skip.
func runWithAPIServer(m *testing.M) int {
	assets, err := binaryAssets()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting kube-apiserver and etcd from %s: %v\n", assets, err)
		// Start leaves the control plane running when it fails after starting it, e.g. on a CRD the API
		// server rejects; stop it so that no kube-apiserver or etcd outlives the test.
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test API server: %v\n", err)
		}
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test API server: %v\n", err)
		}
	}()

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: building the scheme: %v\n", err)
			return 1
		}
	}
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: creating the client: %v\n", err)
		return 1
	}
	return m.Run()
}

// binaryAssets returns the folder with kube-apiserver and etcd: KUBEBUILDER_ASSETS as the Makefile sets it, else
// the repository's bin/, where hack/tools.sh links them.
func binaryAssets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join(repoRoot, "bin"))
		if err != nil {
			return "", err
		}
		dir = abs
	}
	var missing []string
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%s not found in %s (KUBEBUILDER_ASSETS): these tests need a real API server; "+
			"run `make test-tools` to build kube-apiserver and etcd into ./bin, then run them again "+
			"(`make test`, or KUBEBUILDER_ASSETS=$PWD/bin go test ./api/...)", strings.Join(missing, " and "), dir)
	}
	return dir, nil
}

func TestCRDIsInstalledAsDesigned(t *testing.T) {
	g := NewWithT(t)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "mysqlclusters.mysqlfleet.io"}, crd)).To(Succeed())

	g.Expect(crd.Status.Conditions).To(ContainElement(And(
		HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))
	g.Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
	g.Expect(crd.Spec.Names.Kind).To(Equal("MySQLCluster"))
	g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf("myf", "myfleet"))
	g.Expect(crd.Spec.Names.Categories).To(ConsistOf("mysqlfleet"))
	g.Expect(crd.Status.AcceptedNames.ShortNames).To(ConsistOf("myf", "myfleet"), "short names were not accepted")

	g.Expect(crd.Spec.Versions).To(HaveLen(1))
	v := crd.Spec.Versions[0]
	g.Expect(v.Name).To(Equal("v1alpha1"))
	g.Expect(v.Served).To(BeTrue())
	g.Expect(v.Storage).To(BeTrue())
	g.Expect(v.Subresources).NotTo(BeNil())
	g.Expect(v.Subresources.Status).NotTo(BeNil(), "status subresource")

	type column struct {
		Name, Type, JSONPath string
		Priority             int32
	}
	var columns []column
	for _, c := range v.AdditionalPrinterColumns {
		columns = append(columns, column{c.Name, c.Type, c.JSONPath, c.Priority})
	}
	g.Expect(columns).To(Equal([]column{
		{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`, 0},
		{"Members", "string", ".status.readyMembers", 0},
		{"Replicas", "string", ".status.readyReplicas", 0},
		{"Serving", "string", ".status.serving", 0},
		{"Phase", "string", ".status.phase", 0},
		{"Age", "date", ".metadata.creationTimestamp", 0},
		{"Engine", "string", ".spec.engine", 10},
		{"Version", "string", ".spec.version", 10},
		{"Storage", "string", ".spec.storage.size", 10},
		{"Storage Classes", "string", ".status.storageClasses", 10},
		{"Last Backup", "date", ".status.lastBackup", 10},
	}))
}

// TestSamplesAreAccepted creates every sample in config/samples. Strict field validation makes a misspelt field
// an error rather than a field the API server silently prunes.
func TestSamplesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(repoRoot, "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var samples []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			samples = append(samples, filepath.Base(f))
		}
	}
	g.Expect(len(samples)).To(BeNumerically(">=", 4), "samples in config/samples")

	// kubectl apply -k config/samples creates them all.
	kustomization := readObjects(t, filepath.Join(dir, "kustomization.yaml"))
	g.Expect(kustomization).To(HaveLen(1))
	resources, _, err := unstructured.NestedStringSlice(kustomization[0].Object, "resources")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resources).To(ConsistOf(samples), "config/samples/kustomization.yaml lists every sample")

	for _, sample := range samples {
		for i, obj := range readObjects(t, filepath.Join(dir, sample)) {
			t.Run(fmt.Sprintf("%s#%d", sample, i), func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(obj.GroupVersionKind()).To(Equal(v1alpha1.GroupVersion.WithKind("MySQLCluster")))
				g.Expect(obj.GetNamespace()).NotTo(BeEmpty(), "a sample names its namespace")
				ensureNamespace(t, obj.GetNamespace())
				g.Expect(k8sClient.Create(ctx, obj, strict)).To(Succeed())
			})
		}
	}

	// The main sample, read back typed: explicit values kept, defaults filled in.
	orders := &v1alpha1.MySQLCluster{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, orders)).To(Succeed())
	g.Expect(orders.Spec.Version).To(Equal("8.4"))
	g.Expect(orders.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(orders.Spec.Placement.Members).To(Equal([]string{"aws-eu-west-1", "azure-westeurope", "gcp-us-central1"}))
	g.Expect(orders.Spec.Storage.Size.Equal(resource.MustParse("20Gi"))).To(BeTrue())
	g.Expect(orders.Spec.Storage.StorageClassByCloud).To(Equal(defaultClasses))
	g.Expect(orders.Spec.ServiceType).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(orders.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionPolicyRetain))
	g.Expect(orders.Spec.Backup).NotTo(BeNil())
	g.Expect(orders.Spec.Backup.Schedule).To(Equal("H 2 * * *"))
	g.Expect(orders.Spec.Backup.Target.PVC).NotTo(BeNil())

	// A partial storageClassByCloud keeps the defaults of the clouds it leaves out.
	analytics := &v1alpha1.MySQLCluster{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "data", Name: "analytics"}, analytics)).To(Succeed())
	g.Expect(analytics.Spec.Storage.StorageClassByCloud).To(Equal(v1alpha1.StorageClassByCloud{
		AWS: "gp3", Azure: "managed-csi-premium", GCP: "premium-rwo",
	}))
	g.Expect(analytics.Spec.Backup.Retention).To(Equal(int32(7)))
}

var defaultClasses = v1alpha1.StorageClassByCloud{AWS: "gp3", Azure: "managed-csi", GCP: "pd-ssd"}

// strict makes the API server reject unknown fields instead of pruning them, so that a typo in a test object or
// a sample fails the test rather than silently testing something else.
var strict = client.FieldValidation(metav1.FieldValidationStrict)

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, validationNamespace)
	obj := base("defaults", set("spec.backup", map[string]any{
		"schedule": "@daily",
		"target":   map[string]any{"pvc": map[string]any{"size": "5Gi"}},
	}))
	g.Expect(k8sClient.Create(ctx, obj, strict)).To(Succeed())

	got := &v1alpha1.MySQLCluster{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Spec.Replicas).To(Equal(int32(1)))
	g.Expect(got.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionPolicyRetain))
	g.Expect(got.Spec.ServiceType).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(got.Spec.Storage.StorageClassByCloud).To(Equal(defaultClasses))
	g.Expect(got.Spec.Storage.StorageClassName).To(BeNil())
	g.Expect(got.Spec.Backup.Retention).To(Equal(int32(7)))
	g.Expect(got.Spec.Backup.Target.PVC.StorageClassByCloud).To(Equal(defaultClasses))
	g.Expect(got.Spec.Paused).To(BeFalse())
	g.Expect(got.Spec.Engine).To(Equal(v1alpha1.EngineMySQL))
}

// An empty archive gets its two bounds from the schema.
func TestArchiveDefaults(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, validationNamespace)
	obj := base("archive-defaults", set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
		set("spec.backup", map[string]any{"schedule": "@daily", "archive": map[string]any{},
			"target": map[string]any{"s3": map[string]any{"bucket": "b-1", "credentialsSecretRef": map[string]any{"name": "s3"}}}}))
	g.Expect(k8sClient.Create(ctx, obj, strict)).To(Succeed())
	got := &v1alpha1.MySQLCluster{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Spec.Backup.Archive).To(Equal(&v1alpha1.BackupArchive{
		MaxSegmentAge:       &metav1.Duration{Duration: 5 * time.Second},
		MaxRecoveryPointAge: &metav1.Duration{Duration: time.Minute}}))
}

// The engine cannot change: one engine's data directory is not the other's.
func TestEngineIsImmutable(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, validationNamespace)
	g.Expect(k8sClient.Create(ctx, base("engine", set("spec.engine", "MariaDB"), set("spec.version", "10.11")), strict)).To(Succeed())
	err := update("engine", set("spec.engine", "MySQL"), set("spec.version", "8.4"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.engine: Invalid value: \"MySQL\": engine is immutable: the data of one engine cannot be served by the other"))
	g.Expect(update("engine", set("spec.version", "11.4"))).To(Succeed(), "the version may change")
}

// TestQuantityRulesAcceptIntegers checks that the CEL rules on sizes, which read an int-or-string, work when the
// size is written as a plain number of bytes as well as a string.
func TestQuantityRulesAcceptIntegers(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, validationNamespace)
	obj := base("integer-size", set("spec.storage.size", int64(1<<30)), set("spec.backup", map[string]any{
		"schedule": "@daily",
		"target":   map[string]any{"pvc": map[string]any{"size": int64(5 << 30)}},
	}))
	g.Expect(k8sClient.Create(ctx, obj, strict)).To(Succeed())

	got := &v1alpha1.MySQLCluster{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Spec.Storage.Size.Value()).To(Equal(int64(1 << 30)))

	// The same size as a string, then growth from an integer to a string, are updates the rules accept.
	g.Expect(update(obj.GetName(), set("spec.storage.size", "1Gi"))).To(Succeed())
	g.Expect(update(obj.GetName(), set("spec.storage.size", int64(2<<30)))).To(Succeed())
	g.Expect(update(obj.GetName(), set("spec.storage.size", "3Gi"))).To(Succeed())
	err := update(obj.GetName(), set("spec.storage.size", int64(1<<30)))
	g.Expect(err).To(MatchError(ContainSubstring(`spec.storage.size: Invalid value: 1073741824: storage.size may not shrink below 3Gi`)))
	err = update(obj.GetName(), set("spec.backup.target.pvc.size", "4Gi"))
	g.Expect(err).To(MatchError(ContainSubstring(`spec.backup.target.pvc.size: Invalid value: "4Gi": backup.target.pvc.size may not shrink below 5368709120`)))
	g.Expect(update(obj.GetName(), set("spec.backup.target.pvc.size", int64(6<<30)))).To(Succeed())
}

// TestValidEdgeCasesAreAccepted guards against rules that are stricter than the API documents.
func TestValidEdgeCasesAreAccepted(t *testing.T) {
	ensureNamespace(t, validationNamespace)
	cases := []struct {
		name  string
		edits []edit
	}{
		{"name of 45 characters", edits(name("a" + strings.Repeat("b", 43) + "c"))},
		{"name of one letter", edits(name("a"))},
		{"replicas 9", edits(set("spec.replicas", int64(9)))},
		{"version with patch", edits(set("spec.version", "8.0.40"))},
		{"MySQL 8.0", edits(set("spec.engine", "MySQL"), set("spec.version", "8.0"))},
		{"MySQL 9.1", edits(set("spec.version", "9.1"))},
		{"MariaDB 10.6", edits(set("spec.engine", "MariaDB"), set("spec.version", "10.6"))},
		{"MariaDB 10.11.9", edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11.9"))},
		{"MariaDB 11.4", edits(set("spec.engine", "MariaDB"), set("spec.version", "11.4"))},
		{"empty memberSelector selects every member", edits(set("spec.placement", map[string]any{"memberSelector": map[string]any{}}))},
		{"members and memberSelector", edits(set("spec.placement.memberSelector", map[string]any{
			"matchLabels": map[string]any{"mysqlfleet.io/cloud": "gcp"}}))},
		{"member name with digits first", edits(set("spec.placement.members", []any{"1st-member", "b"}))},
		{"no user and no database", edits(del("spec.user"), del("spec.database"))},
		{"database without user", edits(del("spec.user"))},
		{"user ROOT is another user than root", edits(set("spec.user", "ROOT"))},
		{"config of ordinary options", edits(set("spec.config", map[string]any{
			"max_connections": "500", "innodb-buffer-pool-size": "1G", "server_id_bits": "32"}))},
		{"storage size as decimal SI", edits(set("spec.storage.size", "500M"))},
		{"gcs target", edits(set("spec.backup", map[string]any{"schedule": "H H * * *", "target": map[string]any{
			"gcs": map[string]any{"bucket": "my.backups.example.com", "credentialsSecretRef": map[string]any{"name": "gcs"}}}}))},
		{"s3 endpoint with port and path", edits(set("spec.backup", map[string]any{"schedule": "@hourly", "target": map[string]any{
			"s3": map[string]any{"bucket": "b-1", "endpoint": "http://minio.minio:9000/tenant",
				"credentialsSecretRef": map[string]any{"name": "minio"}}}}))},
		{"azure container of 3 characters", edits(set("spec.backup", map[string]any{"schedule": "@daily", "target": map[string]any{
			"azureBlob": map[string]any{"container": "a-1", "credentialsSecretRef": map[string]any{"name": "azure"}}}}))},
		{"physical backups of MariaDB", edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "method": "Physical", "target": map[string]any{
				"pvc": map[string]any{"size": "5Gi"}}}))},
		{"archive of MariaDB to S3 with bounds at their limits", edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "archive": map[string]any{"maxSegmentAge": "10m",
				"maxRecoveryPointAge": "10s"}, "target": map[string]any{"s3": map[string]any{"bucket": "b-1",
				"credentialsSecretRef": map[string]any{"name": "s3"}}}}))},
		{"logical backups of MySQL", edits(set("spec.backup", map[string]any{"schedule": "@daily", "method": "Logical",
			"target": map[string]any{"pvc": map[string]any{"size": "5Gi"}}}))},
		{"paused with NodePort and Delete", edits(set("spec.paused", true), set("spec.serviceType", "NodePort"),
			set("spec.deletionPolicy", "Delete"))},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := base(fmt.Sprintf("valid-%02d", i), tc.edits...)
			NewWithT(t).Expect(k8sClient.Create(ctx, obj, strict)).To(Succeed())
		})
	}
}

// invalidCase is an object that the API server must reject, with an error that tells the user what is wrong.
type invalidCase struct {
	name string
	// edits turn the valid base object into the invalid one.
	edits []edit
	// want is a substring of the API server's error message.
	want string
}

func TestInvalidObjectsAreRejected(t *testing.T) {
	ensureNamespace(t, validationNamespace)

	// The base object is valid: every case below fails for the one reason it names.
	NewWithT(t).Expect(k8sClient.Create(ctx, base("base-is-valid"), strict)).To(Succeed())

	pvc := map[string]any{"size": "10Gi"}
	s3 := map[string]any{"bucket": "backups", "credentialsSecretRef": map[string]any{"name": "s3"}}
	cases := []invalidCase{
		{name: "replicas 0", edits: edits(set("spec.replicas", int64(0))),
			want: "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"},
		{name: "replicas 10", edits: edits(set("spec.replicas", int64(10))),
			want: "spec.replicas: Invalid value: 10: spec.replicas in body should be less than or equal to 9"},
		{name: "version latest", edits: edits(set("spec.version", "latest")),
			want: "spec.version: Invalid value: \"latest\": version must be a MySQL version number such as 8.4 or 8.4.3, not an image tag such as latest"},
		{name: "version 8", edits: edits(set("spec.version", "8")),
			want: "spec.version: Invalid value: \"8\": version must be a MySQL version number such as 8.4 or 8.4.3"},
		{name: "MySQL 5.7", edits: edits(set("spec.version", "5.7")),
			want: "spec.version: Invalid value: MySQL version must be 8.0 or later, such as 8.0 or 8.4, not 5.7"},
		{name: "MariaDB 10.5", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "10.5")),
			want: "spec.version: Invalid value: MariaDB version must be 10.6 or later, such as 10.11 or 11.4, not 10.5"},
		{name: "MariaDB with a MySQL version", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "8.4")),
			want: "MariaDB version must be 10.6 or later, such as 10.11 or 11.4, not 8.4"},
		{name: "unknown engine", edits: edits(set("spec.engine", "Postgres")),
			want: "spec.engine: Unsupported value: \"Postgres\": supported values: \"MySQL\", \"MariaDB\""},
		{name: "version missing", edits: edits(del("spec.version")),
			want: "spec.version: Required value"},
		{name: "placement missing", edits: edits(del("spec.placement")),
			want: "spec.placement: Required value"},
		{name: "placement empty", edits: edits(set("spec.placement", map[string]any{})),
			want: "spec.placement: Invalid value: placement needs members (a non-empty list of member names) or memberSelector"},
		{name: "placement members empty", edits: edits(set("spec.placement", map[string]any{"members": []any{}})),
			want: "spec.placement: Invalid value: placement needs members (a non-empty list of member names) or memberSelector"},
		{name: "member name upper case", edits: edits(set("spec.placement.members", []any{"AWS-eu-west-1"})),
			want: "spec.placement.members[0]: Invalid value: \"AWS-eu-west-1\": member names are lower case"},
		{name: "member listed twice", edits: edits(set("spec.placement.members", []any{"a", "a"})),
			want: "spec.placement.members[1]: Duplicate value: \"a\""},
		{name: "storage missing", edits: edits(del("spec.storage")),
			want: "spec.storage: Required value"},
		{name: "storage size missing", edits: edits(del("spec.storage.size")),
			want: "spec.storage.size: Required value"},
		{name: "storage size 0", edits: edits(set("spec.storage.size", "0")),
			want: "spec.storage.size: Invalid value: \"0\": storage.size must be a size greater than zero, such as 20Gi"},
		{name: "storage size integer 0", edits: edits(set("spec.storage.size", int64(0))),
			want: "spec.storage.size: Invalid value: 0: storage.size must be a size greater than zero, such as 20Gi"},
		{name: "storage size -1Gi", edits: edits(set("spec.storage.size", "-1Gi")),
			want: "spec.storage.size: Invalid value: \"-1Gi\": storage.size must be a size greater than zero, such as 20Gi"},
		{name: "storage size ten gigs", edits: edits(set("spec.storage.size", "ten gigs")),
			want: "spec.storage.size: Invalid value: \"ten gigs\": storage.size must be a size greater than zero, such as 20Gi"},
		{name: "storage class name empty", edits: edits(set("spec.storage.storageClassName", "")),
			want: "spec.storage.storageClassName: Invalid value: \"\": spec.storage.storageClassName in body should be at least 1 chars long"},
		{name: "backup with pvc and s3", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "target": map[string]any{"pvc": pvc, "s3": s3}})),
			want: "spec.backup.target: Invalid value: backup.target needs exactly one of pvc, s3, gcs or azureBlob"},
		{name: "backup without target", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "target": map[string]any{}})),
			want: "spec.backup.target: Invalid value: backup.target needs exactly one of pvc, s3, gcs or azureBlob"},
		{name: "backup schedule missing", edits: edits(set("spec.backup", map[string]any{
			"target": map[string]any{"pvc": pvc}})),
			want: "spec.backup.schedule: Required value"},
		{name: "backup retention 0", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "retention": int64(0), "target": map[string]any{"pvc": pvc}})),
			want: "spec.backup.retention: Invalid value: 0: spec.backup.retention in body should be greater than or equal to 1"},
		{name: "backup pvc size 0", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "target": map[string]any{"pvc": map[string]any{"size": "0"}}})),
			want: "spec.backup.target.pvc.size: Invalid value: \"0\": backup.target.pvc.size must be a size greater than zero, such as 50Gi"},
		{name: "s3 endpoint ftp", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "target": map[string]any{"s3": map[string]any{
				"bucket": "backups", "endpoint": "ftp://x", "credentialsSecretRef": map[string]any{"name": "s3"}}}})),
			want: "spec.backup.target.s3.endpoint: Invalid value: \"ftp://x\": endpoint must be an http:// or https:// URL with a host"},
		{name: "s3 without credentials", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "target": map[string]any{"s3": map[string]any{"bucket": "backups"}}})),
			want: "spec.backup.target.s3.credentialsSecretRef: Required value"},
		{name: "azureBlob container Bad_Name", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "target": map[string]any{"azureBlob": map[string]any{
				"container": "Bad_Name", "credentialsSecretRef": map[string]any{"name": "azure"}}}})),
			want: "spec.backup.target.azureBlob.container: Invalid value: \"Bad_Name\": container must be an Azure container name"},
		{name: "physical backups of MySQL", edits: edits(set("spec.backup", map[string]any{
			"schedule": "@daily", "method": "Physical", "target": map[string]any{"pvc": pvc}})),
			want: "spec.backup.method: Invalid value: backup.method Physical needs engine MariaDB: MySQL's physical backups (XtraBackup, CLONE) are not implemented"},
		{name: "archive of MySQL", edits: edits(set("spec.backup", map[string]any{"schedule": "@daily",
			"archive": map[string]any{}, "target": map[string]any{"s3": map[string]any{"bucket": "b-1",
				"credentialsSecretRef": map[string]any{"name": "s3"}}}})),
			want: "spec.backup.archive: Invalid value: backup.archive needs engine MariaDB"},
		{name: "archive to a volume", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "archive": map[string]any{}, "target": map[string]any{"pvc": pvc}})),
			want: "spec.backup.archive: Invalid value: backup.archive needs an object store target (s3, gcs or azureBlob)"},
		{name: "archive segments older than 10m", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "archive": map[string]any{"maxSegmentAge": "11m"},
				"target": map[string]any{"s3": map[string]any{"bucket": "b-1", "credentialsSecretRef": map[string]any{"name": "s3"}}}})),
			want: "spec.backup.archive.maxSegmentAge: Invalid value: \"11m\": archive.maxSegmentAge must be a duration between 1s and 10m, such as 5s"},
		{name: "archive segment age not a duration", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "archive": map[string]any{"maxSegmentAge": "5 minutes"},
				"target": map[string]any{"s3": map[string]any{"bucket": "b-1", "credentialsSecretRef": map[string]any{"name": "s3"}}}})),
			want: "spec.backup.archive.maxSegmentAge: Invalid value: \"5 minutes\": archive.maxSegmentAge must be a duration between 1s and 10m, such as 5s"},
		{name: "archive recovery point bound of 1s", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "archive": map[string]any{"maxRecoveryPointAge": "1s"},
				"target": map[string]any{"s3": map[string]any{"bucket": "b-1", "credentialsSecretRef": map[string]any{"name": "s3"}}}})),
			want: "archive.maxRecoveryPointAge must be a duration between 10s and 24h, such as 1m"},
		{name: "backup method Snapshot", edits: edits(set("spec.engine", "MariaDB"), set("spec.version", "10.11"),
			set("spec.backup", map[string]any{"schedule": "@daily", "method": "Snapshot", "target": map[string]any{"pvc": pvc}})),
			want: "spec.backup.method: Unsupported value: \"Snapshot\": supported values: \"Logical\", \"Physical\""},
		{name: "serviceType Ingress", edits: edits(set("spec.serviceType", "Ingress")),
			want: "spec.serviceType: Unsupported value: \"Ingress\": supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\""},
		{name: "deletionPolicy Keep", edits: edits(set("spec.deletionPolicy", "Keep")),
			want: "spec.deletionPolicy: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\""},
		{name: "user without database", edits: edits(del("spec.database")),
			want: "spec.user: Invalid value: user needs database: the user is granted all privileges on it"},
		{name: "user root", edits: edits(set("spec.user", "root")),
			want: "spec.user: Invalid value: \"root\": user may not be root, mysqlfleet_admin or mysqlfleet_repl: mysqlfleet creates and uses those accounts"},
		{name: "user mysqlfleet_repl", edits: edits(set("spec.user", "mysqlfleet_repl")),
			want: "spec.user: Invalid value: \"mysqlfleet_repl\": user may not be root, mysqlfleet_admin or mysqlfleet_repl"},
		{name: "primaries ordinal past replicas", edits: edits(set("spec.replicas", int64(3)), set("spec.primaries", map[string]any{"a": int64(3)})),
			want: "spec.primaries: Invalid value: primaries name an ordinal below replicas"},
		{name: "primaries key not a member name", edits: edits(set("spec.primaries", map[string]any{"AWS": int64(0)})),
			want: "primaries keys are member names"},
		{name: "primaries negative ordinal", edits: edits(set("spec.primaries", map[string]any{"a": int64(-1)})),
			want: "primaries values are Pod ordinals: 0 or more"},
		{name: "config read_only", edits: edits(set("spec.config", map[string]any{"read-only": "OFF"})),
			want: "spec.config: Invalid value: config may not set server_id, GTID, binary log, read-only"},
		{name: "config server-id", edits: edits(set("spec.config", map[string]any{"server-id": "7"})),
			want: "spec.config: Invalid value: config may not set server_id, GTID, binary log, read-only or replication start options, datadir, port, socket, bind_address or the administrative port (extra_port, admin_port, admin_address): mysqlfleet manages them"},
		{name: "config log_bin", edits: edits(set("spec.config", map[string]any{"log_bin": "OFF"})),
			want: "spec.config: Invalid value: config may not set server_id, GTID, binary log, read-only or replication start options, datadir, port, socket, bind_address or the administrative port (extra_port, admin_port, admin_address): mysqlfleet manages them"},
		{name: "config extra-port", edits: edits(set("spec.config", map[string]any{"extra-port": "3307"})),
			want: "spec.config: Invalid value: config may not set server_id, GTID, binary log, read-only or replication start options, datadir, port, socket, bind_address or the administrative port (extra_port, admin_port, admin_address): mysqlfleet manages them"},
		{name: "config admin_address", edits: edits(set("spec.config", map[string]any{"admin_address": "0.0.0.0"})),
			want: "or the administrative port (extra_port, admin_port, admin_address): mysqlfleet manages them"},
		{name: "config key upper case and space", edits: edits(set("spec.config", map[string]any{"Max Connections": "10"})),
			want: "spec.config: Invalid value: config keys must be mysqld option names: lower case letters, digits, '_' or '-'"},
		{name: "name of 46 characters", edits: edits(name(strings.Repeat("a", 46))),
			want: "metadata.name must be a DNS-1035 label of at most 45 characters"},
		{name: "name starting with a digit", edits: edits(name("1orders")),
			want: "metadata.name must be a DNS-1035 label of at most 45 characters"},
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := base(fmt.Sprintf("invalid-%02d", i), tc.edits...)
			err := k8sClient.Create(ctx, obj, strict)
			g.Expect(err).To(HaveOccurred(), "the API server accepted the invalid object")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid (422) error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			t.Logf("REJECTED %s: %s", tc.name, err)
		})
	}
}

// TestStorageMayOnlyGrow checks the transition rules on sizes: an update that grows a volume is accepted, one that
// shrinks it is rejected.
func TestStorageMayOnlyGrow(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, validationNamespace)
	obj := base("grow", set("spec.storage.size", "20Gi"), set("spec.backup", map[string]any{
		"schedule": "@daily",
		"target":   map[string]any{"pvc": map[string]any{"size": "50Gi"}},
	}))
	g.Expect(k8sClient.Create(ctx, obj, strict)).To(Succeed())

	err := update("grow", set("spec.storage.size", "10Gi"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid (422) error, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.storage.size: Invalid value: "10Gi": storage.size may not shrink below 20Gi: volumes can only grow`))
	t.Logf("REJECTED storage size 20Gi -> 10Gi on update: %s", err)

	err = update("grow", set("spec.backup.target.pvc.size", "40Gi"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`spec.backup.target.pvc.size: Invalid value: "40Gi": backup.target.pvc.size may not shrink below 50Gi: volumes can only grow`))
	t.Logf("REJECTED backup pvc size 50Gi -> 40Gi on update: %s", err)

	g.Expect(update("grow", set("spec.storage.size", "30Gi"))).To(Succeed())
	g.Expect(update("grow", set("spec.backup.target.pvc.size", "60Gi"))).To(Succeed())
	// An equal size in other units is no shrink.
	g.Expect(update("grow", set("spec.storage.size", "30720Mi"))).To(Succeed())

	got := &v1alpha1.MySQLCluster{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Spec.Storage.Size.Equal(resource.MustParse("30Gi"))).To(BeTrue())
}

// TestUnknownFieldsArePruned documents what happens to a field the schema does not know, such as a cloud that
// storageClassByCloud has no entry for: strict field validation (kubectl's default) rejects it, and a client that
// asks for none (the API server's default, Warn) has it dropped with a warning. That is intended: the clouds are
// the fields of a struct, and a new cloud is an API change.
func TestUnknownFieldsArePruned(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, validationNamespace)
	classes := set("spec.storage.storageClassByCloud", map[string]any{"oracle": "oci-bv", "aws": "io2"})

	err := k8sClient.Create(ctx, base("unknown-cloud", classes), strict)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`unknown field "spec.storage.storageClassByCloud.oracle"`))
	t.Logf("REJECTED unknown cloud in storageClassByCloud (strict): %s", err)

	obj := base("pruned", classes)
	g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MySQLCluster"))
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	stored, _, err := unstructured.NestedStringMap(got.Object, "spec", "storage", "storageClassByCloud")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored).To(Equal(map[string]string{"aws": "io2", "azure": "managed-csi", "gcp": "pd-ssd"}))
}

// base returns a valid MySQLCluster in the validation namespace, changed by edits.
func base(name string, edits ...edit) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "MySQLCluster",
		"metadata":   map[string]any{"name": name, "namespace": validationNamespace},
		"spec": map[string]any{
			"version":   "8.4",
			"database":  "app",
			"user":      "app",
			"placement": map[string]any{"members": []any{"aws-eu-west-1"}},
			"storage":   map[string]any{"size": "10Gi"},
		},
	}}
	for _, e := range edits {
		e(obj)
	}
	return obj
}

// edit changes an unstructured MySQLCluster, so that a case can write values a typed object cannot hold.
type edit func(*unstructured.Unstructured)

func edits(e ...edit) []edit { return e }

// set sets the field at a dotted path, e.g. "spec.storage.size".
func set(path string, value any) edit {
	return func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, value, strings.Split(path, ".")...); err != nil {
			panic(fmt.Sprintf("set %s: %v", path, err))
		}
	}
}

// del removes the field at a dotted path.
func del(path string) edit {
	return func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, strings.Split(path, ".")...)
	}
}

func name(n string) edit { return func(u *unstructured.Unstructured) { u.SetName(n) } }

// update reads the named object in the validation namespace, edits it and writes it back.
func update(name string, edits ...edit) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MySQLCluster"))
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: validationNamespace, Name: name}, obj); err != nil {
		return err
	}
	for _, e := range edits {
		e(obj)
	}
	return k8sClient.Update(ctx, obj, strict)
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// readObjects parses every YAML document of a file into an unstructured object.
func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue // a document of comments only
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			t.Fatalf("decoding %s: %v", file, err)
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		t.Fatalf("%s holds no object", file)
	}
	return objs
}
