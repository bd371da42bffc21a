//go:build unix

package kubeconfig

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestFilePathsAreNeverOpened points every file field at a FIFO that has no writer: opening it for reading
// blocks, so a gate that as much as opened one of the paths would hang instead of returning.
func TestFilePathsAreNeverOpened(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot create a FIFO: %v", err)
	}
	for field, mutate := range map[string]func(*clientcmdapi.Config){
		"tokenFile": func(c *clientcmdapi.Config) { c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: fifo} },
		"client-certificate": func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"].ClientCertificate, c.AuthInfos["admin"].ClientKey = fifo, fifo
		},
		"certificate-authority": func(c *clientcmdapi.Config) { c.Clusters["member"].CertificateAuthority = fifo },
	} {
		t.Run(field, func(t *testing.T) {
			g := NewWithT(t)
			data := kubeconfig(t, mutate)
			done := make(chan error, 1)
			go func() {
				if _, err := Validate(data, Options{}); err == nil {
					done <- err
					return
				}
				_, err := RESTConfig("m1", data, Options{})
				done <- err
			}()
			select {
			case err := <-done:
				g.Expect(err).To(MatchError(ErrRefused))
				g.Expect(err.Error()).To(ContainSubstring("." + field + ": Forbidden"))
			case <-time.After(time.Minute):
				// A liveness guard, not a timing assertion: a correct gate returns without waiting on anything.
				t.Fatalf("the gate blocked opening %s through %s", fifo, field)
			}
		})
	}
}
