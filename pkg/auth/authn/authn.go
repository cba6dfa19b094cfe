// Package authn authenticates requests as kube-apiserver does: client
// certificates, then bearer tokens (the static token file, bootstrap
// tokens, then ServiceAccount JWTs), then, with no credentials at all,
// anonymous.
//
// Credentials that are presented but fail are a 401 even when anonymous
// requests are allowed: a bad token is never taken for no token.
package authn

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/auth/user"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Config says which credentials are accepted.
type Config struct {
	// X509 verifies client certificates; nil refuses them.
	X509 *X509
	// Tokens are the static bearer tokens; nil has none.
	Tokens *TokenFile
	// ServiceAccounts verifies ServiceAccount tokens; nil refuses them.
	ServiceAccounts *ServiceAccounts
	// BootstrapTokens verifies bootstrap tokens
	// (--enable-bootstrap-token-auth); nil refuses them.
	BootstrapTokens *BootstrapTokens
	// Anonymous serves requests without credentials as system:anonymous.
	Anonymous bool
}

// Authenticator finds who a request is from.
type Authenticator struct {
	cfg Config
}

// New returns the authenticator of cfg.
func New(cfg Config) *Authenticator { return &Authenticator{cfg: cfg} }

// errNoCredentials is a request that presents none.
var errNoCredentials = errors.New("no credentials")

// anonymousUser is who requests without credentials are.
var anonymousUser = &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

// AuthenticateRequest returns the request's user; an error means the
// credentials presented were refused (or none were, and anonymous requests
// are off).
func (a *Authenticator) AuthenticateRequest(r *http.Request) (*user.Info, error) {
	var errs []error
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		u, err := a.cfg.X509.Authenticate(r.TLS.PeerCertificates)
		if err == nil {
			return withAuthenticated(u), nil
		}
		errs = append(errs, err)
	}
	if token, present, err := bearerToken(r.Header); present {
		if err == nil {
			var u *user.Info
			if u, _, err = a.authenticateToken(r.Context(), token, nil); err == nil {
				r.Header.Del("Authorization") // as kube-apiserver: not passed on
				return u, nil
			}
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if a.cfg.Anonymous {
		return anonymousUser, nil
	}
	return nil, errNoCredentials
}

// AuthenticateToken authenticates a bearer token for one of audiences
// (empty: the API's audiences), as TokenReview asks: the user and the
// audiences the token is good for; ok false if the token is not valid.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string, audiences []string) (*user.Info, []string, bool, error) {
	u, auds, err := a.authenticateToken(ctx, token, audiences)
	if err != nil {
		return nil, nil, false, nil
	}
	return u, auds, true, nil
}

// authenticateToken tries the static tokens, then bootstrap tokens, then
// ServiceAccount tokens.
func (a *Authenticator) authenticateToken(ctx context.Context, token string, audiences []string) (*user.Info, []string, error) {
	if a.cfg.ServiceAccounts != nil && len(audiences) == 0 {
		audiences = a.cfg.ServiceAccounts.apiAudiences
	}
	if u, ok := a.cfg.Tokens.Lookup(token); ok {
		// Static tokens are good for every API audience (kube-apiserver's
		// audience-agnostic authenticators).
		return withAuthenticated(u), audiences, nil
	}
	if a.cfg.BootstrapTokens != nil {
		// Good for every API audience, as static tokens.
		u, err := a.cfg.BootstrapTokens.Authenticate(ctx, token)
		if err == nil {
			return withAuthenticated(u), audiences, nil
		}
		if err != errNotBootstrapToken {
			return nil, nil, err
		}
	}
	if a.cfg.ServiceAccounts != nil && looksLikeJWT(token) {
		u, auds, err := a.cfg.ServiceAccounts.Authenticate(ctx, token, audiences)
		if err != nil {
			return nil, nil, err
		}
		return withAuthenticated(u), auds, nil
	}
	return nil, nil, errors.New("invalid bearer token")
}

// bearerToken reads "Authorization: Bearer <token>"; present is false when
// the header is absent or of another scheme.
func bearerToken(h http.Header) (token string, present bool, err error) {
	auth := strings.TrimSpace(h.Get("Authorization"))
	scheme, rest, _ := strings.Cut(auth, " ")
	if !strings.EqualFold(scheme, "bearer") {
		return "", false, nil
	}
	if token = strings.TrimSpace(rest); token == "" {
		return "", true, errors.New("empty bearer token")
	}
	return token, true, nil
}

// withAuthenticated returns u with system:authenticated among its groups.
func withAuthenticated(u *user.Info) *user.Info {
	if slices.Contains(u.Groups, user.AllAuthenticated) {
		return u
	}
	out := *u
	out.Groups = append(slices.Clip(u.Groups), user.AllAuthenticated)
	return &out
}

// WithAuthentication puts the request's user in its context, or answers
// 401 Unauthorized (a Status, as kube-apiserver words it) when its
// credentials are refused.
func WithAuthentication(next http.Handler, a *Authenticator, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := a.AuthenticateRequest(r)
		if err != nil {
			log.Debug("request not authenticated", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			apistatus.Write(w, apierrors.NewUnauthorized("Unauthorized"), apistatus.Subject{})
			return
		}
		next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), u)))
	})
}
