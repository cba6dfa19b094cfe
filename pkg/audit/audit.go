// Package audit writes kube-apiserver's audit events (audit.k8s.io/v1) to
// a log file as JSON lines, rotated by size (--audit-log-path,
// --audit-log-maxsize, --audit-log-maxbackup, --audit-log-maxage), and to
// a webhook (--audit-webhook-config-file, webhook.go), at the level and
// stages an audit policy gives each request (--audit-policy-file,
// policy.go).
//
// Stages, as kube-apiserver: RequestReceived once the user is known,
// ResponseStarted when a long-running request's (watch, exec, log...)
// response begins, ResponseComplete when it ends, Panic if the handler
// panicked; a request refused by authentication has one event, at
// ResponseStarted. The policy is evaluated after authentication, for the
// authenticated (not the impersonated) user.
//
// Without a policy file, every request is logged at Metadata without the
// RequestReceived stage (DefaultPolicy): kube-apiserver logs nothing
// without a policy; watchcache logged so before it read policies and keeps
// that default.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"gopkg.in/natefinch/lumberjack.v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// HeaderAuditID is the response header naming a request's audit event (and
// the request header by which a client may choose it).
const HeaderAuditID = "Audit-ID"

// Config says where events go and which.
type Config struct {
	// Path is the log file ("-": standard output; empty: no audit log).
	Path string
	// MaxSize is the size in megabytes at which the file is rotated (0:
	// 100, lumberjack's and so kube-apiserver's default), MaxBackups how
	// many rotated files are kept (0: all), MaxAge for how many days (0:
	// forever).
	MaxSize, MaxBackups, MaxAge int
	// Policy decides each request's level and stages (nil:
	// DefaultPolicy).
	Policy *Policy
	// Webhook, if not nil, is sent every event too.
	Webhook *Webhook
}

// sink is where encoded events go.
type sink interface {
	process(event []byte)
	Close() error
}

// Log writes audit events. A nil *Log writes none but still gives every
// response its Audit-ID, as kube-apiserver does.
type Log struct {
	policy *Policy
	sinks  []sink
}

// New opens the log of cfg; nil with neither a path nor a webhook.
func New(cfg Config) (*Log, error) {
	l := &Log{policy: cfg.Policy}
	if l.policy == nil {
		l.policy = DefaultPolicy()
	}
	switch cfg.Path {
	case "":
	case "-":
		l.sinks = append(l.sinks, &fileSink{out: os.Stdout})
	default:
		w := &lumberjack.Logger{Filename: cfg.Path, MaxSize: cfg.MaxSize, MaxBackups: cfg.MaxBackups, MaxAge: cfg.MaxAge}
		// Open now, so that an unwritable path refuses the start.
		if _, err := w.Write(nil); err != nil {
			return nil, err
		}
		l.sinks = append(l.sinks, &fileSink{out: w})
	}
	if cfg.Webhook != nil {
		l.sinks = append(l.sinks, cfg.Webhook)
	}
	if len(l.sinks) == 0 {
		return nil, nil
	}
	return l, nil
}

// Close closes the log file and sends the webhook's last events.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, s := range l.sinks {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// fileSink writes events as JSON lines.
type fileSink struct {
	mu  sync.Mutex // serializes writes of whole lines
	out io.Writer
}

func (f *fileSink) process(event []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Write(append(event, '\n'))
}

func (f *fileSink) Close() error {
	if c, ok := f.out.(io.Closer); ok && f.out != os.Stdout {
		return c.Close()
	}
	return nil
}

type recordKey struct{}

// record is a request's event while it is served; only the request's own
// goroutine touches it until the handler returns.
type record struct {
	event Event
	info  *requestinfo.Info
	// evaluated is set once the policy has been (after authentication);
	// cfg is its answer.
	evaluated   bool
	cfg         requestConfig
	longRunning bool
	// requestBody is the request's body as read, from level Request on.
	requestBody bytes.Buffer
	contentType string
}

// Handler gives each request an Audit-ID and logs its events. It must run
// inside requestinfo.WithRequestInfo and outside authentication; WithUser
// (after authentication) evaluates the policy, and Decided (from the
// authorization filter) fills in the decision.
func (l *Log) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderAuditID)
		if id == "" {
			id = uuid.NewString()
		}
		w.Header().Set(HeaderAuditID, id)
		if l == nil {
			next.ServeHTTP(w, r)
			return
		}
		rec := newRecord(r, id)
		rw := &responseWriter{ResponseWriter: w, log: l, rec: rec}
		defer func() {
			p := recover()
			switch {
			case !rec.evaluated:
				l.failedAuthentication(rec, rw, r)
			case rec.cfg.level == LevelNone:
			case p != nil:
				rec.event.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
					Reason: metav1.StatusReasonInternalError, Message: "APIServer panic'd"}
				l.emit(rec, rec.event, StagePanic)
			default:
				rec.event.ResponseStatus = rw.status()
				l.complete(rec, rw)
			}
			if p != nil {
				panic(p)
			}
		}()
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), recordKey{}, rec)))
	})
}

