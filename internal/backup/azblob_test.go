package backup_test

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// No Azure Blob Storage server can be had here: Azurite, Microsoft's emulator, is a Node.js program and not in the
// Go module proxy. So the Azure target is tested at the HTTP level only: the real azblob client against
// fakeBlob below, which implements the six Blob REST operations the store uses (Put Block, Put Block List, Get
// Blob, List Blobs, Delete Blob, and Put Blob, which the client uses for what fits in one block), checks the Shared Key authorization header is there (not its signature) and
// records the order of requests. What it proves is the store's use of the protocol (blocks staged, then one
// commit; the manifest committed last; nothing committed for an interrupted upload), not the behaviour of
// Azure itself.
type fakeBlob struct {
	t         *testing.T
	container string
	account   string

	mu        sync.Mutex
	blobs     map[string][]byte
	modified  map[string]time.Time
	blocks    map[string]map[string][]byte
	log       []string
	badAuth   []string
	unhandled []string
}

func newFakeBlob(t *testing.T) (*fakeBlob, *httptest.Server) {
	f := &fakeBlob{t: t, container: "backups", account: "devaccount", blobs: map[string][]byte{},
		modified: map[string]time.Time{}, blocks: map[string]map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.badAuth) > 0 || len(f.unhandled) > 0 {
			t.Errorf("requests without Shared Key authorization: %v; requests the fake does not know: %v",
				f.badAuth, f.unhandled)
		}
	})
	return f, srv
}

func (f *fakeBlob) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

func (f *fakeBlob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasPrefix(r.Header.Get("Authorization"), "SharedKey "+f.account+":") {
		f.badAuth = append(f.badAuth, r.Method+" "+r.URL.String())
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	container, blob, _ := strings.Cut(path, "/")
	q := r.URL.Query()
	if container != f.container {
		f.fail(w, http.StatusNotFound, "ContainerNotFound")
		return
	}
	switch {
	case r.Method == http.MethodPut && q.Get("comp") == "block":
		body, _ := io.ReadAll(r.Body)
		if f.blocks[blob] == nil {
			f.blocks[blob] = map[string][]byte{}
		}
		f.blocks[blob][q.Get("blockid")] = body
		f.log = append(f.log, "block "+blob)
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPut && q.Get("comp") == "blocklist":
		var list struct {
			Latest      []string `xml:"Latest"`
			Uncommitted []string `xml:"Uncommitted"`
		}
		if err := xml.NewDecoder(r.Body).Decode(&list); err != nil {
			f.fail(w, http.StatusBadRequest, "InvalidXmlDocument")
			return
		}
		var data []byte
		for _, id := range append(list.Latest, list.Uncommitted...) {
			b, ok := f.blocks[blob][id]
			if !ok {
				f.fail(w, http.StatusBadRequest, "InvalidBlockList")
				return
			}
			data = append(data, b...)
		}
		delete(f.blocks, blob)
		f.blobs[blob], f.modified[blob] = data, time.Now()
		f.log = append(f.log, "commit "+blob)
		w.Header().Set("ETag", fmt.Sprintf(`"%d"`, len(f.log)))
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPut && q.Get("comp") == "" && r.Header.Get("x-ms-blob-type") == "BlockBlob":
		// Put Blob: the client uploads what fits in one block in one request, as a committed blob at once.
		body, _ := io.ReadAll(r.Body)
		f.blobs[blob], f.modified[blob] = body, time.Now()
		f.log = append(f.log, "put "+blob)
		w.Header().Set("ETag", fmt.Sprintf(`"%d"`, len(f.log)))
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodGet && q.Get("comp") == "list":
		prefix := q.Get("prefix")
		type item struct {
			Name     string `xml:"Name"`
			Size     int    `xml:"Properties>Content-Length"`
			Modified string `xml:"Properties>Last-Modified"`
		}
		var res struct {
			XMLName xml.Name `xml:"EnumerationResults"`
			Prefix  string   `xml:"Prefix"`
			Blobs   []item   `xml:"Blobs>Blob"`
			Next    string   `xml:"NextMarker"`
		}
		res.Prefix = prefix
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range f.blobs {
				if !yield(k) {
					return
				}
			}
		}) {
			if strings.HasPrefix(name, prefix) {
				res.Blobs = append(res.Blobs, item{Name: name, Size: len(f.blobs[name]),
					Modified: f.modified[name].UTC().Format(http.TimeFormat)})
			}
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(xml.Header))
		_ = xml.NewEncoder(w).Encode(res)
	case r.Method == http.MethodGet:
		data, ok := f.blobs[blob]
		if !ok {
			f.fail(w, http.StatusNotFound, "BlobNotFound")
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Header().Set("x-ms-blob-type", "BlockBlob")
		_, _ = w.Write(data)
	case r.Method == http.MethodDelete:
		if _, ok := f.blobs[blob]; !ok {
			f.fail(w, http.StatusNotFound, "BlobNotFound")
			return
		}
		delete(f.blobs, blob)
		delete(f.modified, blob)
		f.log = append(f.log, "delete "+blob)
		w.WriteHeader(http.StatusAccepted)
	default:
		f.unhandled = append(f.unhandled, r.Method+" "+r.URL.String())
		f.fail(w, http.StatusBadRequest, "UnsupportedHttpVerb")
	}
}

