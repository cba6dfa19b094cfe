// The response writer that records a response's code and body: the start
// of a failure's (for the event's responseStatus), or all of it at level
// RequestResponse (responseObject); it logs a long-running request's
// ResponseStarted and passes flushes on for watches.

package audit

import (
	"bytes"
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusPrefix is how much of a failed response is kept to read its
// Status (reason and message) from.
const statusPrefix = 4096

// responseWriter records a response's code and body; a long-running
// request's event is logged at ResponseStarted as soon as its code is
// written.
type responseWriter struct {
	http.ResponseWriter
	log  *Log
	rec  *record
	code int
	body bytes.Buffer
}

func (w *responseWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		if w.rec.longRunning && w.rec.evaluated && w.rec.cfg.level != LevelNone {
			ev := w.rec.event
			ev.ResponseStatus = &metav1.Status{Code: int32(code)}
			w.log.emit(w.rec, ev, StageResponseStarted)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.rec.evaluated && w.rec.cfg.level == LevelRequestResponse && !w.rec.longRunning:
		w.body.Write(p)
	case w.code >= 400 && w.body.Len() < statusPrefix:
		w.body.Write(p[:min(len(p), statusPrefix-w.body.Len())])
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes flushes on, for watches.
func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is the event's responseStatus: the code, and for a failure the
// Status's status, reason and message, as kube-apiserver records them.
func (w *responseWriter) status() *metav1.Status {
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	st := &metav1.Status{Code: int32(code)}
	var body metav1.Status
	if code >= 400 && json.Unmarshal(w.body.Bytes(), &body) == nil && body.Kind == "Status" {
		st.Status, st.Reason, st.Message = body.Status, body.Reason, body.Message
	}
	return st
}
