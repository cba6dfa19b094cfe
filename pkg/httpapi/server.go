// Package httpapi serves the Kubernetes REST protocol over the registry's
// stores, as kube-apiserver's endpoints/handlers do: it routes /api and
// /apis (discovery to package discovery, /openapi to package openapi,
// /healthz and friends to package health), parses a resource request, and
// answers it with one handler per verb family, one file each: get and list
// (read.go), watch (watch.go), create (create.go), update (update.go),
// patch (patch.go), server-side apply (apply.go), delete (delete.go), the
// status, scale and finalize subresources (subresource.go) and actions
// (action.go, binding.go). Writes are prepared here (metadata, defaults,
// the kind's strategy, managedFields) and handed to the write pipeline
// (package pipeline); the wire format is package encoding's, errors are
// written by package apistatus. It knows nothing of etcd.
package httpapi

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/discovery"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/health"
	"github.com/watchcache/watchcache/pkg/openapi"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config configures a Server.
type Config struct {
	// Registry holds the served resources and their stores.
	Registry *resource.Registry
	Log      *slog.Logger
	// Metrics is where the server registers its metrics; nil makes a new
	// registry.
	Metrics *prometheus.Registry
	// HealthChecks are the checks of /readyz besides ping, in order; those
	// not ReadyOnly are also the checks of /livez and /healthz.
	HealthChecks []health.Check
	// MinWatchTimeout is the shortest server-chosen watch duration when the
	// client gives no timeoutSeconds (kube-apiserver: 30 minutes; a random
	// duration up to twice it spreads reconnections).
	MinWatchTimeout time.Duration
	// Profiling serves Go's profiles under /debug/pprof/, as kube-apiserver
	// does with --profiling.
	Profiling bool
	// Actions answer POSTs of create-only resources and action subresources,
	// by ActionKey.
	Actions map[string]Action
	// Pipeline is the write pipeline that creates, updates and deletes
	// pass through (package pipeline); nil is one of validation and
	// storage alone.
	Pipeline *pipeline.Pipeline
	// DisableShardedListAndWatch turns the ShardedListAndWatch feature gate
	// off: the shardSelector parameter of lists and watches is ignored, as
	// by a server that does not know it (lists then carry no
	// metadata.shardInfo, which tells clients so). The zero value (on) is
	// the default.
	DisableShardedListAndWatch bool
}

// Server is the HTTP handler of the API.
type Server struct {
	registry   *resource.Registry
	namespaces *resource.Resource
	log        *slog.Logger
	metrics    *metrics
	minWatch   time.Duration
	mux        *http.ServeMux
	openapi    *openapi.Service
	actions    map[string]Action
	pipeline   *pipeline.Pipeline
	discovery  *discovery.Handler
	// sharding is the ShardedListAndWatch gate.
	sharding bool
}

// New builds a Server.
func New(cfg Config) *Server {
	s := &Server{
		registry:   cfg.Registry,
		namespaces: cfg.Registry.Lookup("", "v1", "namespaces"),
		log:        cfg.Log,
		minWatch:   cfg.MinWatchTimeout,
		mux:        http.NewServeMux(),
		actions:    maps.Clone(cfg.Actions),
		pipeline:   cfg.Pipeline,
		discovery:  discovery.New(cfg.Registry),
		openapi:    openapi.New(cfg.Registry),
		sharding:   !cfg.DisableShardedListAndWatch,
	}
	if s.actions == nil {
		s.actions = map[string]Action{}
	}
	if pods := cfg.Registry.Lookup("", "v1", "pods"); pods != nil {
		s.actions[ActionKey(pods, bindingSubresource)] = s.bind
	}
	if bindings := cfg.Registry.Lookup("", "v1", "bindings"); bindings != nil {
		s.actions[ActionKey(bindings, "")] = s.bind
	}
	if s.pipeline == nil {
		s.pipeline = pipeline.New(pipeline.Stage{Name: "validation", Step: pipeline.Validation}, pipeline.Stage{Name: "storage", Step: pipeline.Storage})
	}
	if s.minWatch == 0 {
		s.minWatch = 30 * time.Minute
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(reg)
	s.mux.HandleFunc("/api", s.serveAPI)
	s.mux.HandleFunc("/api/", s.serveAPI)
	s.mux.HandleFunc("/apis", s.serveAPI)
	s.mux.HandleFunc("/apis/", s.serveAPI)
	s.mux.HandleFunc("/version", discovery.ServeVersion)
	s.mux.Handle("/openapi/", s.openapi)
	health.Register(s.mux, cfg.HealthChecks, cfg.Log)
	s.mux.Handle("/metrics", metricsHandler(reg))
	if cfg.Profiling {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// serveAPI serves everything under /api and /apis: discovery for paths
// that stop at a group or version, resources below them.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if discovery.IsPath(r.URL.Path) {
		s.discovery.ServeHTTP(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK, statusType: encoding.StatusMediaType(r)}
	req, err := s.parseResourcePath(r)
	if err != nil {
		apistatus.Write(rec, err, apistatus.Subject{})
		return
	}
	start := time.Now()
	// Deferred: a response aborted midway (abortResponse) is counted too.
	defer func() { s.metrics.observe(req, r, rec.code, time.Since(start)) }()
	s.serveResource(rec, r, req)
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, req *request) {
	if msg := req.res.DeprecationWarning; msg != "" {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
	r = r.WithContext(pipeline.WithWarnings(r.Context(), func(msg string) { w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg)) }))
	if aerr := parseWriteOptions(r, req); aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	target := targets[req.verb]
	if !req.res.Stored() || req.subresource != "" && !hasStoredSubresource(req.res, req.subresource) {
		target = encoding.Action
	}
	format, err := encoding.Negotiate(r, req.res, target)
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	req.format = format
	store := req.writeStore(s.registry.Store(req.res))
	if hasStoredSubresource(req.res, req.subresource) {
		s.serveStoredSubresource(w, r, req, store)
		return
	}
	if req.subresource != "" || !req.res.Stored() {
		s.serveAction(w, r, req)
		return
	}
	handle, ok := verbHandlers[req.verb]
	if !ok {
		apistatus.Write(w, apistatus.MethodNotAllowed(), req.res.Subject(req.name))
		return
	}
	handle(s, w, r, req, store)
}

// verbHandlers answer the verbs of a resource's own path (not of its
// subresources), each in its verb family's file.
var verbHandlers = map[string]func(s *Server, w http.ResponseWriter, r *http.Request, req *request, store storage.Interface){
	"get":              (*Server).get,
	"list":             (*Server).list,
	"watch":            (*Server).watch,
	"create":           (*Server).create,
	"update":           (*Server).update,
	"patch":            (*Server).patch,
	"delete":           (*Server).delete,
	"deletecollection": (*Server).deleteCollection,
}

// targets are what each verb answers with, for negotiation.
var targets = map[string]encoding.Target{"list": encoding.List, "deletecollection": encoding.List, "watch": encoding.Watch}

// statusRecorder remembers the status code written, for metrics, passes
// flushes through (watches flush per event), and encodes Status errors as
// the request's Accept header asks (apistatus.StatusEncoder).
type statusRecorder struct {
	http.ResponseWriter
	code int
	// statusType is the media type of Status errors
	// (encoding.StatusMediaType).
	statusType string
}

// EncodeStatus encodes a Status error in the request's media type.
func (r *statusRecorder) EncodeStatus(status *metav1.Status) (string, []byte) {
	return encoding.EncodeStatus(r.statusType, status)
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
