// WithAuthorization: the filter that lets a request through only if the
// authorizer allows its attributes, otherwise 403, as k8s.io/apiserver's
// filters.WithAuthorization.

package filters

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Decided, if set, is told every authorization decision of a request (the
// audit log records it as annotations).
type Decided func(r *http.Request, allowed bool, reason string)

// WithAuthorization lets a request through only if z allows its
// attributes (requestinfo and the authenticated user); otherwise it answers
// 403 Forbidden, or 500 if the authorizer failed without allowing.
func WithAuthorization(next http.Handler, z authorizer.Authorizer, decided Decided, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs := authorizer.AttributesOf(requestinfo.From(r), user.From(r.Context()))
		d, reason, err := z.Authorize(r.Context(), attrs)
		if decided != nil {
			decided(r, d == authorizer.Allow, reason)
		}
		switch {
		case d == authorizer.Allow:
			next.ServeHTTP(w, r)
		case err != nil:
			log.Error("authorization failed", "user", user.From(r.Context()), "verb", attrs.Verb, "path", attrs.Path, "err", err)
			apistatus.Write(w, apierrors.NewInternalError(fmt.Errorf("authorization: %w", err)), apistatus.Subject{})
		default:
			apistatus.Write(w, forbidden(attrs, reason), apistatus.Subject{})
		}
	})
}
