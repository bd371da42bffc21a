package backup_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/test/backuptest"
)

// secretMark is in every secret value of these tests, so that an error quoting one is caught.
const secretMark = "s3cr3t"

func secretData(kv ...string) map[string][]byte {
	data := map[string][]byte{}
	for i := 0; i < len(kv); i += 2 {
		data[kv[i]] = []byte(kv[i+1])
	}
	return data
}

func TestStoreCredentials(t *testing.T) {
	serviceAccount := `{"type":"service_account","private_key":"` + secretMark + `-pem","client_email":"b@p.iam"}`
	keyPath := "/var/run/secrets/mysqlfleet/backup-credentials/key.json"
	tests := []struct {
		name   string
		config backup.StoreConfig
		data   map[string][]byte
		// want checks the filled config; nil when an error is expected.
		want func(g *WithT, c backup.StoreConfig)
	}{
		{name: "dir needs nothing", config: backup.StoreConfig{Target: backup.TargetDir},
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c).To(Equal(backup.StoreConfig{Target: backup.TargetDir}))
			}},
		{name: "s3 keys, session token and region", config: backup.StoreConfig{Target: backup.TargetS3},
			data: secretData("AWS_ACCESS_KEY_ID", "id-"+secretMark, "AWS_SECRET_ACCESS_KEY", "key-"+secretMark,
				"AWS_SESSION_TOKEN", "tok-"+secretMark, "AWS_REGION", "eu-west-3"),
			want: func(g *WithT, c backup.StoreConfig) {
				creds, err := c.S3.Credentials.Retrieve(context.Background())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(creds.AccessKeyID).To(Equal("id-" + secretMark))
				g.Expect(creds.SecretAccessKey).To(Equal("key-" + secretMark))
				g.Expect(creds.SessionToken).To(Equal("tok-" + secretMark))
				g.Expect(c.S3.Region).To(Equal("eu-west-3"))
			}},
		{name: "s3 without a region keeps the config's",
			config: backup.StoreConfig{Target: backup.TargetS3, S3: backup.S3Config{Region: "ap-south-1"}},
			data:   secretData("AWS_ACCESS_KEY_ID", "id-"+secretMark, "AWS_SECRET_ACCESS_KEY", "key-"+secretMark),
			want: func(g *WithT, c backup.StoreConfig) {
				creds, err := c.S3.Credentials.Retrieve(context.Background())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(creds.SessionToken).To(BeEmpty())
				g.Expect(c.S3.Region).To(Equal("ap-south-1"))
			}},
		{name: "s3 without any region takes the Job's default, not this process's",
			config: backup.StoreConfig{Target: backup.TargetS3},
			data:   secretData("AWS_ACCESS_KEY_ID", "id-"+secretMark, "AWS_SECRET_ACCESS_KEY", "key-"+secretMark),
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c.S3.Region).To(Equal("us-east-1"))
			}},
		{name: "s3 reads the SDK's older names too", config: backup.StoreConfig{Target: backup.TargetS3},
			data: secretData("AWS_ACCESS_KEY", "id-"+secretMark, "AWS_SECRET_KEY", "key-"+secretMark,
				"AWS_DEFAULT_REGION", "eu-north-1"),
			want: func(g *WithT, c backup.StoreConfig) {
				creds, err := c.S3.Credentials.Retrieve(context.Background())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(creds.AccessKeyID).To(Equal("id-" + secretMark))
				g.Expect(c.S3.Region).To(Equal("eu-north-1"))
			}},
		{name: "s3 without a secret key", config: backup.StoreConfig{Target: backup.TargetS3},
			data: secretData("AWS_ACCESS_KEY_ID", "id-"+secretMark, "AWS_SECRET_ACCESS_KEY", "")},
		{name: "s3 without keys (IRSA)", config: backup.StoreConfig{Target: backup.TargetS3},
			data: secretData("AWS_ROLE_ARN", "arn:aws:iam::1:role/"+secretMark,
				"AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/"+secretMark)},
		{name: "gcs key file named by GOOGLE_APPLICATION_CREDENTIALS", config: backup.StoreConfig{Target: backup.TargetGCS},
			data: secretData("GOOGLE_APPLICATION_CREDENTIALS", keyPath, "key.json", serviceAccount,
				"credentials.json", "other"),
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(string(c.GCS.CredentialsJSON)).To(Equal(serviceAccount))
			}},
		{name: "gcs anonymous (an emulator) needs nothing",
			config: backup.StoreConfig{Target: backup.TargetGCS, GCS: backup.GCSConfig{Anonymous: true}},
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c.GCS.CredentialsJSON).To(BeNil())
			}},
		{name: "gcs anonymous by the Secret, as the Jobs read it", config: backup.StoreConfig{Target: backup.TargetGCS},
			data: secretData("BACKUP_GCS_ANONYMOUS", "true"),
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c.GCS.Anonymous).To(BeTrue())
				g.Expect(c.GCS.CredentialsJSON).To(BeNil())
			}},
		{name: "gcs without GOOGLE_APPLICATION_CREDENTIALS, even with a key file",
			config: backup.StoreConfig{Target: backup.TargetGCS}, data: secretData("key.json", serviceAccount)},
		{name: "gcs naming a file the Secret lacks", config: backup.StoreConfig{Target: backup.TargetGCS},
			data: secretData("GOOGLE_APPLICATION_CREDENTIALS", keyPath, "sa.json", serviceAccount)},
		{name: "gcs key file not JSON", config: backup.StoreConfig{Target: backup.TargetGCS},
			data: secretData("GOOGLE_APPLICATION_CREDENTIALS", keyPath, "key.json", secretMark+" not json")},
		{name: "gcs external account", config: backup.StoreConfig{Target: backup.TargetGCS},
			data: secretData("GOOGLE_APPLICATION_CREDENTIALS", keyPath, "key.json",
				`{"type":"external_account","token_url":"https://`+secretMark+`"}`)},
		{name: "azblob connection string", config: backup.StoreConfig{Target: backup.TargetAzure},
			data: secretData("AZURE_STORAGE_CONNECTION_STRING", "AccountKey="+secretMark),
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c.Azure).To(Equal(backup.AzureConfig{ConnectionString: "AccountKey=" + secretMark}))
			}},
		{name: "azblob shared key", config: backup.StoreConfig{Target: backup.TargetAzure},
			data: secretData("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", "key-"+secretMark),
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c.Azure).To(Equal(backup.AzureConfig{AccountName: "acct", AccountKey: "key-" + secretMark}))
			}},
		{name: "azblob SAS token", config: backup.StoreConfig{Target: backup.TargetAzure},
			data: secretData("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_SAS_TOKEN", "sv=1&sig="+secretMark),
			want: func(g *WithT, c backup.StoreConfig) {
				g.Expect(c.Azure).To(Equal(backup.AzureConfig{AccountName: "acct", SASToken: "sv=1&sig=" + secretMark}))
			}},
		{name: "azblob account without key or token", config: backup.StoreConfig{Target: backup.TargetAzure},
			data: secretData("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", "")},
		{name: "azblob nothing", config: backup.StoreConfig{Target: backup.TargetAzure},
			data: secretData("AWS_SECRET_ACCESS_KEY", secretMark)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := tt.config
			err := backup.StoreCredentials(&c, tt.data)
			if tt.want != nil {
				g.Expect(err).NotTo(HaveOccurred())
				tt.want(g, c)
				return
			}
			g.Expect(err).To(MatchError(backup.ErrNoCredentials))
			g.Expect(err.Error()).NotTo(ContainSubstring(secretMark))
			t.Log(err)
		})
	}
}

