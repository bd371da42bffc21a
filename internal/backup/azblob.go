package backup

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// AzureConfig says which container to use and how to reach it. Exactly one way to authenticate is used, in this
// order: ConnectionString; AccountName with AccountKey (shared key); SASToken; none (a public or emulated
// container).
type AzureConfig struct {
	Container string
	Prefix    string
	// Endpoint is the service URL, https://ACCOUNT.blob.core.windows.net by default.
	Endpoint         string
	AccountName      string
	AccountKey       string
	SASToken         string
	ConnectionString string
	// BlockSize is the size of the staged blocks, each held in memory once; zero means 16 MiB, and the client
	// takes no less than 1 MiB. What fits in one block goes in one Put Blob request.
	BlockSize int64
	// Concurrency is how many blocks upload at once; zero means 4.
	Concurrency int
}

// AzureStore keeps backups in an Azure Blob Storage container.
type AzureStore struct {
	client    *azblob.Client
	container string
	prefix    string
	blockSize int64
	conc      int
}

var _ Store = (*AzureStore)(nil)

// NewAzureStore builds the client.
func NewAzureStore(c AzureConfig) (*AzureStore, error) {
	endpoint := c.Endpoint
	if endpoint == "" && c.AccountName != "" {
		endpoint = "https://" + c.AccountName + ".blob.core.windows.net/"
	}
	var client *azblob.Client
	var err error
	switch {
	case c.ConnectionString != "":
		client, err = azblob.NewClientFromConnectionString(c.ConnectionString, nil)
	case c.AccountName != "" && c.AccountKey != "":
		var cred *azblob.SharedKeyCredential
		if cred, err = azblob.NewSharedKeyCredential(c.AccountName, c.AccountKey); err == nil {
			client, err = azblob.NewClientWithSharedKeyCredential(endpoint, cred, nil)
		}
	case endpoint == "":
		return nil, fmt.Errorf("azure blob: no endpoint, account name or connection string")
	case c.SASToken != "":
		client, err = azblob.NewClientWithNoCredential(strings.TrimSuffix(endpoint, "/")+"/?"+
			strings.TrimPrefix(c.SASToken, "?"), nil)
	default:
		client, err = azblob.NewClientWithNoCredential(endpoint, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to create the Azure Blob client: %w", err)
	}
	s := &AzureStore{client: client, container: c.Container, prefix: c.Prefix, blockSize: c.BlockSize,
		conc: c.Concurrency}
	if s.blockSize == 0 {
		s.blockSize = 16 << 20
	}
	if s.conc == 0 {
		s.conc = 4
	}
	return s, nil
}

func (s *AzureStore) String() string { return "azblob://" + joinKey(s.container, s.prefix) }

// Put stages blocks as r yields them and commits the block list only after r's EOF: until then the blob does
// not exist (uncommitted blocks are invisible and expire after a week).
func (s *AzureStore) Put(ctx context.Context, key string, r io.Reader) error {
	_, err := s.client.UploadStream(ctx, s.container, joinKey(s.prefix, key), r, &azblob.UploadStreamOptions{
		BlockSize:   s.blockSize,
		Concurrency: s.conc,
	})
	if err != nil {
		return fmt.Errorf("failed to upload %s/%s: %w", s, key, err)
	}
	return nil
}

func (s *AzureStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	resp, err := s.client.DownloadStream(ctx, s.container, joinKey(s.prefix, key), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return nil, fmt.Errorf("%s/%s: %w", s, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to download %s/%s: %w", s, key, err)
	}
	return resp.Body, nil
}

func (s *AzureStore) List(ctx context.Context) ([]Object, error) {
	var objs []Object
	lp := listPrefix(s.prefix)
	p := s.client.NewListBlobsFlatPager(s.container, &azblob.ListBlobsFlatOptions{Prefix: &lp})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("failed to list %s: %w", s, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
			o := Object{Key: (*b.Name)[len(lp):]}
			if b.Properties != nil && b.Properties.LastModified != nil {
				o.LastModified = *b.Properties.LastModified
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func (s *AzureStore) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteBlob(ctx, s.container, joinKey(s.prefix, key), nil)
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("failed to delete %s/%s: %w", s, key, err)
	}
	return nil
}
