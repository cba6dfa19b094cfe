// Package user is who a request comes from, as authentication finds it and
// authorization, impersonation and audit read it.
package user

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// Well-known users and groups, as kube-apiserver names them.
const (
	Anonymous          = "system:anonymous"
	AllUnauthenticated = "system:unauthenticated"
	AllAuthenticated   = "system:authenticated"
	// SystemPrivilegedGroup is the superuser group: RBAC allows it
	// everything (system:masters).
	SystemPrivilegedGroup = "system:masters"
	// ServiceAccountUsernamePrefix starts every ServiceAccount's user name:
	// system:serviceaccount:<namespace>:<name>.
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	// ServiceAccountGroupPrefix starts the group of a namespace's
	// ServiceAccounts: system:serviceaccounts:<namespace>.
	ServiceAccountGroupPrefix = "system:serviceaccounts:"
	// AllServiceAccountsGroup holds every ServiceAccount.
	AllServiceAccountsGroup = "system:serviceaccounts"
)

// Info is an authenticated (or anonymous) user. It is not modified once
// built: filters that change who the request is from build a new Info.
type Info struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// InGroup reports whether the user is a member of group.
func (u *Info) InGroup(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

type contextKey struct{}

// WithUser returns a context carrying u.
func WithUser(ctx context.Context, u *Info) context.Context {
	return context.WithValue(ctx, contextKey{}, u)
}

// From returns the user of a request's context, nil if none was set.
func From(ctx context.Context) *Info {
	u, _ := ctx.Value(contextKey{}).(*Info)
	return u
}

// APIUserInfo is u as authentication.k8s.io/v1 spells it (reviews, audit
// events).
func (u *Info) APIUserInfo() authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		out.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			out.Extra[k] = v
		}
	}
	return out
}

type impersonatorKey struct{}

// WithImpersonator returns a context carrying who really sent an
// impersonating request (the impersonation filter sets it).
func WithImpersonator(ctx context.Context, real *Info) context.Context {
	return context.WithValue(ctx, impersonatorKey{}, real)
}

// ImpersonatorFrom returns who really sent an impersonating request (nil
// when the request impersonates no one); From gives whom it acts as.
func ImpersonatorFrom(ctx context.Context) *Info {
	u, _ := ctx.Value(impersonatorKey{}).(*Info)
	return u
}
