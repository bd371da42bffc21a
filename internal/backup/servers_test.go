package backup_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/option"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// The object stores of these tests are real servers, run as processes on loopback from binaries that
// hack/tools.sh builds, pinned, from the Go module proxy: versitygw (an S3 gateway, posix backend) and
// fake-gcs-server (the GCS JSON API). A test that needs one fails, never skips, when it is missing: run
// `make test-tools`. No Azure Blob server can be had here (Azurite is Node.js); see azblob_test.go.

// tool finds a test tool in $MYSQLFLEET_BIN or the module's ./bin, or fails the test.
func tool(t testing.TB, name string) string {
	t.Helper()
	dirs := []string{os.Getenv("MYSQLFLEET_BIN")}
	if root, err := moduleRoot(); err == nil {
		dirs = append(dirs, filepath.Join(root, "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s not found in $MYSQLFLEET_BIN or ./bin: run `make test-tools` (hack/tools.sh %s)", name, name)
	return ""
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess runs a server until the test ends (killed with the test binary too) and waits until ready
// answers true.
func startProcess(t testing.TB, name string, args []string, ready func() bool) {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	logFile, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("%s exited: %s\n%s", name, cmd.ProcessState, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("%s did not become ready\n%s", name, log)
		}
	}
}

func answers(url string) func() bool {
	return func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return true
	}
}

const (
	s3Access = "mysqlfleet-test"
	s3Secret = "mysqlfleet-test-secret"
	bucket   = "backups"
)

// s3Server is a versitygw process with one bucket.
type s3Server struct {
	endpoint string
	client   *s3.Client
}

func startS3(t testing.TB) *s3Server {
	t.Helper()
	port := freePort(t)
	root, sidecar := t.TempDir(), t.TempDir()
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	// Metadata in a sidecar directory rather than extended attributes, which not every test filesystem has.
	startProcess(t, "versitygw", []string{"--port", "127.0.0.1:" + strconv.Itoa(port), "--access", s3Access,
		"--secret", s3Secret, "posix", "--sidecar", sidecar, root}, answers(endpoint))
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s3Access, s3Secret, ""),
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("failed to create bucket: %v", err)
	}
	return &s3Server{endpoint: endpoint, client: client}
}

func (s *s3Server) store(t testing.TB, prefix string, partSize int64) *backup.S3Store {
	t.Helper()
	st, err := backup.NewS3Store(context.Background(), backup.S3Config{
		Bucket: bucket, Prefix: prefix, Endpoint: s.endpoint, PartSize: partSize,
		Credentials: credentials.NewStaticCredentialsProvider(s3Access, s3Secret, ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// keys lists every object in the bucket under prefix, whatever the store makes of them.
func (s *s3Server) keys(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := s.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket),
		Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// uploads lists the incomplete multipart uploads under prefix.
func (s *s3Server) uploads(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := s.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// gcsServer is a fake-gcs-server process with one bucket.
type gcsServer struct {
	endpoint string
}

func startGCS(t testing.TB) *gcsServer {
	t.Helper()
	port := freePort(t)
	host := "127.0.0.1:" + strconv.Itoa(port)
	startProcess(t, "fake-gcs-server", []string{"-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-public-host", host, "-external-url", "http://" + host, "-backend", "memory", "-log-level", "warn"},
		answers("http://"+host+"/storage/v1/b"))
	g := &gcsServer{endpoint: "http://" + host + "/storage/v1/"}
	client, err := storage.NewClient(context.Background(), option.WithEndpoint(g.endpoint),
		option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	if err := client.Bucket(bucket).Create(context.Background(), "test", nil); err != nil {
		t.Fatalf("failed to create bucket: %v", err)
	}
	return g
}

func (g *gcsServer) store(t testing.TB, prefix string) *backup.GCSStore {
	t.Helper()
	st, err := backup.NewGCSStore(context.Background(), backup.GCSConfig{Bucket: bucket, Prefix: prefix,
		Endpoint: g.endpoint, Anonymous: true, ChunkSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
