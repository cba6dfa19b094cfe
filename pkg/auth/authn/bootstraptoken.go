// Bootstrap tokens (--enable-bootstrap-token-auth): bearer tokens
// "<id>.<secret>" kept in Secrets of type bootstrap.kubernetes.io/token
// named bootstrap-token-<id> in kube-system, with which kubelets join a
// cluster, as kube-apiserver's bootstrap token authenticator reads them.

package authn

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/storage"
	corev1 "k8s.io/api/core/v1"
)

// The names of bootstrap tokens' Secrets, their keys and their users, as
// k8s.io/cluster-bootstrap's.
const (
	BootstrapTokenNamespace = "kube-system"
	bootstrapTokenPrefix    = "bootstrap-token-"
	BootstrapTokenType      = corev1.SecretType("bootstrap.kubernetes.io/token")
	bootstrapTokenID        = "token-id"
	bootstrapTokenSecret    = "token-secret"
	bootstrapTokenExpiry    = "expiration"
	bootstrapTokenAuthUsage = "usage-bootstrap-authentication"
	bootstrapTokenGroups    = "auth-extra-groups"
	bootstrapUserPrefix     = "system:bootstrap:"
	bootstrapGroup          = "system:bootstrappers"
)

var (
	bootstrapTokenPattern = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	bootstrapGroupPattern = regexp.MustCompile(`\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z`)
)

// BootstrapTokens authenticates bootstrap tokens against their Secrets.
type BootstrapTokens struct {
	// Secrets is the Secrets' store, read at resourceVersion "0" (the
	// watch cache: a token stops working once the cache has seen its
	// Secret go).
	Secrets storage.Interface
	// SecretKey is the store key of Secret name in namespace.
	SecretKey func(namespace, name string) string
}

// errNotBootstrapToken: the token is not of a bootstrap token's form, for
// the next authenticator.
var errNotBootstrapToken = errors.New("not a bootstrap token")

// Authenticate returns the user of token, system:bootstrap:<id> in
// system:bootstrappers and the token's extra groups (sorted, as
// kube-apiserver gives them), or errNotBootstrapToken.
func (b *BootstrapTokens) Authenticate(ctx context.Context, token string) (*user.Info, error) {
	m := bootstrapTokenPattern.FindStringSubmatch(token)
	if m == nil {
		return nil, errNotBootstrapToken
	}
	id, secret := m[1], m[2]
	name := bootstrapTokenPrefix + id
	o, err := b.Secrets.Get(ctx, b.SecretKey(BootstrapTokenNamespace, name), storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return nil, fmt.Errorf("no secret of name %s to match bootstrap bearer token", name)
	}
	if err != nil {
		return nil, err
	}
	var s corev1.Secret
	if err := json.Unmarshal(o.JSON(), &s); err != nil {
		return nil, err
	}
	refuse := func(why string) (*user.Info, error) {
		return nil, fmt.Errorf("bootstrap secret %s/%s %s", BootstrapTokenNamespace, name, why)
	}
	switch {
	case s.DeletionTimestamp != nil:
		return refuse("is deleted and awaiting removal")
	case s.Type != BootstrapTokenType || s.Data == nil:
		return refuse("has invalid type, expected " + string(BootstrapTokenType))
	case subtle.ConstantTimeCompare(s.Data[bootstrapTokenSecret], []byte(secret)) != 1:
		return refuse("has invalid value for key " + bootstrapTokenSecret)
	case string(s.Data[bootstrapTokenID]) != id:
		return refuse("has invalid value for key " + bootstrapTokenID)
	}
	if _, expired := BootstrapTokenExpiration(&s, time.Now()); expired {
		return refuse("has expired")
	}
	if string(s.Data[bootstrapTokenAuthUsage]) != "true" {
		return refuse("not marked " + bootstrapTokenAuthUsage + "=true")
	}
	groups := []string{bootstrapGroup}
	if extra := string(s.Data[bootstrapTokenGroups]); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			if !bootstrapGroupPattern.MatchString(g) {
				return refuse(fmt.Sprintf("has invalid value for key %s: %q is not a valid bootstrap group name", bootstrapTokenGroups, g))
			}
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	return &user.Info{Name: bootstrapUserPrefix + id, Groups: groups}, nil
}

// BootstrapTokenExpiration reads a bootstrap token Secret's expiration:
// how long it has left, or expired (an expiration that does not parse as
// RFC 3339 counts as expired). A Secret without one never expires.
func BootstrapTokenExpiration(s *corev1.Secret, now time.Time) (left time.Duration, expired bool) {
	exp := string(s.Data[bootstrapTokenExpiry])
	if exp == "" {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339, exp)
	if err != nil {
		return 0, true
	}
	if left = t.Sub(now); left <= 0 {
		return 0, true
	}
	return left, false
}
