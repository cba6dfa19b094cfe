// ServiceAccount tokens, as kube-apiserver's serviceaccount authenticator and
// token issuer: the signing and verifying keys (--service-account-*), the
// issue of a token and its verification (signature, issuer, audiences,
// times, the account still existing).

package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/keyutil"
)

// DefaultIssuer is the issuer of ServiceAccount tokens when none is given
// (kubeadm's and kind's).
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// credentialIDKey is the user's extra naming the token it authenticated
// with, as kube-apiserver sets it.
const credentialIDKey = "authentication.kubernetes.io/credential-id"

// ServiceAccountConfig configures ServiceAccount tokens, with the meaning
// of kube-apiserver's flags.
type ServiceAccountConfig struct {
	// SigningKeyFile is the PEM private key (RSA or ECDSA) that signs
	// tokens; empty: <DataDir>/pki/sa.key, an ECDSA P-256 key generated on
	// first start and reused after.
	SigningKeyFile string
	DataDir        string
	// KeyFiles hold further PEM public keys (or certificates, or private
	// keys) that verify tokens.
	KeyFiles []string
	// Issuers are the accepted "iss" values; the first issues (empty:
	// DefaultIssuer).
	Issuers []string
	// APIAudiences are the audiences a token must name one of (empty: the
	// issuers).
	APIAudiences []string
	// Lookup returns a ServiceAccount's uid. Authentication asks the watch
	// cache (fresh false: whatever the cache has, no etcd read); issuing a
	// token asks for a consistent read (fresh true), so that a token can be
	// requested right after its ServiceAccount is created.
	Lookup func(ctx context.Context, namespace, name string, fresh bool) (uid string, found bool, err error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// ServiceAccounts issues and verifies ServiceAccount tokens.
type ServiceAccounts struct {
	signer       jose.Signer
	verifyKeys   []verifyKey
	issuers      []string
	apiAudiences []string
	lookup       func(ctx context.Context, namespace, name string, fresh bool) (string, bool, error)
	now          func() time.Time
}

// verifyKey is a public key that verifies tokens, with its key id.
type verifyKey struct {
	id  string
	key crypto.PublicKey
}

// NewServiceAccounts loads (or generates) the keys of cfg. Errors name the
// key file at fault.
func NewServiceAccounts(cfg ServiceAccountConfig) (*ServiceAccounts, error) {
	s := &ServiceAccounts{issuers: cfg.Issuers, apiAudiences: cfg.APIAudiences, lookup: cfg.Lookup, now: cfg.Now}
	if len(s.issuers) == 0 {
		s.issuers = []string{DefaultIssuer}
	}
	if len(s.apiAudiences) == 0 {
		s.apiAudiences = s.issuers
	}
	if s.now == nil {
		s.now = time.Now
	}
	keyFile := cfg.SigningKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(cfg.DataDir, "pki", "sa.key")
		if _, _, err := keyutil.LoadOrGenerateKeyFile(keyFile); err != nil {
			return nil, fmt.Errorf("ServiceAccount signing key %s: %w", keyFile, err)
		}
	}
	private, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("ServiceAccount signing key: %w", err)
	}
	signer, public, err := newSigner(private)
	if err != nil {
		return nil, fmt.Errorf("ServiceAccount signing key %s: %w", keyFile, err)
	}
	s.signer = signer
	if err := s.addVerifyKey(public); err != nil {
		return nil, fmt.Errorf("ServiceAccount signing key %s: %w", keyFile, err)
	}
	for _, file := range cfg.KeyFiles {
		keys, err := keyutil.PublicKeysFromFile(file)
		if err != nil {
			return nil, fmt.Errorf("ServiceAccount key file %s: %w", file, err)
		}
		for _, k := range keys {
			if err := s.addVerifyKey(k); err != nil {
				return nil, fmt.Errorf("ServiceAccount key file %s: %w", file, err)
			}
		}
	}
	return s, nil
}

// newSigner signs with key: RS256 for RSA, ES256/384/512 by ECDSA curve.
func newSigner(key any) (jose.Signer, crypto.PublicKey, error) {
	var alg jose.SignatureAlgorithm
	var public crypto.PublicKey
	switch k := key.(type) {
	case *rsa.PrivateKey:
		alg, public = jose.RS256, &k.PublicKey
	case *ecdsa.PrivateKey:
		public = &k.PublicKey
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		default:
			return nil, nil, errors.New("unsupported elliptic curve")
		}
	default:
		return nil, nil, fmt.Errorf("unsupported key type %T (want RSA or ECDSA)", key)
	}
	id, err := keyID(public)
	if err != nil {
		return nil, nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: id}},
		(&jose.SignerOptions{}).WithType("JWT"))
	return signer, public, err
}

