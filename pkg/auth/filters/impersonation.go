// WithImpersonation: the Impersonate-User, -Group, -Uid and -Extra headers,
// the authorization checks of the real user (impersonate verb) and the
// impersonated user kube-apiserver builds.

package filters

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The impersonation headers, as kubectl --as, --as-group and --as-uid send
// them.
const (
	impersonateUser        = "Impersonate-User"
	impersonateUID         = "Impersonate-Uid"
	impersonateGroup       = "Impersonate-Group"
	impersonateExtraPrefix = "Impersonate-Extra-"
)

// WithImpersonation acts on the Impersonate-* headers as kube-apiserver
// does: each requested user, uid, group and extra value must be allowed by
// z to the real user with the verb impersonate (users, uids, groups,
// serviceaccounts, userextras/<key>); then the request continues as the
// impersonated user, with the headers removed. A refusal is a 403 naming
// what was refused. Groups, uid or extras without a user are a 400
// (kube-apiserver answers 500 there; it is the client's mistake).
func WithImpersonation(next http.Handler, z authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wanted, err := impersonationRequest(r.Header)
		if err != nil {
			apistatus.Write(w, apierrors.NewBadRequest(err.Error()), apistatus.Subject{})
			return
		}
		if wanted == nil {
			next.ServeHTTP(w, r)
			return
		}
		real := user.From(r.Context())
		for _, a := range impersonationChecks(wanted) {
			a.User = real
			d, reason, err := z.Authorize(r.Context(), a)
			if d != authorizer.Allow {
				if err != nil {
					apistatus.Write(w, apierrors.NewInternalError(fmt.Errorf("authorization: %w", err)), apistatus.Subject{})
					return
				}
				apistatus.Write(w, forbidden(a, reason), apistatus.Subject{})
				return
			}
		}
		for name := range r.Header {
			if name == impersonateUser || name == impersonateUID || name == impersonateGroup || strings.HasPrefix(name, impersonateExtraPrefix) {
				r.Header.Del(name)
			}
		}
		ctx := user.WithImpersonator(r.Context(), real)
		next.ServeHTTP(w, r.WithContext(user.WithUser(ctx, completeImpersonated(wanted))))
	})
}

// impersonationRequest reads the headers into the user they ask for; nil
// if they ask for none.
func impersonationRequest(h http.Header) (*user.Info, error) {
	u := &user.Info{Name: h.Get(impersonateUser), UID: h.Get(impersonateUID), Groups: h.Values(impersonateGroup)}
	for name, values := range h {
		if !strings.HasPrefix(name, impersonateExtraPrefix) {
			continue
		}
		key, err := url.PathUnescape(strings.ToLower(name[len(impersonateExtraPrefix):]))
		if err != nil {
			return nil, fmt.Errorf("%s: the extra key is not a valid escaped string: %v", name, err)
		}
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[key] = append(u.Extra[key], values...)
	}
	if u.Name == "" {
		if u.UID != "" || len(u.Groups) > 0 || len(u.Extra) > 0 {
			return nil, fmt.Errorf("requested %s without impersonating a user", requestedParts(u))
		}
		return nil, nil
	}
	return u, nil
}

// requestedParts names what an impersonation without a user asked for.
func requestedParts(u *user.Info) string {
	var parts []string
	if u.UID != "" {
		parts = append(parts, "uid "+u.UID)
	}
	if len(u.Groups) > 0 {
		parts = append(parts, fmt.Sprintf("groups %v", u.Groups))
	}
	if len(u.Extra) > 0 {
		parts = append(parts, fmt.Sprintf("extra %v", u.Extra))
	}
	return strings.Join(parts, ", ")
}

// impersonationChecks are the attributes the real user must be allowed
// for each thing impersonated.
func impersonationChecks(u *user.Info) []authorizer.Attributes {
	imp := func(group, resource, namespace, name string) authorizer.Attributes {
		return authorizer.Attributes{Verb: "impersonate", ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: namespace, Name: name}
	}
	var checks []authorizer.Attributes
	if ns, name, ok := serviceAccountOf(u.Name); ok {
		checks = append(checks, imp("", "serviceaccounts", ns, name))
	} else {
		checks = append(checks, imp("", "users", "", u.Name))
	}
	if u.UID != "" {
		checks = append(checks, imp("authentication.k8s.io", "uids", "", u.UID))
	}
	for _, g := range u.Groups {
		checks = append(checks, imp("", "groups", "", g))
	}
	for key, values := range u.Extra {
		for _, v := range values {
			a := imp("authentication.k8s.io", "userextras", "", v)
			a.Subresource = key
			checks = append(checks, a)
		}
	}
	return checks
}

// completeImpersonated adds the groups kube-apiserver adds to an
// impersonated user: a ServiceAccount's groups when none were asked for,
// and system:authenticated (system:unauthenticated for system:anonymous).
func completeImpersonated(u *user.Info) *user.Info {
	out := *u
	out.Groups = append([]string(nil), u.Groups...)
	if ns, _, ok := serviceAccountOf(u.Name); ok && len(u.Groups) == 0 {
		out.Groups = []string{user.AllServiceAccountsGroup, user.ServiceAccountGroupPrefix + ns}
	}
	all := user.AllAuthenticated
	if u.Name == user.Anonymous {
		all = user.AllUnauthenticated
	}
	if !out.InGroup(all) {
		out.Groups = append(out.Groups, all)
	}
	return &out
}

// serviceAccountOf splits system:serviceaccount:<ns>:<name>.
func serviceAccountOf(name string) (namespace, sa string, ok bool) {
	rest, found := strings.CutPrefix(name, user.ServiceAccountUsernamePrefix)
	if !found {
		return "", "", false
	}
	namespace, sa, ok = strings.Cut(rest, ":")
	return namespace, sa, ok && namespace != "" && sa != "" && !strings.Contains(sa, ":")
}
