package backup_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/test/backuptest"
)

// The object stores of these tests are real servers (backuptest): versitygw and fake-gcs-server.

const bucket = backuptest.Bucket

type s3Server struct{ *backuptest.S3Server }

func startS3(t testing.TB) *s3Server { return &s3Server{backuptest.StartS3(t)} }

func (s *s3Server) store(t testing.TB, prefix string, partSize int64) *backup.S3Store {
	t.Helper()
	st, err := backup.NewS3Store(context.Background(), backup.S3Config{
		Bucket: bucket, Prefix: prefix, Endpoint: s.Endpoint, PartSize: partSize,
		Credentials: credentials.NewStaticCredentialsProvider(backuptest.S3AccessKey, backuptest.S3SecretKey, ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// keys lists every object in the bucket under prefix, whatever the store makes of them.
func (s *s3Server) keys(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := s.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket),
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
	out, err := s.Client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
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

type gcsServer struct{ *backuptest.GCSServer }

func startGCS(t testing.TB) *gcsServer { return &gcsServer{backuptest.StartGCS(t)} }

func (g *gcsServer) store(t testing.TB, prefix string) *backup.GCSStore {
	t.Helper()
	st, err := backup.NewGCSStore(context.Background(), backup.GCSConfig{Bucket: bucket, Prefix: prefix,
		Endpoint: g.Endpoint, Anonymous: true, ChunkSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
