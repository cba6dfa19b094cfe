// The request authenticator built from the configuration: client
// certificates, --token-auth-file, bootstrap tokens (their Secrets looked
// up in the Secrets' watch cache), ServiceAccount tokens (the account
// looked up in the ServiceAccounts' watch cache), anonymous requests.

package app

import (
	"context"
	"crypto/x509"
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/authn"
	"github.com/watchcache/watchcache/pkg/storage"
)

// newAuthentication builds the request authenticator from cfg: client
// certificates of clientCAs, the static token file, bootstrap tokens (if
// bootstrap is not nil), ServiceAccount tokens (checked against
// serviceAccounts' cache) and anonymous requests.
func newAuthentication(cfg Config, clientCAs *x509.CertPool, serviceAccounts storage.Interface, bootstrap *authn.BootstrapTokens) (*authn.Authenticator, *authn.ServiceAccounts, error) {
	var tokens *authn.TokenFile
	if cfg.TokenAuthFile != "" {
		var err error
		if tokens, err = authn.LoadTokenFile(cfg.TokenAuthFile); err != nil {
			return nil, nil, err
		}
	}
	sa, err := authn.NewServiceAccounts(authn.ServiceAccountConfig{
		SigningKeyFile: cfg.ServiceAccountSigningKeyFile, KeyFiles: cfg.ServiceAccountKeyFiles,
		Issuers: cfg.ServiceAccountIssuers, APIAudiences: cfg.APIAudiences, DataDir: cfg.DataDir,
		Lookup: serviceAccountUID(serviceAccounts),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ServiceAccount tokens: %w", err)
	}
	return authn.New(authn.Config{X509: authn.NewX509(clientCAs), Tokens: tokens, ServiceAccounts: sa, BootstrapTokens: bootstrap,
		Anonymous: cfg.AnonymousAuth}), sa, nil
}

// serviceAccountUID looks a ServiceAccount up in its watch cache: for
// authentication at resourceVersion "0" (no etcd read per request; a token
// stops working once the cache has seen its ServiceAccount deleted or
// recreated), for issuing a token consistently.
func serviceAccountUID(serviceAccounts storage.Interface) func(ctx context.Context, namespace, name string, fresh bool) (string, bool, error) {
	return func(ctx context.Context, namespace, name string, fresh bool) (string, bool, error) {
		rv := "0"
		if fresh {
			rv = ""
		}
		obj, err := serviceAccounts.Get(ctx, namespace+"/"+name, storage.GetOptions{ResourceVersion: rv})
		if storage.CodeOf(err) == storage.ErrNotFound {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return obj.UID(), true, nil
	}
}
