// The request pipeline's security: authentication, audit, authorization and
// the reviews (TokenReview, SubjectAccessReview...), wrapped around the API
// as kube-apiserver's filter chain, and the warning when the API is exposed.

package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/watchcache/watchcache/pkg/audit"
	"github.com/watchcache/watchcache/pkg/auth/authn"
	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/filters"
	"github.com/watchcache/watchcache/pkg/auth/review"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/flowcontrol"
	"github.com/watchcache/watchcache/pkg/httpapi"
	"github.com/watchcache/watchcache/pkg/limits"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
)

// security is the request pipeline's authentication, audit and
// authorization, and the API actions they answer (reviews, TokenRequest).
type security struct {
	authn   *authn.Authenticator
	authz   *authorization
	audit   *audit.Log              // nil: no audit log
	apf     *flowcontrol.Controller // nil: the in-flight caps instead
	actions map[string]httpapi.Action
	log     *slog.Logger
}

// startSecurity builds the authenticators, the authorizer (starting RBAC
// and its bootstrap policy) and the audit log from cfg.
func (a *App) startSecurity(ctx context.Context, cfg Config, registry *resource.Registry) (*security, error) {
	z, err := newAuthorization(ctx, cfg.AuthorizationModes, registry, cfg.Log)
	if err != nil {
		return nil, err
	}
	serviceAccounts := registry.Lookup("", "v1", "serviceaccounts")
	var bootstrap *authn.BootstrapTokens
	if cfg.EnableBootstrapTokenAuth {
		secrets := registry.Lookup("", "v1", "secrets")
		bootstrap = &authn.BootstrapTokens{Secrets: registry.Store(secrets), SecretKey: secrets.Key}
	}
	authenticator, sa, err := newAuthentication(cfg, a.ClientCAs, registry.Store(serviceAccounts), bootstrap)
	if err != nil {
		return nil, err
	}
	if a.audit, err = newAudit(cfg); err != nil {
		return nil, err
	}
	actions := reviewActions(registry, &review.Reviewer{Authorizer: z, Rules: z.rules(), Tokens: authenticator.AuthenticateToken})
	actions[httpapi.ActionKey(serviceAccounts, "token")] = func(ctx context.Context, req httpapi.ActionRequest) (any, error) {
		return sa.TokenRequest(ctx, req.Namespace, req.Name, req.Body)
	}
	return &security{authn: authenticator, authz: z, audit: a.audit, actions: actions, log: cfg.Log}, nil
}

// newAudit opens the audit log and webhook of cfg, with its policy; its
// errors name the flag at fault.
func newAudit(cfg Config) (*audit.Log, error) {
	ac := audit.Config{Path: cfg.AuditLogPath, MaxSize: cfg.AuditLogMaxSize, MaxBackups: cfg.AuditLogMaxBackups, MaxAge: cfg.AuditLogMaxAge}
	if cfg.AuditPolicyFile != "" {
		var err error
		if ac.Policy, err = audit.LoadPolicy(cfg.AuditPolicyFile); err != nil {
			return nil, fmt.Errorf("--audit-policy-file: %w", err)
		}
	}
	if cfg.AuditWebhook.ConfigFile != "" {
		wc := cfg.AuditWebhook
		if wc.Log == nil {
			wc.Log = cfg.Log
		}
		var err error
		if ac.Webhook, err = audit.NewWebhook(wc); err != nil {
			return nil, fmt.Errorf("--audit-webhook-config-file %s: %w", wc.ConfigFile, err)
		}
	}
	l, err := audit.New(ac)
	if err != nil {
		if ac.Webhook != nil {
			ac.Webhook.Close()
		}
		return nil, fmt.Errorf("--audit-log-path: %w", err)
	}
	return l, nil
}

// reviewActions are the server's answers to the reviews' POSTs.
func reviewActions(registry *resource.Registry, rv *review.Reviewer) map[string]httpapi.Action {
	body := func(f func(context.Context, []byte) (any, error)) httpapi.Action {
		return func(ctx context.Context, req httpapi.ActionRequest) (any, error) { return f(ctx, req.Body) }
	}
	actions := map[string]httpapi.Action{}
	add := func(group, plural string, a httpapi.Action) {
		actions[httpapi.ActionKey(registry.Lookup(group, "v1", plural), "")] = a
	}
	add("authorization.k8s.io", "selfsubjectaccessreviews", body(rv.SelfSubjectAccessReview))
	add("authorization.k8s.io", "subjectaccessreviews", body(rv.SubjectAccessReview))
	add("authorization.k8s.io", "selfsubjectrulesreviews", body(rv.SelfSubjectRulesReview))
	add("authorization.k8s.io", "localsubjectaccessreviews", func(ctx context.Context, req httpapi.ActionRequest) (any, error) {
		return rv.LocalSubjectAccessReview(ctx, req.Namespace, req.Body)
	})
	add("authentication.k8s.io", "tokenreviews", body(rv.TokenReview))
	add("authentication.k8s.io", "selfsubjectreviews", body(rv.SelfSubjectReview))
	return actions
}

// handler wraps the API in the request pipeline, outermost first: request
// info → request timeout → audit (every response gets an Audit-ID) →
// authentication → impersonation → API Priority and Fairness (or the
// in-flight caps) → authorization → the API, kube-apiserver's order (audit
// outside authentication, so that refused credentials are audited too;
// the limits see the user, by whom requests are classified).
func (s *security) handler(api http.Handler, cfg Config) http.Handler {
	var decided filters.Decided
	if s.audit != nil {
		decided = s.audit.Decided
	}
	h := filters.WithAuthorization(api, s.authz, decided, s.log)
	if s.apf != nil {
		h = s.apf.Handler(h)
	} else {
		h = limits.WithMaxInFlight(h, cfg.MaxRequestsInflight, cfg.MaxMutatingRequestsInflight)
	}
	h = filters.WithImpersonation(h, s.authz)
	h = s.audit.WithUser(h)
	h = authn.WithAuthentication(h, s.authn, s.log)
	h = s.audit.Handler(h)
	h = limits.WithRequestTimeout(h, cfg.RequestTimeout)
	return requestinfo.WithRequestInfo(h)
}

// warnIfExposed warns when the API is served on every interface, louder
// when anyone reaching it may read or change resources: AlwaysAllow, or
// anonymous requests that the authorizer lets list secrets or namespaces.
func warnIfExposed(ctx context.Context, cfg Config, z authorizer.Authorizer) {
	if ip := net.ParseIP(cfg.BindAddress); ip == nil || !ip.IsUnspecified() {
		return
	}
	cfg.Log.Warn("--bind-address "+cfg.BindAddress+" serves the API on every network interface: anyone who can reach this host can connect",
		"bind-address", cfg.BindAddress)
	if allowsEveryone(cfg.AuthorizationModes) {
		cfg.Log.Warn("--authorization-mode " + ModeAlwaysAllow + " with --bind-address " + cfg.BindAddress +
			": every authenticated user may read and change everything, secrets included")
	}
	if !cfg.AnonymousAuth {
		return
	}
	anonymous := &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	for _, res := range []string{"secrets", "namespaces"} {
		d, _, _ := z.Authorize(ctx, authorizer.Attributes{User: anonymous, Verb: "list", ResourceRequest: true, APIVersion: "v1", Resource: res})
		if d == authorizer.Allow {
			cfg.Log.Warn("--anonymous-auth with --bind-address "+cfg.BindAddress+": requests without credentials may list "+res+
				" (set --anonymous-auth=false or take that permission from system:anonymous)", "resource", res)
			return
		}
	}
}
