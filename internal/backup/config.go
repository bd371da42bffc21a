package backup

import (
	"context"
	"fmt"
	"io"
)

// Target kinds, the values of --target (BACKUP_TARGET).
const (
	TargetDir   = "dir"
	TargetS3    = "s3"
	TargetGCS   = "gcs"
	TargetAzure = "azblob"
)

// StoreConfig selects and configures one store, as cmd/backup reads it from flags and the environment.
type StoreConfig struct {
	// Target is one of TargetDir, TargetS3, TargetGCS, TargetAzure.
	Target string
	// Dir is the directory of a dir target.
	Dir string
	// Bucket is the S3 or GCS bucket, Container the Azure container; Prefix is put before every key.
	Bucket, Container, Prefix string
	// Endpoint overrides the service URL (S3-compatible services, emulators, Azure's account URL).
	Endpoint string
	S3       S3Config
	GCS      GCSConfig
	Azure    AzureConfig
}

// OpenStore builds the store a StoreConfig names. The returned closer releases its clients.
func OpenStore(ctx context.Context, c StoreConfig) (Store, io.Closer, error) {
	switch c.Target {
	case TargetDir:
		if c.Dir == "" {
			return nil, nil, fmt.Errorf("the dir target needs a directory")
		}
		return DirStore{Dir: c.Dir}, nopCloser{}, nil
	case TargetS3:
		s3c := c.S3
		s3c.Bucket, s3c.Prefix, s3c.Endpoint = c.Bucket, c.Prefix, c.Endpoint
		if s3c.Bucket == "" {
			return nil, nil, fmt.Errorf("the s3 target needs a bucket")
		}
		s, err := NewS3Store(ctx, s3c)
		return s, nopCloser{}, err
	case TargetGCS:
		g := c.GCS
		g.Bucket, g.Prefix, g.Endpoint = c.Bucket, c.Prefix, c.Endpoint
		if g.Bucket == "" {
			return nil, nil, fmt.Errorf("the gcs target needs a bucket")
		}
		s, err := NewGCSStore(ctx, g)
		if err != nil {
			return nil, nil, err
		}
		return s, s, nil
	case TargetAzure:
		a := c.Azure
		a.Container, a.Prefix, a.Endpoint = c.Container, c.Prefix, c.Endpoint
		if a.Container == "" {
			return nil, nil, fmt.Errorf("the azblob target needs a container")
		}
		s, err := NewAzureStore(a)
		return s, nopCloser{}, err
	}
	return nil, nil, fmt.Errorf("unknown backup target %q: use %s, %s, %s or %s", c.Target, TargetDir, TargetS3,
		TargetGCS, TargetAzure)
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
