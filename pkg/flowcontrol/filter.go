// The filter: classify, wait for seats, execute, release.

package flowcontrol

import (
	"net/http"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/httpapi"
	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// Response headers naming the FlowSchema and priority level of a request.
const (
	HeaderFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	HeaderPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// defaultWaitLimit bounds the wait in a queue of a request without a
// deadline (a watch); one with a deadline waits at most a quarter of the
// time it has left, as kube-apiserver's requests do.
const defaultWaitLimit = 15 * time.Second

// Handler wraps next in APF: each request is classified (the response
// names its FlowSchema and priority level in HeaderFlowSchemaUID and
// HeaderPriorityLevelUID), waits for its seats and holds them while it
// executes; a watch holds them until it has written its initial events.
// A refused request gets kube-apiserver's answer: 429, Retry-After: 1 and
// the text "Too many requests, please try again later." (plain text, not a
// Status). It runs inside authentication and impersonation: the user must
// be in the request's context.
func (c *Controller) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := requestinfo.From(r)
		u := user.From(r.Context())
		if u == nil {
			u = &user.Info{}
		}
		fs := c.classify(u, ri)
		w.Header().Set(HeaderFlowSchemaUID, string(fs.uid))
		w.Header().Set(HeaderPriorityLevelUID, string(fs.levelUID))
		start := time.Now()
		req, reason := c.d.admit(fs.level, fs.name, flowHash(fs.name, fs.flow(u, ri)), c.seats(ri, r.URL.Query()))
		if reason == "" {
			reason = c.wait(r, req)
		}
		if reason != "" {
			c.metrics.rejected(fs.name, fs.level, reason, time.Since(start))
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		var once sync.Once
		release := func() { once.Do(func() { c.d.release(req) }) }
		defer release()
		if ri.Verb == "watch" {
			r = r.WithContext(httpapi.WithWatchInitialized(r.Context(), release))
		}
		next.ServeHTTP(w, r)
	})
}

// classify finds the first FlowSchema (by matchingPrecedence, then name)
// that matches the request; the mandatory catch-all matches everything.
func (c *Controller) classify(u *user.Info, ri *requestinfo.Info) *flowSchema {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.schemas {
		if s.matches(u, ri) {
			return s
		}
	}
	return c.schemas[len(c.schemas)-1] // not reached: catch-all matches every request
}

// wait waits until req is dispatched; it returns why it was not: its wait
// limit passed, or its client went away.
func (c *Controller) wait(r *http.Request, req *request) string {
	select {
	case <-req.dispatched:
		return ""
	default:
	}
	limit := defaultWaitLimit
	if deadline, ok := r.Context().Deadline(); ok {
		limit = time.Until(deadline) / 4
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	reason := ""
	select {
	case <-req.dispatched:
		return ""
	case <-t.C:
		reason = reasonTimeout
	case <-r.Context().Done():
		reason = reasonCancelled
	}
	if !c.d.cancel(req) {
		return "" // dispatched meanwhile
	}
	return reason
}
