package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// storm is a server with a large collection of config maps in namespace
// "storm", and clients for a noisy and a quiet user.
type storm struct {
	a                *App
	noisy, quiet     *http.Client
	anonymous, admin *http.Client
}

// newStorm starts a server with cfg's limits and stores n config maps of
// size bytes each.
func newStorm(t testing.TB, maxReadOnly, maxMutating, n, size int) *storm {
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		MaxRequestsInflight: maxReadOnly, MaxMutatingRequestsInflight: maxMutating, RequestTimeout: time.Minute,
		AuthorizationModes: []string{ModeAlwaysAllow}, AnonymousAuth: true, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	admin, _ := adminClient(t, a)
	admin.QPS = -1 // no client-side throttling
	cs := kubernetes.NewForConfigOrDie(admin)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "storm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("x", size)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			_, err := cs.CoreV1().ConfigMaps("storm").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)},
				Data: map[string]string{"data": data}}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	client := func(name string) *http.Client {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
		cfg.QPS, cfg.Burst = -1, 0
		// A connection of its own, as another user's client has: client-go
		// shares one between configs that differ only in whom they
		// impersonate, and the quiet user's answers would wait behind the
		// storm's bytes on it.
		cfg.Dial = (&net.Dialer{}).DialContext
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	anon, err := rest.HTTPClientFor(rest.AnonymousClientConfig(admin))
	if err != nil {
		t.Fatal(err)
	}
	adminHTTP, err := rest.HTTPClientFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	return &storm{a: a, noisy: client("noisy"), quiet: client("quiet"), anonymous: anon, admin: adminHTTP}
}

// get requests path and returns its status code and how long it took.
func (s *storm) get(c *http.Client, path string) (int, time.Duration, error) {
	start := time.Now()
	resp, err := c.Get(s.a.URL + path)
	if err != nil {
		return 0, 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), err
}

// run starts 40 noisy clients looping lists of the collection from the
// cache until stop is closed; it returns how many lists were answered
// 200 and 429.
func (s *storm) run(stop <-chan struct{}) (wait func() (ok, refused int64)) {
	var wg sync.WaitGroup
	var served, refused atomic.Int64
	for range 40 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, _, err := s.get(s.noisy, "/api/v1/namespaces/storm/configmaps?resourceVersion=0")
				switch {
				case err != nil:
					return
				case code == http.StatusTooManyRequests:
					refused.Add(1)
					time.Sleep(100 * time.Millisecond)
				default:
					served.Add(1)
				}
			}
		})
	}
	return func() (int64, int64) { wg.Wait(); return served.Load(), refused.Load() }
}

// TestAPFStorm: while one user loops 40 concurrent lists of a large
// collection from the cache against a server with few seats, a second
// user's GETs are all served (no 429: its flow is queued fairly beside the
// storm's, not behind it) and /readyz answers 200 (exempt).
func TestAPFStorm(t *testing.T) {
	// 15 seats: global-default gets 2 and borrows the rest; each list of
	// 1000 objects takes 10 seats, so the lists queue.
	s := newStorm(t, 10, 5, 1000, 2048)
	stop := make(chan struct{})
	wait := s.run(stop)
	time.Sleep(time.Second) // the storm's queues fill
	for i := range 20 {
		code, _, err := s.get(s.quiet, fmt.Sprintf("/api/v1/namespaces/storm/configmaps/cm-%05d", i))
		if err != nil || code != http.StatusOK {
			t.Errorf("the quiet user's GET %d during the storm: %d %v", i, code, err)
		}
		if code, _, err := s.get(s.anonymous, "/readyz"); err != nil || code != http.StatusOK {
			t.Errorf("/readyz during the storm: %d %v", code, err)
		}
	}
	close(stop)
	served, refused := wait()
	t.Logf("the storm: %d lists served, %d refused", served, refused)
	if served == 0 {
		t.Error("no list of the storm was served")
	}
	// The storm was queued: APF, not idle seats, served the quiet user.
	resp, err := s.admin.Get(s.a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	waited := false
	for _, line := range strings.Split(string(metrics), "\n") {
		if rest, ok := strings.CutPrefix(line, `apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="global-default",priority_level="global-default"} `); ok {
			waited = rest != "0"
		}
	}
	if !waited {
		t.Error("no request of global-default waited in a queue: the storm did not load the level")
	}
}

// percentile is the p-th percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// BenchmarkAPFStorm measures, with the default limits (400 + 200 seats) and
// a tenth of them, a
// quiet user's GET p90 alone and while another user loops 40 concurrent
// lists of 40 MB (4000 config maps of 10 KiB) from the cache, and /readyz's
// p90 during the storm (docs/performance.md, "API Priority and
// Fairness"):
//
//	go test ./pkg/app -run '^$' -bench BenchmarkAPFStorm -benchtime 1x
func BenchmarkAPFStorm(b *testing.B) {
	for _, seats := range [][2]int{{400, 200}, {40, 20}} {
		b.Run(fmt.Sprintf("seats=%d", seats[0]+seats[1]), func(b *testing.B) { benchmarkStorm(b, seats[0], seats[1]) })
	}
}

func benchmarkStorm(b *testing.B, maxReadOnly, maxMutating int) {
	s := newStorm(b, maxReadOnly, maxMutating, 4000, 10*1024)
	configMap := func(i int) string { return fmt.Sprintf("/api/v1/namespaces/storm/configmaps/cm-%05d", i) }
	measure := func(c *http.Client, path string) time.Duration {
		code, d, err := s.get(c, path)
		if err != nil || code != http.StatusOK {
			b.Fatalf("%s: %d %v", path, code, err)
		}
		return d
	}
	for range b.N {
		var alone []time.Duration
		for i := range 50 {
			alone = append(alone, measure(s.quiet, configMap(i)))
		}
		stop := make(chan struct{})
		wait := s.run(stop)
		time.Sleep(2 * time.Second)
		var during, ready []time.Duration
		for i := range 50 {
			during = append(during, measure(s.quiet, configMap(i)))
			ready = append(ready, measure(s.anonymous, "/readyz"))
		}
		close(stop)
		served, refused := wait()
		b.ReportMetric(float64(percentile(alone, 0.9).Microseconds())/1000, "quiet-p90-alone-ms")
		b.ReportMetric(float64(percentile(during, 0.9).Microseconds())/1000, "quiet-p90-storm-ms")
		b.ReportMetric(float64(percentile(ready, 0.9).Microseconds())/1000, "readyz-p90-storm-ms")
		b.ReportMetric(float64(served), "storm-lists")
		b.ReportMetric(float64(refused), "storm-429s")
	}
}
