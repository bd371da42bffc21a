package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

type token struct {
	value   string
	source  TokenSource
	expires *time.Time
}

// settle bounds how long join waits for the member's API server to recognise a new token and a new binding:
// its authenticator and RBAC authorizer read through informers, which lag writes slightly.
const settle = 30 * time.Second

// token returns the token to register: the registered one while it still works (unless rotating), else the
// token Secret's, else a TokenRequest token bound to that Secret. Every token is proven before it is returned.
func (j *joiner) token(ctx context.Context, previous *corev1.Secret) (token, error) {
	if previous != nil && !j.opts.RotateToken {
		if old := registeredToken(previous.Data[v1alpha1.KubeconfigKey]); old != "" {
			err := j.verify(ctx, old, 0)
			if err == nil {
				say(j.out, "token: kept the registered token; it still authenticates as %s (--rotate-token replaces it)\n", serviceAccountUser)
				t := token{value: old, source: TokenReused}
				if exp, err := time.Parse(time.RFC3339, previous.Annotations[v1alpha1.TokenExpirationAnnotation]); err == nil {
					t.expires = &exp
				}
				return t, nil
			}
			say(j.out, "token: the registered token no longer works (%v); issuing a new one\n", err)
		}
	}

	secrets := j.mc.cs.CoreV1().Secrets(MemberNamespace)
	if j.opts.RotateToken {
		// Deleting the Secret revokes its token and every TokenRequest token bound to it.
		if err := secrets.Delete(ctx, TokenSecretName, metav1.DeleteOptions{}); client404(err) != nil {
			return token{}, fmt.Errorf("failed to delete token Secret %s/%s in member %s: %w", MemberNamespace, TokenSecretName, j.opts.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
			_, err := secrets.Get(ctx, TokenSecretName, metav1.GetOptions{})
			return apierrors.IsNotFound(err), client404(err)
		})
		if err != nil {
			return token{}, fmt.Errorf("failed waiting for the old token Secret to go from member %s: %w", j.opts.Name, err)
		}
		say(j.out, "token: revoked the previous token (deleted Secret %s/%s)\n", MemberNamespace, TokenSecretName)
	}
	if _, err := secrets.Apply(ctx, render.HubTokenSecret(), applyOptions); err != nil {
		return token{}, fmt.Errorf("failed to apply token Secret %s/%s in member %s: %w", MemberNamespace, TokenSecretName, j.opts.Name, err)
	}

	var secret *corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, j.opts.TokenWait, true, func(ctx context.Context) (bool, error) {
		s, err := secrets.Get(ctx, TokenSecretName, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil || isClientSideWait(err) {
				// The wait's own deadline, met inside client-go's rate limiter: the token was not filled in time.
				return false, nil
			}
			return false, err
		}
		secret = s
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0, nil
	})
	if err == nil {
		t := token{value: string(secret.Data[corev1.ServiceAccountTokenKey]), source: TokenFromSecret}
		if err := j.verify(ctx, t.value, settle); err != nil {
			return token{}, err
		}
		say(j.out, "token: long-lived token from Secret %s/%s\n", MemberNamespace, TokenSecretName)
		return t, nil
	}
	if secret == nil || !wait.Interrupted(err) {
		return token{}, fmt.Errorf("failed to read token Secret %s/%s in member %s: %w", MemberNamespace, TokenSecretName, j.opts.Name, err)
	}

	// No token controller (kube-controller-manager without --service-account-private-key-file, or not running).
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(j.opts.TokenExpiration / time.Second)),
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID,
		},
	}}
	tr, err := j.mc.cs.CoreV1().ServiceAccounts(MemberNamespace).CreateToken(ctx, ServiceAccountName, req, metav1.CreateOptions{})
	if err != nil {
		return token{}, fmt.Errorf("failed to get a token in member %s: no token controller filled Secret %s/%s "+
			"within %s, and the TokenRequest failed: %w", j.opts.Name, MemberNamespace, TokenSecretName, j.opts.TokenWait, err)
	}
	exp := tr.Status.ExpirationTimestamp.UTC()
	t := token{value: tr.Status.Token, source: TokenRequested, expires: &exp}
	if err := j.verify(ctx, t.value, settle); err != nil {
		return token{}, err
	}
	say(j.out, "token: no token controller filled Secret %s/%s within %s (is kube-controller-manager running with\n"+
		"  --service-account-private-key-file?), so join used the TokenRequest API instead. This token EXPIRES at %s\n"+
		"  (asked for %s; the member's --service-account-max-token-expiration may cap it): run join again with\n"+
		"  --rotate-token before then. Deleting that Secret revokes it.\n",
		MemberNamespace, TokenSecretName, j.opts.TokenWait, exp.Format(time.RFC3339), j.opts.TokenExpiration)
	return t, nil
}

// verify proves that a token, in the kubeconfig the hub would get, authenticates as the ServiceAccount and may
// list StatefulSets where the manager will. It talks to the member at the address this machine uses, which may
// differ from --server. It retries for up to patience while the member's caches catch up with new objects.
func (j *joiner) verify(ctx context.Context, tok string, patience time.Duration) error {
	data, err := memberKubeconfig(j.opts.Name, j.mc.server, j.ca, j.mc.tlsServerName, tok)
	if err != nil {
		return err
	}
	cfg, err := kubeconfig.RESTConfig(j.opts.Name, data, kubeconfig.Options{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := metav1.NamespaceAll
	if len(j.opts.Namespaces) > 0 {
		ns = j.opts.Namespaces[0]
	}
	var last error
	check := func(ctx context.Context) (bool, error) {
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		switch {
		case err != nil:
			last = err
			return false, nil
		case r.Status.UserInfo.Username != serviceAccountUser:
			return false, fmt.Errorf("the token authenticates as %q, not %s", r.Status.UserInfo.Username, serviceAccountUser)
		}
		if _, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			last = err
			return false, nil
		}
		return true, nil
	}
	if patience == 0 {
		if ok, err := check(ctx); !ok {
			return errors.Join(err, last)
		}
		return nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, patience, true, check); err != nil {
		if wait.Interrupted(err) && last != nil {
			return fmt.Errorf("the new token does not work in member %s: %w", j.opts.Name, last)
		}
		return err
	}
	return nil
}

// isClientSideWait tells client-go's rate limiter refusing to wait past the context's deadline from a real error.
func isClientSideWait(err error) bool {
	return strings.Contains(err.Error(), "rate limiter Wait returned an error")
}
