package backup

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned by Store.Get for a key that holds no object.
var ErrNotFound = errors.New("object not found")

// Store is one place for backups: a directory (a PVC), an S3 or S3-compatible bucket, a GCS bucket or an Azure
// Blob container, with every key under the store's own prefix. Keys are relative to that prefix and use "/".
//
// Put must never leave a complete-looking object behind when r fails or ctx ends before r's EOF: the
// directory writes a hidden temporary file and renames it; S3's upload manager aborts its multipart upload;
// GCS and Azure finalise an upload (the resumable session, the block list) only after EOF. That alone is not
// what keeps partial backups out of a listing, though: the manifest is (see Run).
type Store interface {
	// Put writes the object key with what r yields, up to EOF.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object key for reading; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns every object in the store, in no particular order.
	List(ctx context.Context) ([]Object, error)
	// Delete removes the object key; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// String names the store for messages, such as s3://bucket/prefix.
	String() string
}

// Object is one object as a store lists it.
type Object struct {
	Key string
	// LastModified is when the object was written, by the store's clock (a file's modification time); zero
	// when the store does not say. Prune reads it to tell a backup in progress from an abandoned one.
	LastModified time.Time
}

// joinKey puts a key under a bucket prefix.
func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "/" + key
}

// listPrefix is what to list for a bucket prefix: everything under "prefix/", not "prefix-other/".
func listPrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + "/"
}
