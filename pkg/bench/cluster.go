// The nodes scenario's cluster: kubelets (Lease, list and watch of their
// pods, heartbeats), pod churn, reflectors, watch event latency, and the SLO
// bounds of sig-scalability's api_call_latency.

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// Kubernetes' API call latency SLOs (sig-scalability's api_call_latency.md:
// p99 over the run) and the watch latency the project aims at.
const (
	sloSingleObject  = time.Second      // mutating and single-object read calls
	sloNamespaceList = 5 * time.Second  // LISTs of one namespace
	sloClusterList   = 30 * time.Second // cluster-scoped LISTs
	sloWatch         = 100 * time.Millisecond
)

// namespaceListRate is how many LISTs of a namespace's pods the
// controller-like client makes per second.
const namespaceListRate = 2

// kubeletStarts is how many kubelets start (create their Lease, list and
// begin to watch) at a time.
const kubeletStarts = 50

// sharedOutcome is an outcome that many goroutines add to.
type sharedOutcome struct {
	mu sync.Mutex
	o  outcome
}

// add records one operation.
func (s *sharedOutcome) add(d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.add(d, err)
}

// time runs op and records its latency and error, unless ctx ended
// meanwhile (the scenario is over: the operation was cut short).
func (s *sharedOutcome) time(ctx context.Context, op func() error) error {
	d, err := timed(op)
	if ctx.Err() == nil {
		s.add(d, err)
	}
	return err
}

// eventClock times watch events from the acknowledgement of the write that
// made each: writers record when their response arrived, by object and
// resourceVersion (eventKey), and watchers when they received the event.
// An event received before its write's response counts as no delay.
type eventClock struct {
	mu    sync.Mutex
	acked map[string]time.Time
	early map[string][]earlyEvent
}

// earlyEvent is an event received before its write was acknowledged.
type earlyEvent struct {
	at   time.Time
	into *sharedOutcome
}

// eventKey names a write: the object and the resourceVersion it made.
func eventKey(namespace, name, resourceVersion string) string {
	return namespace + "/" + name + "@" + resourceVersion
}

// acknowledged records that the write key was acknowledged at at.
func (c *eventClock) acknowledged(key string, at time.Time) {
	c.mu.Lock()
	if c.acked == nil {
		c.acked, c.early = map[string]time.Time{}, map[string][]earlyEvent{}
	}
	c.acked[key] = at
	early := c.early[key]
	delete(c.early, key)
	c.mu.Unlock()
	for _, e := range early {
		e.into.add(e.at.Sub(at), nil) // negative: no delay
	}
}

// received records the event of write key, received at at, in into.
func (c *eventClock) received(key string, at time.Time, into *sharedOutcome) {
	c.mu.Lock()
	if c.acked == nil {
		c.acked, c.early = map[string]time.Time{}, map[string][]earlyEvent{}
	}
	ack, ok := c.acked[key]
	if !ok {
		c.early[key] = append(c.early[key], earlyEvent{at, into})
	}
	c.mu.Unlock()
	if ok {
		into.add(at.Sub(ack), nil)
	}
}

// withQuery appends query parameters to a path that may have some.
func withQuery(path, query string) string {
	if strings.Contains(path, "?") {
		return path + "&" + query
	}
	return path + "?" + query
}

// reflector lists a collection and watches it from the list's
// resourceVersion, as client-go's reflector does: the list with
// resourceVersion=0, the watch with bookmarks and a timeout of 5 to 10
// minutes; an ended watch is resumed from the last resourceVersion seen,
// and a 410 Gone makes it list again.
type reflector struct {
	client *apiClient
	// path is the collection with its selector.
	path string
	// lists receives the LISTs' latencies; events, if not nil, the latency
	// of ADDED and DELETED events of writes clock knows; failed, the errors
	// that ended watches.
	lists, events, failed *sharedOutcome
	clock                 *eventClock
	// watching is called when the first watch has begun.
	watching func()
}

