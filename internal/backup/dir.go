package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DirStore keeps backups as files in a directory, the mount of a backup PVC.
type DirStore struct {
	Dir string
}

var _ Store = DirStore{}

// partialPrefix starts the name of a file being written; List never returns such files.
const partialPrefix = ".partial-"

func (d DirStore) String() string { return "dir://" + d.Dir }

func (d DirStore) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "..") || strings.HasPrefix(key, partialPrefix) {
		return "", fmt.Errorf("invalid backup key %q", key)
	}
	return filepath.Join(d.Dir, filepath.FromSlash(key)), nil
}

// Put writes a hidden temporary file beside the target, syncs it and renames it into place, so that the key
// names either nothing or the whole object, even if the process is killed.
func (d DirStore) Put(ctx context.Context, key string, r io.Reader) (err error) {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(p), err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), partialPrefix+filepath.Base(p)+"-*")
	if err != nil {
		return fmt.Errorf("failed to create a file in %s: %w", filepath.Dir(p), err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := io.Copy(f, contextReader{ctx: ctx, r: r}); err != nil {
		return fmt.Errorf("failed to write %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to close %s: %w", p, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("failed to rename %s into place: %w", p, err)
	}
	// The rename is durable once the directory is synced.
	if dir, err := os.Open(filepath.Dir(p)); err == nil {
		_ = dir.Sync()
		_ = dir.Close()
	}
	return nil
}

func (d DirStore) Get(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", p, err)
	}
	return f, nil
}

func (d DirStore) List(_ context.Context) ([]Object, error) {
	var objs []Object
	err := filepath.WalkDir(d.Dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == d.Dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if e.IsDir() {
			// lost+found on a fresh volume, and anything else hidden.
			if p != d.Dir && (strings.HasPrefix(e.Name(), ".") || e.Name() == "lost+found") {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			return nil
		}
		rel, err := filepath.Rel(d.Dir, p)
		if err != nil {
			return err
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted since the directory was read
		}
		if err != nil {
			return err
		}
		objs = append(objs, Object{Key: filepath.ToSlash(rel), LastModified: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list %s: %w", d.Dir, err)
	}
	return objs, nil
}

func (d DirStore) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to delete %s: %w", p, err)
	}
	return nil
}

// contextReader fails reads once ctx is done, so that a copy into a store without a context of its own stops.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
