// Package audit writes kube-apiserver's audit log: one audit.k8s.io/v1
// Event per request, as a JSON line, at level Metadata (who, what, on
// which object, the answer's code, timestamps; no bodies), rotated by size
// (--audit-log-path, --audit-log-maxsize, --audit-log-maxbackup,
// --audit-log-maxage).
//
// Stages: every request is logged once at ResponseComplete (or Panic);
// watches, which last, also at ResponseStarted when their response
// begins. RequestReceived is not logged, as with the omitStages of the
// audit policies most clusters use. kube-apiserver logs nothing without a
// policy file; here --audit-log-path alone logs everything at Metadata.
package audit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
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

// Config says where events go.
type Config struct {
	// Path is the log file ("-": standard output; empty: no audit log).
	Path string
	// MaxSize is the size in megabytes at which the file is rotated (0:
	// 100, lumberjack's and so kube-apiserver's default), MaxBackups how
	// many rotated files are kept (0: all), MaxAge for how many days (0:
	// forever).
	MaxSize, MaxBackups, MaxAge int
}

// Log writes audit events. A nil *Log writes none but still gives every
// response its Audit-ID, as kube-apiserver does.
type Log struct {
	mu  sync.Mutex // serializes writes of whole lines
	out io.Writer
}

// New opens the log of cfg; nil without a path.
func New(cfg Config) (*Log, error) {
	switch cfg.Path {
	case "":
		return nil, nil
	case "-":
		return &Log{out: os.Stdout}, nil
	}
	w := &lumberjack.Logger{Filename: cfg.Path, MaxSize: cfg.MaxSize, MaxBackups: cfg.MaxBackups, MaxAge: cfg.MaxAge}
	// Open now, so that an unwritable path refuses the start.
	if _, err := w.Write(nil); err != nil {
		return nil, err
	}
	return &Log{out: w}, nil
}

// Close closes the log file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	if c, ok := l.out.(io.Closer); ok && l.out != os.Stdout {
		return c.Close()
	}
	return nil
}

type recordKey struct{}

// record is a request's event while it is served; only the request's own
// goroutine touches it until the handler returns.
type record struct {
	event Event
}

// Handler gives each request an Audit-ID and logs its event when it ends.
// It must run inside requestinfo.WithRequestInfo and outside
// authentication; WithUser (after authentication) and Decided (from the
// authorization filter) fill in who the request is from.
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
		rec := &record{event: newEvent(r, id)}
		rw := &responseWriter{ResponseWriter: w, log: l, rec: rec, watch: rec.event.Verb == "watch"}
		defer func() {
			if p := recover(); p != nil {
				rec.event.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
					Reason: metav1.StatusReasonInternalError, Message: "APIServer panic'd"}
				l.write(rec.event, StagePanic)
				panic(p)
			}
			rec.event.ResponseStatus = rw.status()
			l.write(rec.event, StageResponseComplete)
		}()
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), recordKey{}, rec)))
	})
}

// WithUser records the authenticated user of the request; it goes right
// after authentication (before impersonation changes the user).
func (l *Log) WithUser(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := r.Context().Value(recordKey{}).(*record); ok {
			if u := user.From(r.Context()); u != nil {
				rec.event.User = u.APIUserInfo()
			}
		}
		next.ServeHTTP(w, r)
	})
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

// newEvent is a request's event before it is served.
func newEvent(r *http.Request, id string) Event {
	ev := Event{
		TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		Level:                    LevelMetadata,
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
		ev.Verb = lowerMethod(r.Method)
		return ev
	}
	ev.Verb = info.Verb
	if info.IsResourceRequest {
		ev.ObjectRef = &ObjectReference{Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
			APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource}
	}
	return ev
}

// write logs ev at stage, one JSON line.
func (l *Log) write(ev Event, stage Stage) {
	ev.Stage = stage
	ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	line, err := json.Marshal(&ev)
	if err != nil {
		return // the event holds only strings and times
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out.Write(line)
}