// watchEvent is what the reflector decodes of a watch event.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Code     int `json:"code"` // of an ERROR's Status
		Metadata struct {
			Name            string `json:"name"`
			Namespace       string `json:"namespace"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	} `json:"object"`
}

// run lists and watches until ctx ends.
func (r *reflector) run(ctx context.Context) {
	began := false
	started := func() {
		if !began {
			began = true
			r.watching()
		}
	}
	for ctx.Err() == nil {
		var rv string
		err := r.lists.time(ctx, func() error {
			var err error
			rv, err = listResourceVersion(ctx, r.client, withQuery(r.path, "resourceVersion=0"))
			return err
		})
		for err == nil && ctx.Err() == nil {
			var gone bool
			if gone, err = r.watch(ctx, &rv, started); gone {
				break
			}
			if err != nil && ctx.Err() == nil {
				r.failed.add(0, err)
			}
		}
		if err != nil {
			sleep(ctx, time.Second)
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// watch watches from *rv, keeping *rv at the last resourceVersion seen,
// until the watch ends; gone says it ended with 410 Gone.
func (r *reflector) watch(ctx context.Context, rv *string, started func()) (gone bool, err error) {
	query := fmt.Sprintf("watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d", url.QueryEscape(*rv), 300+rand.IntN(300))
	resp, err := r.client.send(ctx, http.MethodGet, withQuery(r.path, query), "", nil)
	if err != nil {
		return statusOf(err) == http.StatusGone, err
	}
	defer resp.Body.Close()
	started()
	events := json.NewDecoder(resp.Body)
	for {
		var ev watchEvent
		if err := events.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		at := time.Now()
		meta := ev.Object.Metadata
		switch ev.Type {
		case "ERROR":
			return ev.Object.Code == http.StatusGone, fmt.Errorf("watch %s: error event %d", r.path, ev.Object.Code)
		case "ADDED", "DELETED":
			if r.events != nil {
				r.clock.received(eventKey(meta.Namespace, meta.Name, meta.ResourceVersion), at, r.events)
			}
		}
		if meta.ResourceVersion != "" {
			*rv = meta.ResourceVersion
		}
	}
}

// listResourceVersion LISTs path, reading the response to the end, and
// returns the list's resourceVersion.
func listResourceVersion(ctx context.Context, c *apiClient, path string) (string, error) {
	resp, err := c.send(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(resp.Body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", err
	}
	rv := listField(head[:n], "resourceVersion")
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "", err
	}
	if rv == "" {
		return "", fmt.Errorf("GET %s: no resourceVersion in the list", path)
	}
	return rv, nil
}

// clusterCalls are the latencies of the nodes scenario's calls.
type clusterCalls struct {
	leaseCreate, leaseRenew, leaseGet, nodeStatus, nodeGet sharedOutcome
	kubeletPodLists, kubeletNodeLists, informerLists       sharedOutcome
	kubeletEvents, informerEvents                          sharedOutcome
	// watchErrors holds only failures: the errors that ended watches.
	watchErrors                            sharedOutcome
	podCreates, podDeletes, namespaceLists *outcome
}

// cluster is one run of the nodes scenario.
type cluster struct {
	cfg *Config
	s   *server
	bar *progressBar
	// nodes and namespaces the pods are spread over; pods were loaded.
	nodes, namespaces, pods int
	clock                   eventClock
	calls                   clusterCalls
	// retried counts requests answered 429 and retried.
	retried atomic.Int64
	// watchers counts the watches begun; created and deleted the pods of
	// the churn.
	watchers, created, deleted atomic.Int64
	// steady is closed when every client has started.
	steady chan struct{}
}

// kubelet is node i's kubelet: it creates its Lease, lists and watches its
// node's pods and its Node, on one HTTP/2 connection of its own, as its
// node's kubelet user (a bearer token); once every client has started it
// renews its Lease and patches its node's status until ctx ends. slots
// bounds how many kubelets start at once.
func (c *cluster) kubelet(ctx context.Context, i int, slots chan struct{}) {
	node := benchdata.Node(i, c.nodes)
	client := c.s.as(kubeletToken(node)).ownConnection(&c.retried)
	defer client.closeIdle()
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	var lease listMeta
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + leaseNamespace + "/leases"
	_ = c.calls.leaseCreate.time(ctx, func() error {
		return client.doJSON(ctx, http.MethodPost, leases, "application/json", leaseObject(node, "", time.Now()), &lease)
	})
	ready := make(chan struct{})
	var watching atomic.Int32
	began := func() {
		c.watchers.Add(1)
		if watching.Add(1) == 2 {
			close(ready)
		}
	}
	reflectors := []*reflector{
		{client: client, path: nodePodsPath(node), lists: &c.calls.kubeletPodLists, events: &c.calls.kubeletEvents, failed: &c.calls.watchErrors,
			clock: &c.clock, watching: began},
		{client: client, path: "/api/v1/nodes?fieldSelector=" + url.QueryEscape("metadata.name="+node), lists: &c.calls.kubeletNodeLists,
			failed: &c.calls.watchErrors, watching: began},
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, r := range reflectors {
		wg.Go(func() { r.run(ctx) })
	}
	select {
	case <-ready:
		c.bar.add(1)
	case <-ctx.Done():
	}
	<-slots
	select {
	case <-c.steady:
	case <-ctx.Done():
		return
	}
	c.heartbeats(ctx, client, node, leases+"/"+node, lease.Metadata.ResourceVersion)
}

// heartbeats renews a kubelet's Lease every LeaseInterval and patches its
// node's status every NodeStatusInterval, each first at a random time
// within its interval, until ctx ends.
func (c *cluster) heartbeats(ctx context.Context, client *apiClient, node, leasePath, leaseRV string) {
	renew, status := time.NewTimer(rand.N(c.cfg.LeaseInterval)), time.NewTimer(rand.N(c.cfg.NodeStatusInterval))
	defer renew.Stop()
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			var lease listMeta
			err := c.calls.leaseRenew.time(ctx, func() error {
				return client.doJSON(ctx, http.MethodPut, leasePath, "application/json", leaseObject(node, leaseRV, time.Now()), &lease)
			})
			if statusOf(err) == http.StatusConflict {
				_ = c.calls.leaseGet.time(ctx, func() error { return client.getJSON(ctx, leasePath, &lease) })
			}
			if lease.Metadata.ResourceVersion != "" {
				leaseRV = lease.Metadata.ResourceVersion
			}
			renew.Reset(c.cfg.LeaseInterval)
		case <-status.C:
			// As the kubelet: read the node from the cache, then patch.
			_ = c.calls.nodeGet.time(ctx, func() error {
				_, err := client.do(ctx, http.MethodGet, "/api/v1/nodes/"+node+"?resourceVersion=0", "", nil)
				return err
			})
			_ = c.calls.nodeStatus.time(ctx, func() error {
				_, err := client.do(ctx, http.MethodPatch, "/api/v1/nodes/"+node+"/status", "application/strategic-merge-patch+json", heartbeatPatch(time.Now()))
				return err
			})
			status.Reset(c.cfg.NodeStatusInterval)
		}
	}
}

// createPod creates the churn's next pod, on the next node round robin,
// and records when its creation was acknowledged.
func (c *cluster) createPod(ctx context.Context, client *apiClient) error {
	pod := withoutOwners(benchdata.Pod(c.pods+int(c.created.Add(1)-1), c.namespaces, c.nodes))
	ns, name := podIdentity(pod)
	var created listMeta
	if err := client.doJSON(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json", pod, &created); err != nil {
		return err
	}
	c.clock.acknowledged(eventKey(ns, name, created.Metadata.ResourceVersion), time.Now())
	return nil
}

// deletePod deletes the oldest pod at once, as a kubelet confirms a
// deletion, and records when the deletion was acknowledged: the loaded
// pods first (they are on the nodes round robin), then the churn's, which
// are created as fast.
func (c *cluster) deletePod(ctx context.Context, client *apiClient) error {
	ns, name := podIdentity(benchdata.Pod(int(c.deleted.Add(1)-1), c.namespaces, c.nodes))
	var deleted listMeta
	path := "/api/v1/namespaces/" + ns + "/pods/" + name + "?gracePeriodSeconds=0"
	if err := client.doJSON(ctx, http.MethodDelete, path, "", nil, &deleted); err != nil {
		return err
	}
	c.clock.acknowledged(eventKey(ns, name, deleted.Metadata.ResourceVersion), time.Now())
	return nil
}

// ensureFileLimit makes sure the process may open need files (a
// connection per kubelet), raising its soft limit up to the hard one.
// (Go raises it to the hard limit at start already; the servers, Go
// programs too, do the same for themselves.)
func ensureFileLimit(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("the nodes scenario needs %d open files (a connection per kubelet) and the hard limit is %d: lower --cluster-nodes or raise the limit", need, lim.Max)
	}
	lim.Cur = need
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// stopOwn stops a heavy scenario's server and etcd and removes etcd's data
// unless the work directory is kept.
func (b *bench) stopOwn(s *server, etcdDir string) {
	if s != nil {
		s.stop()
	}
	if b.etcd != nil {
		b.etcd.stop()
		b.etcd = nil
	}
	if !b.cfg.Keep {
		os.RemoveAll(filepath.Join(b.dir, etcdDir))
	}
}

// tickSeconds advances the progress bar once a second until stop is
// closed.
func (b *bench) tickSeconds(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			b.bar.add(1)
		}
	}
}
