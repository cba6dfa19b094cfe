package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// healthCheckTimeout bounds each readiness check.
const healthCheckTimeout = 5 * time.Second

// serveHealth serves /healthz and /livez (the process serves HTTP) and,
// with ready, /readyz (every ReadyCheck passes). ?verbose lists each check
// as kube-apiserver does.
func (s *Server) serveHealth(ready bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var lines []string
		failed := false
		lines = append(lines, "[+]ping ok")
		if ready {
			names := make([]string, 0, len(s.checks))
			for name := range s.checks {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout)
				err := s.checks[name](ctx)
				cancel()
				if err != nil {
					failed = true
					lines = append(lines, fmt.Sprintf("[-]%s failed: %v", name, err))
				} else {
					lines = append(lines, fmt.Sprintf("[+]%s ok", name))
				}
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		code, verdict := http.StatusOK, "ok"
		if failed {
			code, verdict = http.StatusServiceUnavailable, "check failed"
		}
		w.WriteHeader(code)
		if _, verbose := r.URL.Query()["verbose"]; verbose || failed {
			fmt.Fprintln(w, strings.Join(lines, "\n"))
			fmt.Fprintf(w, "%s %s\n", strings.TrimPrefix(r.URL.Path, "/"), verdict)
			return
		}
		fmt.Fprint(w, verdict)
	}
}
