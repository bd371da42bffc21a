package backup

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3Config says which bucket to use and how to reach it. Credentials are not here: the SDK's default chain reads
// them (see the package documentation for the keys).
type S3Config struct {
	Bucket string
	Prefix string
	// Endpoint is the URL of an S3-compatible service (MinIO, Ceph, versitygw...); empty means AWS. With an
	// endpoint, requests use path-style addressing (http://host/bucket/key), which such services expect.
	Endpoint string
	// Region defaults to AWS_REGION, then us-east-1 (which S3-compatible services accept).
	Region string
	// PartSize is the size of a multipart upload's parts; zero means 16 MiB. The upload holds up to
	// Concurrency parts in memory, never the whole dump.
	PartSize int64
	// Concurrency is how many parts upload at once; zero means 4.
	Concurrency int
	// Credentials overrides the SDK's default chain; nil keeps it (the usual case).
	Credentials aws.CredentialsProvider
}

// S3Store keeps backups in an S3 or S3-compatible bucket.
type S3Store struct {
	client   *s3.Client
	uploader *transfermanager.Client
	bucket   string
	prefix   string
}

var _ Store = (*S3Store)(nil)

const (
	defaultS3PartSize    = 16 << 20
	defaultS3Concurrency = 4
)

// NewS3Store builds the client from the SDK's default configuration (environment, shared files, web identity).
func NewS3Store(ctx context.Context, c S3Config) (*S3Store, error) {
	var opts []func(*config.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(c.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
			o.UsePathStyle = true
			// Many S3-compatible services reject the SDK's default trailing checksums on every upload; ask
			// for them only where the API requires one. Our own SHA-256 covers the data end to end.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	uploader := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes = c.PartSize
		if o.PartSizeBytes == 0 {
			o.PartSizeBytes = defaultS3PartSize
		}
		o.Concurrency = c.Concurrency
		if o.Concurrency == 0 {
			o.Concurrency = defaultS3Concurrency
		}
		if c.Endpoint != "" {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	})
	return &S3Store{client: client, uploader: uploader, bucket: c.Bucket, prefix: c.Prefix}, nil
}

func (s *S3Store) String() string { return "s3://" + joinKey(s.bucket, s.prefix) }

// Put uploads in one request when the object fits in a part, in a multipart upload otherwise. A multipart
// upload is completed only after r's EOF; when r fails or ctx ends, the upload manager aborts it, so S3 keeps
// no object and (unless the abort itself fails) no parts.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader) error {
	_, err := s.uploader.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(joinKey(s.prefix, key)),
		Body:   r,
	})
	if err != nil {
		return fmt.Errorf("failed to upload %s/%s: %w", s, key, err)
	}
	return nil
}

func (s *S3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(joinKey(s.prefix, key)),
	})
	if err != nil {
		var nsk *s3types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, fmt.Errorf("%s/%s: %w", s, key, ErrNotFound)
		}
		return nil, fmt.Errorf("failed to download %s/%s: %w", s, key, err)
	}
	return out.Body, nil
}

func (s *S3Store) List(ctx context.Context) ([]Object, error) {
	var objs []Object
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(listPrefix(s.prefix)),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("failed to list %s: %w", s, err)
		}
		for _, o := range page.Contents {
			objs = append(objs, Object{Key: aws.ToString(o.Key)[len(listPrefix(s.prefix)):],
				LastModified: aws.ToTime(o.LastModified)})
		}
	}
	return objs, nil
}

func (s *S3Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(joinKey(s.prefix, key)),
	})
	if err != nil {
		return fmt.Errorf("failed to delete %s/%s: %w", s, key, err)
	}
	return nil
}

// Client is the underlying S3 client, for tests that look behind the store (incomplete multipart uploads).
func (s *S3Store) Client() *s3.Client { return s.client }
