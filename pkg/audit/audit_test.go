package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/filters"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// pipeline is the server's order: request info → audit → authentication
// (user from the X-Test-User header; none: 401) → audit's user →
// impersonation → authorization (z) → answer 200.
func pipeline(l *Log, z authorizer.Authorizer) http.Handler {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	h = filters.WithAuthorization(h, z, l.Decided, nil)
	h = filters.WithImpersonation(h, z)
	h = l.WithUser(h)
	authenticate := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("X-Test-User")
		if name == "" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`))
			return
		}
		u := &user.Info{Name: name, UID: "uid-" + name, Groups: []string{"devs", user.AllAuthenticated}}
		authenticate.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), u)))
	})
	h = l.Handler(h)
	return requestinfo.WithRequestInfo(h)
}

// events reads the log's JSON lines.
func events(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Event
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		var ev Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("%v: %s", err, lines.Bytes())
		}
		out = append(out, ev)
	}
	return out
}

// allowAlice allows alice everything but secrets and impersonation of
// anyone but bob.
var allowAlice = authorizer.Func(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.User.Name == "alice" && a.Resource != "secrets" && (a.Verb != "impersonate" || a.Name == "bob") {
		return authorizer.Allow, "alice may", nil
	}
	return authorizer.Deny, "", nil
})

func TestEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	h := pipeline(l, allowAlice)
	serve := func(method, target string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.RemoteAddr = "10.0.0.7:5555"
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	rec := serve(http.MethodGet, "/api/v1/namespaces/ns/pods/p", "X-Test-User", "alice", "User-Agent", "kubectl/v1.32")
	id := rec.Header().Get(HeaderAuditID)
	serve(http.MethodGet, "/metrics", "X-Test-User", "alice", HeaderAuditID, "chosen-id")
	serve(http.MethodGet, "/api/v1/secrets", "X-Test-User", "alice")
	serve(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments/d/scale", "X-Test-User", "alice", "Impersonate-User", "bob")
	serve(http.MethodDelete, "/api/v1/namespaces/ns")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	evs := events(t, path)
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5: %+v", len(evs), evs)
	}
	get := evs[0]
	if get.Kind != "Event" || get.APIVersion != "audit.k8s.io/v1" || get.Level != LevelMetadata || get.Stage != StageResponseComplete ||
		get.AuditID != id || id == "" || get.Verb != "get" || get.RequestURI != "/api/v1/namespaces/ns/pods/p" ||
		get.User.Username != "alice" || get.User.UID != "uid-alice" || strings.Join(get.User.Groups, ",") != "devs,system:authenticated" ||
		get.UserAgent != "kubectl/v1.32" || strings.Join(get.SourceIPs, ",") != "10.0.0.7" ||
		*get.ObjectRef != (ObjectReference{Resource: "pods", Namespace: "ns", Name: "p", APIVersion: "v1"}) ||
		get.ResponseStatus.Code != 200 || get.Annotations["authorization.k8s.io/decision"] != "allow" ||
		get.Annotations["authorization.k8s.io/reason"] != "alice may" || get.StageTimestamp.Before(&get.RequestReceivedTimestamp) {
		t.Errorf("get: %+v", get)
	}
	if ev := evs[1]; ev.AuditID != "chosen-id" || ev.Verb != "get" || ev.ObjectRef != nil {
		t.Errorf("non-resource: %+v", ev)
	}
	if ev := evs[2]; ev.Verb != "list" || ev.ResponseStatus.Code != 403 || ev.ResponseStatus.Reason != "Forbidden" ||
		!strings.Contains(ev.ResponseStatus.Message, `User "alice" cannot list resource "secrets"`) || ev.Annotations["authorization.k8s.io/decision"] != "forbid" {
		t.Errorf("forbidden: %+v %+v", ev, ev.ResponseStatus)
	}
	if ev := evs[3]; ev.User.Username != "alice" || ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "bob" ||
		ev.ObjectRef.Subresource != "scale" || ev.ObjectRef.APIGroup != "apps" {
		t.Errorf("impersonated: %+v", ev)
	}
	if ev := evs[4]; ev.ResponseStatus.Code != 401 || ev.ResponseStatus.Message != "Authentication failed, no credentials provided" ||
		ev.Stage != StageResponseStarted || ev.User.Username != "" || ev.Verb != "delete" {
		t.Errorf("unauthenticated: %+v", ev)
	}
}

func TestWatchStages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, _ := New(Config{Path: path})
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=1", nil)
	r.Header.Set("X-Test-User", "alice")
	pipeline(l, allowAlice).ServeHTTP(httptest.NewRecorder(), r)
	l.Close()
	evs := events(t, path)
	if len(evs) != 2 || evs[0].Stage != StageResponseStarted || evs[1].Stage != StageResponseComplete || evs[0].AuditID != evs[1].AuditID || evs[0].Verb != "watch" {
		t.Errorf("watch events: %+v", evs)
	}
}

func TestNilLogSetsAuditID(t *testing.T) {
	var l *Log
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/version", nil)
	r.Header.Set("X-Test-User", "alice")
	pipeline(l, allowAlice).ServeHTTP(rec, r)
	if rec.Code != 200 || rec.Header().Get(HeaderAuditID) == "" {
		t.Errorf("%d %v", rec.Code, rec.Header())
	}
	if err := l.Close(); err != nil {
		t.Error(err)
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l, err := New(Config{Path: path, MaxSize: 1, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	h := pipeline(l, allowAlice)
	long := "/api/v1/namespaces/ns/configmaps/" + strings.Repeat("x", 2000)
	for range 1200 { // about 2.6 MB of events
		r := httptest.NewRequest(http.MethodGet, long, nil)
		r.Header.Set("X-Test-User", "alice")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	l.Close()
	// lumberjack removes old backups in the background: wait for it.
	files, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
	for deadline := time.Now().Add(2 * time.Second); len(files) > 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		files, _ = filepath.Glob(filepath.Join(dir, "audit-*.log"))
	}
	if len(files) != 2 {
		t.Errorf("rotated files: %v, want 2 (MaxBackups)", files)
	}
	if _, err := New(Config{Path: path + "/below-a-file"}); err == nil {
		t.Error("an unwritable path was accepted")
	}
}

func BenchmarkHandler(b *testing.B) {
	l := &Log{policy: DefaultPolicy(), sinks: []sink{&fileSink{out: discard{}}}}
	h := pipeline(l, allowAlice)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p", nil)
	r.Header.Set("X-Test-User", "alice")
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
