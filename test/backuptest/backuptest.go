// Package backuptest runs real object-store servers for tests: versitygw (an S3 gateway, posix backend) and
// fake-gcs-server (the GCS JSON API), as processes on loopback, from binaries that hack/tools.sh builds, pinned,
// from the Go module proxy. A test that needs one fails, never skips, when it is missing: run `make test-tools`.
// No Azure Blob server can be had here (Azurite is Node.js).
package backuptest

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
)

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

// Credentials and bucket of the servers.
const (
	S3AccessKey = "mysqlfleet-test"
	S3SecretKey = "mysqlfleet-test-secret"
	Bucket      = "backups"
)

// S3Server is a versitygw process with one bucket, Bucket.
type S3Server struct {
	Endpoint string
	Client   *s3.Client
}

// StartS3 runs versitygw until the test ends.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	port := freePort(t)
	root, sidecar := t.TempDir(), t.TempDir()
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	// Metadata in a sidecar directory rather than extended attributes, which not every test filesystem has.
	startProcess(t, "versitygw", []string{"--port", "127.0.0.1:" + strconv.Itoa(port), "--access", S3AccessKey,
		"--secret", S3SecretKey, "posix", "--sidecar", sidecar, root}, answers(endpoint))
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(S3AccessKey, S3SecretKey, ""),
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(Bucket)}); err != nil {
		t.Fatalf("failed to create bucket: %v", err)
	}
	return &S3Server{Endpoint: endpoint, Client: client}
}

// Env is what the backup runner reads to reach the server: the credentials of a target's credentials Secret.
func (s *S3Server) Env() map[string]string {
	return map[string]string{"AWS_ACCESS_KEY_ID": S3AccessKey, "AWS_SECRET_ACCESS_KEY": S3SecretKey,
		"AWS_REGION": "us-east-1"}
}

// GCSServer is a fake-gcs-server process with one bucket, Bucket.
type GCSServer struct {
	Endpoint string
}

// StartGCS runs fake-gcs-server until the test ends.
func StartGCS(t testing.TB) *GCSServer {
	t.Helper()
	port := freePort(t)
	host := "127.0.0.1:" + strconv.Itoa(port)
	startProcess(t, "fake-gcs-server", []string{"-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-public-host", host, "-external-url", "http://" + host, "-backend", "memory", "-log-level", "warn"},
		answers("http://"+host+"/storage/v1/b"))
	g := &GCSServer{Endpoint: "http://" + host + "/storage/v1/"}
	client, err := storage.NewClient(context.Background(), option.WithEndpoint(g.Endpoint),
		option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	if err := client.Bucket(Bucket).Create(context.Background(), "test", nil); err != nil {
		t.Fatalf("failed to create bucket: %v", err)
	}
	return g
}

// Env is what the backup runner reads to reach the emulator: no credentials at all.
func (g *GCSServer) Env() map[string]string {
	return map[string]string{"BACKUP_GCS_ANONYMOUS": "true"}
}
