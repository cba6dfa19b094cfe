// Package authorizer is the contract of authorization: the attributes of a
// request and the decision on them, with the trivial authorizers of
// --authorization-mode AlwaysAllow and AlwaysDeny.
package authorizer

import (
	"context"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// Attributes describe a request to authorize, as kube-apiserver's
// RequestInfo does: a resource request (verb on group/resource/subresource,
// in a namespace, maybe named) or a non-resource one (verb on a path).
type Attributes struct {
	User *user.Info
	// Verb is the API verb for resource requests (get, list, watch, create,
	// update, patch, delete, deletecollection, or impersonate, bind,
	// escalate, ...) and the lowercase HTTP method for non-resource ones.
	Verb string
	// ResourceRequest tells which of the fields below apply.
	ResourceRequest bool
	// Path is the URL path of a non-resource request.
	Path string

	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// FieldSelector is a list's or watch's field selector, as given.
	FieldSelector string
}

// AttributesOf are the authorization attributes of the request that info
// describes, from u.
func AttributesOf(info *requestinfo.Info, u *user.Info) Attributes {
	return Attributes{
		User: u, Verb: info.Verb, ResourceRequest: info.IsResourceRequest, Path: info.Path,
		APIGroup: info.APIGroup, APIVersion: info.APIVersion, Namespace: info.Namespace,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name,
		FieldSelector: info.FieldSelector,
	}
}

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion lets the next authorizer decide; the last one's NoOpinion
	// denies.
	NoOpinion Decision = iota
	// Allow allows the request.
	Allow
	// Deny denies it, whatever authorizers after this one would say.
	Deny
)

// Authorizer decides on requests. Implementations are safe for concurrent
// use and cheap: they run on every request.
type Authorizer interface {
	// Authorize returns the decision and, for logs and denials, why.
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// Func adapts a function to Authorizer.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize implements Authorizer.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// AlwaysAllow allows everything (--authorization-mode AlwaysAllow).
var AlwaysAllow Authorizer = Func(func(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
})

// AlwaysDeny denies everything (--authorization-mode AlwaysDeny).
var AlwaysDeny Authorizer = Func(func(context.Context, Attributes) (Decision, string, error) {
	return Deny, "Everything is forbidden.", nil
})

// Union asks each authorizer in turn; the first Allow or Deny wins.
func Union(authorizers ...Authorizer) Authorizer {
	return Func(func(ctx context.Context, a Attributes) (Decision, string, error) {
		var reasons []string
		for _, z := range authorizers {
			d, reason, err := z.Authorize(ctx, a)
			if err != nil {
				return d, reason, err
			}
			if d != NoOpinion {
				return d, reason, nil
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
		}
		reason := ""
		if len(reasons) > 0 {
			reason = reasons[0]
		}
		return NoOpinion, reason, nil
	})
}
