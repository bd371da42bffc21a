package mysqlcluster

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// credentialsSecretName is the hub Secret with the generated passwords. It lives in the manager's namespace, so
// that the manager needs Secrets access nowhere else on the hub, and has no owner: with deletionPolicy Retain
// the passwords must outlive the MySQLCluster, since the data kept on the volumes needs them.
func credentialsSecretName(c *v1alpha1.MySQLCluster) string {
	return "credentials." + c.Namespace + "." + c.Name
}

// reconcileCredentials reads the hub's credentials Secret, creating it with new random passwords the first time,
// and adding the passwords a Secret made by an earlier release lacks (the member controller's and replication's
// accounts). Passwords once generated never change.
func (r *MySQLClusterReconciler) reconcileCredentials(ctx context.Context, s *scope) error {
	c := s.cluster
	key := client.ObjectKey{Namespace: r.Namespace, Name: credentialsSecretName(c)}
	var secret corev1.Secret
	err := r.Hub.Get(ctx, key, &secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{
				v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ClusterNameLabel: c.Name,
				v1alpha1.ClusterNamespaceLabel: c.Namespace,
			}},
			Type: corev1.SecretTypeOpaque,
		}
		addPasswords(&secret)
		if err := r.Hub.Create(ctx, &secret); apierrors.IsAlreadyExists(err) {
			// Made meanwhile (a cache behind, or a former leader's last pass): use those.
			if err := r.reader().Get(ctx, key, &secret); err != nil {
				return fmt.Errorf("failed to read credentials Secret %s: %w", key, err)
			}
		} else if err != nil {
			return fmt.Errorf("failed to create credentials Secret %s: %w", key, err)
		}
	case err != nil:
		return fmt.Errorf("failed to read credentials Secret %s: %w", key, err)
	case addPasswords(&secret):
		if err := r.Hub.Update(ctx, &secret); err != nil {
			return fmt.Errorf("failed to add passwords to credentials Secret %s: %w", key, err)
		}
	}
	s.creds = render.Credentials{
		RootPassword:        string(secret.Data[v1alpha1.RootPasswordKey]),
		Password:            string(secret.Data[v1alpha1.PasswordKey]),
		AdminPassword:       string(secret.Data[v1alpha1.AdminPasswordKey]),
		ReplicationPassword: string(secret.Data[v1alpha1.ReplicationPasswordKey]),
	}
	return nil
}

// addPasswords generates (crypto/rand) each password the Secret lacks, and tells whether it added any.
func addPasswords(secret *corev1.Secret) bool {
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	added := false
	for _, k := range []string{v1alpha1.RootPasswordKey, v1alpha1.PasswordKey, v1alpha1.AdminPasswordKey,
		v1alpha1.ReplicationPasswordKey} {
		if len(secret.Data[k]) == 0 {
			secret.Data[k] = []byte(rand.Text())
			added = true
		}
	}
	return added
}

// reader reads from the hub's API server where one is set (HubReader), from the Hub client otherwise (tests).
func (r *MySQLClusterReconciler) reader() client.Reader {
	if r.HubReader != nil {
		return r.HubReader
	}
	return r.Hub
}