// clearAWSEnv leaves the test's process only the given keys for the SDK's default chain to find, and no shared
// files, web identity or region.
func clearAWSEnv(t *testing.T, id, secret string) {
	t.Setenv("AWS_ACCESS_KEY_ID", id)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	for _, k := range []string{"AWS_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	// A region versitygw refuses in a signature: only the Secret's, or the default, can succeed.
	t.Setenv("AWS_REGION", "eu-west-3")
}

// openFromSecret opens the store c names with credentials from data only.
func openFromSecret(t *testing.T, c backup.StoreConfig, data map[string][]byte) backup.Store {
	t.Helper()
	if err := backup.StoreCredentials(&c, data); err != nil {
		t.Fatal(err)
	}
	store, closer, err := backup.OpenStore(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closer.Close() })
	return store
}

// putGetList stores an object and reads it back and in the listing.
func putGetList(t *testing.T, store backup.Store) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(store.Put(ctx, "a.bin", strings.NewReader("payload"))).To(Succeed())
	r, err := store.Get(ctx, "a.bin")
	g.Expect(err).NotTo(HaveOccurred())
	b, err := io.ReadAll(r)
	_ = r.Close()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("payload"))
	objs, err := store.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys(objs)).To(ConsistOf("a.bin"))
}

// refused checks that the server refuses every operation of store.
func refused(t *testing.T, store backup.Store) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(store.Put(ctx, "b.bin", strings.NewReader("payload"))).NotTo(Succeed())
	_, err := store.List(ctx)
	g.Expect(err).To(HaveOccurred())
	t.Log(err)
}