func (f *fakeBlob) fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "%s<Error><Code>%s</Code><Message>%s</Message></Error>", xml.Header, code, code)
}

func TestAzureStoreAtTheHTTPLevel(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	// 4 MiB of random bytes, in blocks of 1 MiB (the client's least): a backup of several blocks.
	src.addBlobs(t, 200, 4, 1<<20)
	fake, srv := newFakeBlob(t)
	store, err := backup.NewAzureStore(backup.AzureConfig{Container: "backups", Prefix: "eu-1/shop/orders",
		Endpoint: srv.URL + "/", AccountName: fake.account,
		AccountKey: base64.StdEncoding.EncodeToString([]byte("not a real key")), BlockSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}

	m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	data, manifest := "eu-1/shop/orders/"+m.Object, "eu-1/shop/orders/"+m.Name+".manifest.json"
	events := fake.events()
	blocks := slices.Collect(func(yield func(string) bool) {
		for _, e := range events {
			if e == "block "+data && !yield(e) {
				return
			}
		}
	})
	if int64(len(blocks)) < m.Size/(1<<20) || len(blocks) < 4 {
		t.Fatalf("%d blocks staged for %d bytes in blocks of 1 MiB", len(blocks), m.Size)
	}
	// The manifest fits in one block, which the client sends as one Put Blob.
	commitData := slices.Index(events, "commit "+data)
	if commitData < 0 || !slices.Equal(events[commitData:], []string{"commit " + data, "put " + manifest}) {
		t.Fatalf("want the data's blocks, its commit, then the manifest last; got %v", events)
	}
	for i, e := range events[:commitData] {
		if e != "block "+data {
			t.Errorf("event %d before the data's commit: %s", i, e)
		}
	}

	// Restored through the real client, the data comes back whole.
	fresh := mysqltest.Start(t)
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Store: store,
		Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}}}); err != nil {
		t.Fatal(err)
	}
	want, got := state(t, src.db), state(t, fresh.OpenRoot())
	if !mapsEqual(want, got) {
		t.Errorf("restored %v, source %v", got, want)
	}

	// An upload cut midway commits nothing: no blob, no manifest, still one backup listed.
	before := len(fake.events())
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cut := &cutStore{Store: store, after: 5 << 19, cancel: cancel}
	if _, err := backup.Run(cctx, backup.Options{Source: src.conn(), Store: cut}); err == nil {
		t.Fatal("a backup cut midway succeeded")
	}
	for _, e := range fake.events()[before:] {
		if strings.HasPrefix(e, "commit ") {
			t.Errorf("an interrupted upload committed: %s", e)
		}
	}
	if listed, err := backup.List(ctx, store); err != nil || len(listed) != 1 || listed[0].Name != m.Name {
		t.Errorf("listed %v, %v; want only %s", names(listed), err, m.Name)
	}

	// Retention deletes the manifest before the data.
	second, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	before = len(fake.events())
	if deleted, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 1}); err != nil || len(deleted) != 1 ||
		deleted[0].Name != m.Name {
		t.Fatalf("pruned %v, %v; want %s", names(deleted), err, m.Name)
	}
	if got := fake.events()[before:]; !slices.Equal(got, []string{"delete " + manifest, "delete " + data}) {
		t.Errorf("prune made %v", got)
	}
	if listed, err := backup.List(ctx, store); err != nil || len(listed) != 1 || listed[0].Name != second.Name {
		t.Errorf("listed %v, %v; want only %s", names(listed), err, second.Name)
	}

	// Data without a manifest, older than the newest backup, is kept while its run may still be writing its
	// manifest, as the list's Last-Modified says, and deleted after.
	const abandoned = "20000101T000000000Z.sql.gz"
	if err := store.Put(ctx, abandoned, strings.NewReader("partial")); err != nil {
		t.Fatal(err)
	}
	objs, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.LastModified.IsZero() {
			t.Errorf("%s listed without its Last-Modified", o.Key)
		}
	}
	before = len(fake.events())
	if _, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 1}); err != nil {
		t.Fatal(err)
	}
	if got := fake.events()[before:]; len(got) != 0 {
		t.Errorf("a prune made %v; want nothing while the data's run may still be going", got)
	}
	later := func() time.Time { return time.Now().Add(backup.DefaultMaxRunDuration + 2*time.Hour) }
	if _, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 1, Now: later}); err != nil {
		t.Fatal(err)
	}
	if got := fake.events()[before:]; !slices.Equal(got, []string{"delete eu-1/shop/orders/" + abandoned}) {
		t.Errorf("a prune after the runs' bound made %v; want the abandoned data deleted", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