// WithUser records the authenticated user of the request and evaluates the
// policy for it, logging RequestReceived; it goes right after
// authentication (before impersonation changes the user).
func (l *Log) WithUser(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, ok := r.Context().Value(recordKey{}).(*record)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		u := user.From(r.Context())
		if u != nil {
			rec.event.User = u.APIUserInfo()
		}
		rec.evaluated, rec.cfg = true, l.policy.evaluate(u, rec.info)
		rec.event.Level = rec.cfg.level
		if rec.cfg.level == LevelNone {
			next.ServeHTTP(w, r)
			return
		}
		l.emit(rec, rec.event, StageRequestReceived)
		if rec.cfg.level.atLeast(LevelRequest) && r.Body != nil && r.Body != http.NoBody {
			rec.contentType = r.Header.Get("Content-Type")
			r = r.WithContext(r.Context())
			r.Body = teeBody{ReadCloser: r.Body, copy: &rec.requestBody}
		}
		next.ServeHTTP(w, r)
	})
}

// teeBody keeps what is read of a request's body.
type teeBody struct {
	io.ReadCloser
	copy *bytes.Buffer
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.copy.Write(p[:n])
	return n, err
}

// Decided is the authorization filter's filters.Decided: it records the
// decision as kube-apiserver's annotations, and the impersonated user.
func (l *Log) Decided(r *http.Request, allowed bool, reason string) {
	rec, ok := r.Context().Value(recordKey{}).(*record)
	if !ok {
		return
	}
	decision := "forbid"
	if allowed {
		decision = "allow"
	}
	rec.event.Annotations = map[string]string{"authorization.k8s.io/decision": decision, "authorization.k8s.io/reason": reason}
	if user.ImpersonatorFrom(r.Context()) != nil {
		impersonated := user.From(r.Context()).APIUserInfo()
		rec.event.ImpersonatedUser = &impersonated
	}
}

// newRecord is a request's record before it is served.
func newRecord(r *http.Request, id string) *record {
	ev := Event{
		TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		AuditID:                  id,
		RequestURI:               r.URL.RequestURI(),
		UserAgent:                r.UserAgent(),
		RequestReceivedTimestamp: metav1.NewMicroTime(time.Now()),
	}
	for _, ip := range utilnet.SourceIPs(r) {
		ev.SourceIPs = append(ev.SourceIPs, ip.String())
	}
	info := requestinfo.From(r)
	if info == nil {
		info = &requestinfo.Info{Path: r.URL.Path, Verb: lowerMethod(r.Method)}
	}
	ev.Verb = info.Verb
	if info.IsResourceRequest {
		ev.ObjectRef = &ObjectReference{Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
			APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource}
	}
	return &record{event: ev, info: info, longRunning: isLongRunning(info)}
}

// isLongRunning is kube-apiserver's long-running check: watches, proxies
// and the streaming subresources, whose response start is an event.
func isLongRunning(info *requestinfo.Info) bool {
	return info.Verb == "watch" || info.Verb == "proxy" ||
		info.IsResourceRequest && slices.Contains([]string{"attach", "exec", "proxy", "log", "portforward"}, info.Subresource)
}

// complete logs ResponseComplete, with the bodies the level asks for.
func (l *Log) complete(rec *record, rw *responseWriter) {
	ev := rec.event
	if rec.cfg.level.atLeast(LevelRequest) {
		ev.RequestObject = objectJSON(rec.requestBody.Bytes(), rec.contentType, rec.cfg.omitManagedFields)
	}
	if rec.cfg.level.atLeast(LevelRequestResponse) && !rec.longRunning {
		ev.ResponseObject = objectJSON(rw.body.Bytes(), rw.Header().Get("Content-Type"), rec.cfg.omitManagedFields)
	}
	l.emit(rec, ev, StageResponseComplete)
}

// failedAuthentication logs a request refused by authentication as
// kube-apiserver does: the policy evaluated without a user, one event at
// ResponseStarted whose status says which credentials were tried.
func (l *Log) failedAuthentication(rec *record, rw *responseWriter, r *http.Request) {
	rec.cfg = l.policy.evaluate(nil, rec.info)
	if rec.cfg.level == LevelNone {
		return
	}
	ev := rec.event
	ev.Level = rec.cfg.level
	ev.ResponseStatus = &metav1.Status{Code: rw.status().Code, Message: authMethods(r)}
	l.emit(rec, ev, StageResponseStarted)
}

// authMethods is kube-apiserver's message of a failed authentication.
func authMethods(r *http.Request) string {
	var methods []string
	if _, _, ok := r.BasicAuth(); ok {
		methods = append(methods, "basic")
	}
	if scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		methods = append(methods, "bearer")
	}
	if r.URL.Query().Get("access_token") != "" {
		methods = append(methods, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		methods = append(methods, "x509")
	}
	if len(methods) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(methods, ", ")
}

// emit logs ev at stage unless the policy omits that stage.
func (l *Log) emit(rec *record, ev Event, stage Stage) {
	if slices.Contains(rec.cfg.omitStages, stage) {
		return
	}
	ev.Stage = stage
	ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	line, err := json.Marshal(&ev)
	if err != nil {
		return // the bodies are valid JSON, the rest strings and times
	}
	for _, s := range l.sinks {
		s.process(line)
	}
}