// A store opened with credentials only from a Secret's data reaches versitygw, which checks signatures, and
// the data's keys are the ones used: wrong keys are refused even when the process's environment has the right
// ones, so the SDK's default chain is never tried.
func TestStoreCredentialsOpenS3(t *testing.T) {
	srv := startS3(t)
	config := func(prefix string) backup.StoreConfig {
		return backup.StoreConfig{Target: backup.TargetS3, Bucket: bucket, Prefix: prefix, Endpoint: srv.Endpoint}
	}
	env := srv.Env()
	t.Run("the Secret's keys", func(t *testing.T) {
		clearAWSEnv(t, "wrong-id", "wrong-secret")
		putGetList(t, openFromSecret(t, config("right"), secretData("AWS_ACCESS_KEY_ID", env["AWS_ACCESS_KEY_ID"],
			"AWS_SECRET_ACCESS_KEY", env["AWS_SECRET_ACCESS_KEY"], "AWS_REGION", env["AWS_REGION"])))
	})
	t.Run("the Secret's keys without a region", func(t *testing.T) {
		clearAWSEnv(t, "wrong-id", "wrong-secret")
		putGetList(t, openFromSecret(t, config("noregion"), secretData("AWS_ACCESS_KEY_ID",
			env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY", env["AWS_SECRET_ACCESS_KEY"])))
	})
	t.Run("a wrong secret key in the Secret", func(t *testing.T) {
		clearAWSEnv(t, backuptest.S3AccessKey, backuptest.S3SecretKey)
		refused(t, openFromSecret(t, config("wrong"), secretData("AWS_ACCESS_KEY_ID", backuptest.S3AccessKey,
			"AWS_SECRET_ACCESS_KEY", "not-the-secret")))
	})
	t.Run("an unknown access key in the Secret", func(t *testing.T) {
		clearAWSEnv(t, backuptest.S3AccessKey, backuptest.S3SecretKey)
		refused(t, openFromSecret(t, config("unknown"), secretData("AWS_ACCESS_KEY_ID", "someone-else",
			"AWS_SECRET_ACCESS_KEY", backuptest.S3SecretKey)))
	})
	// What the process's environment alone reaches, which the test above would reach if the Secret were
	// ignored: it is the check that these tests' environment is what they think.
	t.Run("the environment's keys reach the server", func(t *testing.T) {
		clearAWSEnv(t, backuptest.S3AccessKey, backuptest.S3SecretKey)
		t.Setenv("AWS_REGION", "us-east-1")
		store, err := backup.NewS3Store(context.Background(), backup.S3Config{Bucket: bucket, Prefix: "env",
			Endpoint: srv.Endpoint})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		putGetList(t, store)
	})
}

// gcsAuth stands in front of fake-gcs-server, which checks no credentials, as Google does: a token endpoint
// that grants a token for a JWT signed with the service account's key, and a proxy that lets through only
// requests carrying that token.
type gcsAuth struct {
	key      *rsa.PrivateKey
	email    string
	token    string
	tokenURL string
	endpoint string
}

func startGCSAuth(t *testing.T, upstream string) *gcsAuth {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	a := &gcsAuth{key: key, email: "backup@test.iam.gserviceaccount.com", token: "token-" + rand.Text()}
	tokens := httptest.NewServer(http.HandlerFunc(a.grant))
	t.Cleanup(tokens.Close)
	a.tokenURL = tokens.URL + "/token"
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+a.token {
			http.Error(w, `{"error":{"code":401,"message":"no valid token"}}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	a.endpoint = front.URL + u.Path
	return a
}

// grant answers an OAuth 2.0 JWT bearer grant (RFC 7523) when the assertion is signed with a.key.
func (a *gcsAuth) grant(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.PostFormValue("assertion"), ".")
	if r.PostFormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || len(parts) != 3 {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || rsa.VerifyPKCS1v15(&a.key.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": a.token, "token_type": "Bearer",
		"expires_in": 3600})
}

// keyFile is a service account key file for key, as Google issues them, with its token endpoint a.tokenURL.
func (a *gcsAuth) keyFile(t *testing.T, key *rsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "test",
		"private_key_id": "k1", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": a.email, "client_id": "1", "token_uri": a.tokenURL})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A store opened with the service account key of a Secret's data gets a token with it, and only that key
// does: another key, or none, is refused.
func TestStoreCredentialsOpenGCS(t *testing.T) {
	srv := startGCS(t)
	auth := startGCSAuth(t, srv.Endpoint)
	// Application Default Credentials, were they read, would fail: no file there.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	config := func(prefix string) backup.StoreConfig {
		return backup.StoreConfig{Target: backup.TargetGCS, Bucket: bucket, Prefix: prefix, Endpoint: auth.endpoint}
	}
	data := func(keyFile []byte) map[string][]byte {
		return map[string][]byte{"GOOGLE_APPLICATION_CREDENTIALS": []byte(
			"/var/run/secrets/mysqlfleet/backup-credentials/sa.json"), "sa.json": keyFile}
	}
	t.Run("the Secret's key", func(t *testing.T) {
		putGetList(t, openFromSecret(t, config("right"), data(auth.keyFile(t, auth.key))))
	})
	t.Run("another key", func(t *testing.T) {
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		keyFile := auth.keyFile(t, other)
		store := openFromSecret(t, config("wrong"), data(keyFile))
		refused(t, store)
		_, err = store.List(context.Background())
		NewWithT(t).Expect(bytes.Contains([]byte(err.Error()), []byte("PRIVATE KEY"))).To(BeFalse())
	})
	t.Run("no credentials", func(t *testing.T) {
		c := config("anonymous")
		c.GCS.Anonymous = true
		refused(t, openFromSecret(t, c, nil))
	})
}
