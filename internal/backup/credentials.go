package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ErrNoCredentials is returned when a credentials Secret holds nothing that opens its store from here.
var ErrNoCredentials = errors.New("no usable credentials")

// StoreCredentials fills c's credentials from the data of a credentials Secret, read as the backup Job reads the
// same Secret through its environment and mounted files (see the package documentation for the keys). It is for
// a process that opens the stores of many clusters and so must take nothing from its own environment or
// identity, nor change its environment:
//
//   - s3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, optionally AWS_SESSION_TOKEN, become a static provider,
//     which NewS3Store gives the SDK in place of its default chain, so that the process's own credentials are
//     never tried. AWS_REGION sets the region; without it the region is c.S3.Region, else us-east-1 as in the
//     Job, never the process's AWS_REGION.
//   - gcs: the key of the Secret named by the base name of GOOGLE_APPLICATION_CREDENTIALS (a path under the
//     Job's mount of the Secret), which must be a service account key. Not needed when c.GCS.Anonymous is set,
//     or the Secret sets BACKUP_GCS_ANONYMOUS to true (an emulator), which sets it.
//   - azblob: AZURE_STORAGE_CONNECTION_STRING; or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY; or
//     AZURE_STORAGE_SAS_TOKEN, with AZURE_STORAGE_ACCOUNT or c.Endpoint naming the account.
//   - dir: nothing.
//
// Web identity (IRSA), shared credentials files, workload identity and external accounts belong to a Job's Pod,
// not to a Secret: without keys StoreCredentials fails with ErrNoCredentials. Errors name keys, never values.
func StoreCredentials(c *StoreConfig, data map[string][]byte) error {
	switch c.Target {
	case TargetDir:
		return nil
	case TargetS3:
		return s3Credentials(&c.S3, data)
	case TargetGCS:
		return gcsCredentials(&c.GCS, data)
	case TargetAzure:
		return azureCredentials(&c.Azure, data)
	}
	return fmt.Errorf("unknown backup target %q", c.Target)
}

// secretValue is the first of keys that the Secret sets to a non-empty value: as in the environment, where the
// SDKs take an empty variable for an unset one and read some settings under two names.
func secretValue(data map[string][]byte, keys ...string) string {
	for _, k := range keys {
		if v := data[k]; len(v) > 0 {
			return string(v)
		}
	}
	return ""
}

func s3Credentials(c *S3Config, data map[string][]byte) error {
	// The second names are the SDK's older aliases, which a Job reads too.
	id := secretValue(data, "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := secretValue(data, "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	var missing []string
	if id == "" {
		missing = append(missing, "AWS_ACCESS_KEY_ID")
	}
	if secret == "" {
		missing = append(missing, "AWS_SECRET_ACCESS_KEY")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the s3 target needs %s in its credentials Secret; web identity (IRSA) and shared "+
			"credentials files are read only by backup Jobs, from their Pod's environment", ErrNoCredentials,
			strings.Join(missing, " and "))
	}
	c.Credentials = credentials.NewStaticCredentialsProvider(id, secret, secretValue(data, "AWS_SESSION_TOKEN"))
	// An empty region would let the SDK read this process's AWS_REGION, another cluster's perhaps.
	if r := secretValue(data, "AWS_REGION", "AWS_DEFAULT_REGION"); r != "" {
		c.Region = r
	} else if c.Region == "" {
		c.Region = "us-east-1"
	}
	return nil
}

// gcsCredentials reads the key file that GOOGLE_APPLICATION_CREDENTIALS names. There is no fallback to a key
// named like a key file: a Job without GOOGLE_APPLICATION_CREDENTIALS uses its Pod's workload identity instead,
// and this process would then write with another identity than the Job's. Only a service account key is taken:
// other types (external accounts above all) name URLs and files that this process would read.
func gcsCredentials(c *GCSConfig, data map[string][]byte) error {
	// An emulator, which the Jobs reach with the same Secret's BACKUP_GCS_ANONYMOUS (cmd/backup --gcs-anonymous).
	if c.Anonymous || secretValue(data, "BACKUP_GCS_ANONYMOUS") == "true" {
		c.Anonymous = true
		return nil
	}
	file := secretValue(data, "GOOGLE_APPLICATION_CREDENTIALS")
	if file == "" {
		return fmt.Errorf("%w: the gcs target needs GOOGLE_APPLICATION_CREDENTIALS in its credentials Secret, "+
			"naming a service account key file of the same Secret; workload identity is used only by backup Jobs",
			ErrNoCredentials)
	}
	key := path.Base(file)
	b := data[key]
	if len(b) == 0 {
		return fmt.Errorf("%w: the credentials Secret has no key %q, the file GOOGLE_APPLICATION_CREDENTIALS names",
			ErrNoCredentials, key)
	}
	var head struct {
		Type string `json:"type"`
	}
	// The decoder's error is not wrapped: it can quote the key's content.
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%w: key %q of the credentials Secret is not JSON", ErrNoCredentials, key)
	}
	if head.Type != "service_account" {
		return fmt.Errorf("%w: key %q of the credentials Secret is not a service account key (type "+
			"service_account); other types are read only by backup Jobs", ErrNoCredentials, key)
	}
	c.CredentialsJSON = b
	return nil
}

// azureCredentials sets the fields as cmd/backup does from its environment; NewAzureStore picks the first way
// that is complete.
func azureCredentials(c *AzureConfig, data map[string][]byte) error {
	c.ConnectionString = secretValue(data, "AZURE_STORAGE_CONNECTION_STRING")
	c.AccountName = secretValue(data, "AZURE_STORAGE_ACCOUNT")
	c.AccountKey = secretValue(data, "AZURE_STORAGE_KEY")
	c.SASToken = secretValue(data, "AZURE_STORAGE_SAS_TOKEN")
	if c.ConnectionString != "" || c.AccountName != "" && c.AccountKey != "" || c.SASToken != "" {
		return nil
	}
	return fmt.Errorf("%w: the azblob target needs AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT with "+
		"AZURE_STORAGE_KEY, or AZURE_STORAGE_SAS_TOKEN in its credentials Secret", ErrNoCredentials)
}
