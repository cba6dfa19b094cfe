// Package health serves /healthz, /livez and /readyz as kube-apiserver's
// server/healthz does: named checks, run on every request, with
// ?verbose, ?exclude= and /<endpoint>/<check> (docs/design.md, "Health").
package health

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/apistatus"
)

// Check is a named check of /livez, /readyz or /healthz.
type Check struct {
	Name string
	// Group, if set, is a name that ?exclude= skips this check by too, as
	// kube-apiserver's grouped checks ("etcd" skips "etcd-override-0").
	Group string
	// ReadyOnly checks are of /readyz alone.
	ReadyOnly bool
	Check     func(context.Context) error
}

// checkTimeout bounds each check (the checks that reach etcd bound
// themselves with the --etcd-*check-timeout flags).
const checkTimeout = 5 * time.Second

// pingCheck is every endpoint's first check: the process serves HTTP.
var pingCheck = Check{Name: "ping", Check: func(context.Context) error { return nil }}

// logCheck is every endpoint's second check, kube-apiserver's "log": the
// process's logging works (it cannot block here: the logger writes
// synchronously).
var logCheck = Check{Name: "log", Check: func(context.Context) error { return nil }}

// PostStartHook is the check of a start-up step that has the counterpart
// name of one of kube-apiserver's post-start hooks ("rbac/bootstrap-roles"),
// reported as "poststarthook/<name>". The steps here are done before the
// server serves, so it passes from the first request on.
func PostStartHook(name string) Check {
	return Check{Name: "poststarthook/" + name, Check: func(context.Context) error { return nil }}
}

// endpoints maps /healthz, /livez and /readyz to their checks, as
// kube-apiserver has them: ping, log and every check for /readyz, ping, log
// and the checks that are not ReadyOnly (etcd, post-start hooks) for
// /healthz and /livez.
func endpoints(checks []Check) map[string][]Check {
	ready := append([]Check{pingCheck, logCheck}, checks...)
	live := slices.DeleteFunc(slices.Clone(ready), func(c Check) bool { return c.ReadyOnly })
	return map[string][]Check{"healthz": live, "livez": live, "readyz": ready}
}

// serveHealth serves an endpoint ("livez") with its checks as
// kube-apiserver does: "ok" when every check passes; with ?verbose, each
// check's line and "<endpoint> check passed"; a check named by ?exclude
// (repeatable), or by its Group, is skipped; on a failure, 500 with every line, the failed
// ones as "reason withheld" (the endpoints are public: the reason is in the
// log and at /<endpoint>/<check>), and "<endpoint> check failed".
// /<endpoint>/<check> runs that check alone: "ok", or 500 with its error.
func serve(endpoint string, checks []Check, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if name, one := strings.CutPrefix(r.URL.Path, "/"+endpoint+"/"); one {
			i := slices.IndexFunc(checks, func(c Check) bool { return c.Name == name })
			if i < 0 {
				apistatus.Write(w, apistatus.NotFoundPath(), apistatus.Subject{})
				return
			}
			if err := runCheck(r.Context(), checks[i]); err != nil {
				http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
				return
			}
			fmt.Fprint(w, "ok")
			return
		}
		asked, unmatched := map[string]bool{}, map[string]bool{}
		for _, name := range r.URL.Query()["exclude"] {
			asked[name], unmatched[name] = true, true
		}
		var out strings.Builder
		var failed []string
		for _, c := range checks {
			if asked[c.Name] {
				delete(unmatched, c.Name)
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
				continue
			}
			if c.Group != "" && asked[c.Group] {
				delete(unmatched, c.Group)
				fmt.Fprintf(&out, "[+]%s excluded with %s: ok\n", c.Name, c.Group)
				continue
			}
			if err := runCheck(r.Context(), c); err != nil {
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
				failed = append(failed, fmt.Sprintf("%s: %v", c.Name, err))
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
		if len(unmatched) > 0 {
			var names []string
			for _, name := range slices.Sorted(maps.Keys(unmatched)) {
				names = append(names, fmt.Sprintf("%q", name))
			}
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(names, ","))
		}
		if len(failed) > 0 {
			log.Info("health check failed", "endpoint", endpoint, "failed", failed)
			http.Error(w, out.String()+endpoint+" check failed", http.StatusInternalServerError)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; !verbose {
			fmt.Fprint(w, "ok")
			return
		}
		fmt.Fprintf(w, "%s%s check passed\n", out.String(), endpoint)
	}
}

// runCheck runs a check within checkTimeout.
func runCheck(ctx context.Context, c Check) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	return c.Check(ctx)
}

// Register serves /healthz, /livez and /readyz on mux with checks (besides
// ping, in order; those not ReadyOnly are also the checks of /livez and
// /healthz). Failures are logged to log.
func Register(mux *http.ServeMux, checks []Check, log *slog.Logger) {
	for endpoint, checks := range endpoints(checks) {
		mux.HandleFunc("/"+endpoint, serve(endpoint, checks, log))
		mux.HandleFunc("/"+endpoint+"/", serve(endpoint, checks, log))
	}
}