// keyID is kube-apiserver's key id: the unpadded base64url SHA-256 of the
// public key's PKIX DER.
func keyID(public crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(public)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func (s *ServiceAccounts) addVerifyKey(public crypto.PublicKey) error {
	id, err := keyID(public)
	if err != nil {
		return err
	}
	s.verifyKeys = append(s.verifyKeys, verifyKey{id: id, key: public})
	return nil
}

// privateClaims are the "kubernetes.io" claim of a token.
type privateClaims struct {
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// Issue signs a token for ServiceAccount namespace/name (uid) for
// audiences, valid for expiration from now.
func (s *ServiceAccounts) Issue(namespace, name, uid string, audiences []string, expiration time.Duration) (string, time.Time, error) {
	now := s.now()
	exp := now.Add(expiration)
	std := jwt.Claims{
		Issuer: s.issuers[0], Subject: user.ServiceAccountUsernamePrefix + namespace + ":" + name, Audience: audiences,
		Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
		ID: string(uuid.NewUUID()),
	}
	var private privateClaims
	private.Kubernetes.Namespace = namespace
	private.Kubernetes.ServiceAccount.Name = name
	private.Kubernetes.ServiceAccount.UID = uid
	token, err := jwt.Signed(s.signer).Claims(std).Claims(private).Serialize()
	return token, exp, err
}

// signatureAlgorithms are those a token may be signed with.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512}

// leeway is the clock skew allowed on exp, nbf and iat.
const leeway = time.Minute

// looksLikeJWT reports whether token is a compact JWS (three parts).
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// Authenticate verifies a token for one of audiences and that its
// ServiceAccount still exists with the token's uid; it returns the
// ServiceAccount's user and the audiences the token is good for.
func (s *ServiceAccounts) Authenticate(ctx context.Context, token string, audiences []string) (*user.Info, []string, error) {
	parsed, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return nil, nil, fmt.Errorf("malformed ServiceAccount token: %w", err)
	}
	var std jwt.Claims
	var private privateClaims
	if err := s.verify(parsed, &std, &private); err != nil {
		return nil, nil, err
	}
	if !slices.Contains(s.issuers, std.Issuer) {
		return nil, nil, fmt.Errorf("token issuer %q is not accepted", std.Issuer)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Time: s.now()}, leeway); err != nil {
		return nil, nil, err
	}
	var good []string
	for _, a := range audiences {
		if std.Audience.Contains(a) {
			good = append(good, a)
		}
	}
	if len(good) == 0 {
		return nil, nil, errors.New("token audiences do not match the API's")
	}
	sa := private.Kubernetes
	if sa.Namespace == "" || sa.ServiceAccount.Name == "" || std.Subject != user.ServiceAccountUsernamePrefix+sa.Namespace+":"+sa.ServiceAccount.Name {
		return nil, nil, errors.New("token does not name a ServiceAccount")
	}
	uid, found, err := s.lookup(ctx, sa.Namespace, sa.ServiceAccount.Name, false)
	if err != nil {
		return nil, nil, err
	}
	if !found || uid != sa.ServiceAccount.UID {
		return nil, nil, fmt.Errorf("ServiceAccount %s/%s (uid %s) no longer exists", sa.Namespace, sa.ServiceAccount.Name, sa.ServiceAccount.UID)
	}
	u := &user.Info{
		Name: std.Subject, UID: uid,
		Groups: []string{user.AllServiceAccountsGroup, user.ServiceAccountGroupPrefix + sa.Namespace},
	}
	if std.ID != "" {
		u.Extra = map[string][]string{credentialIDKey: {"JTI=" + std.ID}}
	}
	return u, good, nil
}

// verify checks the token's signature with the key its header names, or
// with every key when it names none, and decodes its claims.
func (s *ServiceAccounts) verify(parsed *jwt.JSONWebToken, claims ...any) error {
	kid := ""
	if len(parsed.Headers) > 0 {
		kid = parsed.Headers[0].KeyID
	}
	for _, k := range s.verifyKeys {
		if kid != "" && k.id != kid {
			continue
		}
		if err := parsed.Claims(k.key, claims...); err == nil {
			return nil
		}
	}
	return errors.New("ServiceAccount token signature does not verify")
}
