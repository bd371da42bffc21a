package backup

import (
	"context"
	"errors"
	"fmt"
	"io"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// GCSConfig says which bucket to use and how to reach it. Credentials come from CredentialsJSON when set, else from
// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS naming a service account key file, or workload
// identity).
type GCSConfig struct {
	Bucket string
	Prefix string
	// Endpoint is the JSON API URL of a GCS emulator (such as fake-gcs-server's http://host:port/storage/v1/);
	// empty means Google's. Reads then use the JSON API too, which emulators serve.
	Endpoint string
	// Anonymous sends no credentials, for an emulator. It wins over CredentialsJSON.
	Anonymous bool
	// CredentialsJSON is a service account key file's content (see StoreCredentials). Only that type is
	// accepted: the others name URLs and files that the client would read, which a key from a user's Secret
	// must not choose.
	CredentialsJSON []byte
	// ChunkSize is the size of a resumable upload's chunks, each held in memory once; zero means 16 MiB.
	ChunkSize int
}

// GCSStore keeps backups in a Google Cloud Storage bucket.
type GCSStore struct {
	client    *storage.Client
	bucket    *storage.BucketHandle
	name      string
	prefix    string
	chunkSize int
}

var _ Store = (*GCSStore)(nil)

// NewGCSStore builds the client. Close it when done.
func NewGCSStore(ctx context.Context, c GCSConfig) (*GCSStore, error) {
	var opts []option.ClientOption
	if c.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(c.Endpoint), storage.WithJSONReads())
	}
	switch {
	case c.Anonymous:
		opts = append(opts, option.WithoutAuthentication())
	case c.CredentialsJSON != nil:
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, c.CredentialsJSON))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to create the GCS client: %w", err)
	}
	chunk := c.ChunkSize
	if chunk == 0 {
		chunk = 16 << 20
	}
	return &GCSStore{client: client, bucket: client.Bucket(c.Bucket), name: c.Bucket, prefix: c.Prefix,
		chunkSize: chunk}, nil
}

// Close releases the client.
func (s *GCSStore) Close() error { return s.client.Close() }

func (s *GCSStore) String() string { return "gs://" + joinKey(s.name, s.prefix) }

// Put writes through a resumable upload, which GCS finalises only when the writer is closed after r's EOF.
// On any failure the writer's context is cancelled instead of closing it: closing would finalise the object
// with what was sent so far.
func (s *GCSStore) Put(ctx context.Context, key string, r io.Reader) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.bucket.Object(joinKey(s.prefix, key)).NewWriter(wctx)
	w.ChunkSize = s.chunkSize
	if _, err := io.Copy(w, r); err != nil {
		cancel()
		_ = w.Close()
		return fmt.Errorf("failed to upload %s/%s: %w", s, key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("failed to upload %s/%s: %w", s, key, err)
	}
	return nil
}

func (s *GCSStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := s.bucket.Object(joinKey(s.prefix, key)).NewReader(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil, fmt.Errorf("%s/%s: %w", s, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to download %s/%s: %w", s, key, err)
	}
	return r, nil
}

func (s *GCSStore) List(ctx context.Context) ([]Object, error) {
	var objs []Object
	lp := listPrefix(s.prefix)
	it := s.bucket.Objects(ctx, &storage.Query{Prefix: lp})
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to list %s: %w", s, err)
		}
		// Updated, not Created: a metadata update counts too, which errs towards keeping an object longer.
		modified := attrs.Updated
		if modified.IsZero() {
			modified = attrs.Created
		}
		objs = append(objs, Object{Key: attrs.Name[len(lp):], LastModified: modified})
	}
}

func (s *GCSStore) Delete(ctx context.Context, key string) error {
	err := s.bucket.Object(joinKey(s.prefix, key)).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("failed to delete %s/%s: %w", s, key, err)
	}
	return nil
}
