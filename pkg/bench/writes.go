// The write scenarios: watch fan-out (watchers of one namespace while writers
// update it, event latency per watcher) and writes (what the cache costs
// creates and patches).

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// fanoutSide is what one side of the watch fan-out measured.
type fanoutSide struct {
	delivery  outcome // one operation per event received
	eventRate float64 // events received per second, all watchers together
	short     int     // watchers that did not receive every update
}

// fanout has every watcher watch the fan-out namespace while writers update
// its objects: how fast and how late each event reaches all watchers.
func (b *bench) fanout(ctx context.Context) error {
	sides := map[string]*fanoutSide{}
	err := b.sides(ctx, func(ctx context.Context, s *server) error {
		var err error
		sides[s.side()], err = b.fanoutOn(ctx, s)
		return err
	})
	if err != nil {
		return err
	}
	cache, etcd := sides["cache"], sides["etcd"]
	row := Row{Label: fmt.Sprintf("%s watchers", FormatValue(Count, float64(b.cfg.Watchers))), Metrics: append(
		[]Metric{{Name: "events per second", Unit: PerSecond, Cache: cache.eventRate, Etcd: etcd.eventRate, HigherIsBetter: true}},
		percentileMetrics(&cache.delivery, &etcd.delivery, "p50", "p99")...)}
	for _, name := range []string{"cache", "etcd"} {
		if short := sides[name].short; short > 0 {
			row.Incomplete += fmt.Sprintf("%s: %d watchers did not receive every event (ended early or past the %s deadline). ", name, short, b.cfg.FanoutTimeout)
		}
	}
	return b.finish(Scenario{
		ID:    "fanout",
		Title: "Watch fan-out",
		Workload: fmt.Sprintf("%s watchers of one namespace's %d config maps; %d writers make %s updates as fast as they can (merge patches). "+
			"Latency is from the start of an update's request to each watcher's receipt of its event; events per second counts every watcher's events, "+
			"from the first update to the last event received.",
			FormatValue(Count, float64(b.cfg.Watchers)), b.cfg.FanoutObjects, b.cfg.FanoutWriters, FormatValue(Count, float64(b.cfg.Updates))),
		Rows: []Row{row},
	})
}

// fanoutOn runs the fan-out against one server.
func (b *bench) fanoutOn(ctx context.Context, s *server) (*fanoutSide, error) {
	w := fanoutWork{collection: "/api/v1/namespaces/" + fanoutNamespace + "/configmaps", watchers: b.cfg.Watchers, updates: b.cfg.Updates,
		writers: b.cfg.FanoutWriters, timeout: b.cfg.FanoutTimeout}
	return w.run(ctx, s, func(ctx context.Context, i int) error {
		path := fmt.Sprintf("/api/v1/namespaces/%s/configmaps/cm-%06d", fanoutNamespace, i%b.cfg.FanoutObjects)
		return stampedPatch(ctx, s, path, `{"data":{"sent":"%d"}}`)
	})
}

// fanoutWork is a watch fan-out: watchers watch a collection from its
// current resourceVersion while writers make updates, each stamped with
// the time it is sent (see stampedPatch), within timeout.
type fanoutWork struct {
	collection                 string
	watchers, updates, writers int
	timeout                    time.Duration
	// watcher, if not nil, is the watchers' client (e.g. one that asks
	// for protobuf) and receive reads its streams; by default the
	// watchers are s's JSON clients and receive is receiveUpdates.
	watcher *apiClient
	receive func(stream io.Reader, n int) watcherReceipts
}

// run runs the fan-out against s, update making update number i.
func (w fanoutWork) run(ctx context.Context, s *server, update func(ctx context.Context, i int) error) (*fanoutSide, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	collection := w.collection
	var list listMeta
	if err := s.getJSON(ctx, collection+"?limit=1", &list); err != nil {
		return nil, err
	}
	streams := make([]io.ReadCloser, w.watchers)
	defer func() {
		for _, st := range streams {
			if st != nil {
				st.Close()
			}
		}
	}()
	watcher, receive := s.apiClient, receiveUpdates
	if w.watcher != nil {
		watcher, receive = w.watcher, w.receive
	}
	for i := range streams {
		resp, err := watcher.send(ctx, http.MethodGet, collection+"?watch=1&resourceVersion="+list.Metadata.ResourceVersion, "", nil)
		if err != nil {
			return nil, err
		}
		streams[i] = resp.Body
	}
	parts := make([]watcherReceipts, len(streams))
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Go(func() {
			parts[i] = receive(st, w.updates)
			if parts[i].received < w.updates {
				cancel() // stop the writers: this watcher ended early
			}
		})
	}
	began := time.Now()
	writes := closedLoop(ctx, w.writers, forCount(w.updates), func(ctx context.Context, _, i int) error { return update(ctx, i) })
	wg.Wait()
	if writes.failures > 0 && ctx.Err() == nil {
		return nil, fmt.Errorf("updates failed: %v", writes.firstErr)
	}
	total := &fanoutSide{}
	var last time.Time
	for _, p := range parts {
		total.delivery.merge(&p.latency)
		if p.received < w.updates {
			total.short++
		}
		if p.last.After(last) {
			last = p.last
		}
	}
	total.eventRate = float64(total.delivery.ops) / last.Sub(began).Seconds()
	return total, nil
}

// watcherReceipts is what one watcher of the fan-out received.
type watcherReceipts struct {
	latency  outcome
	received int
	last     time.Time
}

// updateStamp precedes the time, in Unix nanoseconds, at which the update
// an event reports was sent (see stampedPatch).
var updateStamp = []byte(`"sent":"`)

// receiveUpdates reads a watch stream's events until it has n updates
// stamped by stampedPatch or the stream ends, recording each one's latency.
func receiveUpdates(stream io.Reader, n int) watcherReceipts {
	var r watcherReceipts
	lines := bufio.NewReaderSize(stream, 64<<10)
	for r.received < n {
		line, err := lines.ReadSlice('\n')
		if err != nil {
			return r
		}
		_, rest, ok := bytes.Cut(line, updateStamp)
		if !ok {
			continue
		}
		digits, _, _ := bytes.Cut(rest, []byte(`"`))
		sent, err := strconv.ParseInt(string(digits), 10, 64)
		r.last = time.Now()
		r.latency.add(r.last.Sub(time.Unix(0, sent)), err)
		r.received++
	}
	return r
}

// stampedPatch updates the object at path with a merge patch stamped with
// the time it is sent: patch with a %d for the time in Unix nanoseconds,
// as the value of a field "sent" (see updateStamp).
func stampedPatch(ctx context.Context, s *server, path, patch string) error {
	body := fmt.Appendf(nil, patch, time.Now().UnixNano())
	_, err := s.do(ctx, http.MethodPatch, path, "application/merge-patch+json", body)
	return err
}

// writes measures what the cache costs writers: creates, then merge-patch
// updates of the created objects, each for the configured duration, first
// in a closed loop (as fast as each side goes), then paced at the same rate
// on both sides (what the cache costs a write at equal load).
func (b *bench) writes(ctx context.Context) error {
	type phase struct {
		label    string
		outcomes map[string]*outcome
		cpu      map[string]cpuUsage
	}
	phases := make([]phase, 4)
	for i, label := range []string{"create", "update (merge patch)", fmt.Sprintf("create, %s/s", FormatValue(Count, b.cfg.WriteRate)),
		fmt.Sprintf("update, %s/s", FormatValue(Count, b.cfg.WriteRate))} {
		phases[i] = phase{label, map[string]*outcome{}, map[string]cpuUsage{}}
	}
	err := b.sides(ctx, func(ctx context.Context, s *server) error {
		side := s.side()
		collection := "/api/v1/namespaces/" + writesNamespace + "-" + side + "/configmaps"
		name := func(client, i int) string { return fmt.Sprintf("w%03d-%06d", client, i) }
		create := func(ctx context.Context, client, i int) error {
			_, err := s.create(ctx, collection, benchdata.ConfigMap(writesNamespace+"-"+side, name(client, i), 1000))
			return err
		}
		// Every writer created at least one object (forDuration's minimum)
		// in the first phase; updates go to those, round robin.
		var created []int
		update := func(ctx context.Context, client, i int) error {
			patch := fmt.Appendf(nil, `{"data":{"update":"%d"}}`, i)
			_, err := s.do(ctx, http.MethodPatch, collection+"/"+name(client, i%created[client]), "application/merge-patch+json", patch)
			return err
		}
		closed := func(op func(ctx context.Context, client, i int) error) *outcome {
			return closedLoop(ctx, b.cfg.Writers, forDuration(b.cfg.Writers, b.cfg.Duration, 1), op)
		}
		// Paced writes are numbered from 0; paced creates name their
		// objects as one more client, whose names the closed loop never
		// uses, and paced updates go to the closed loop's objects.
		paced := func(op func(ctx context.Context, i int) error) *outcome {
			var n atomic.Int64
			return openLoop(ctx, b.cfg.WriteRate, b.cfg.Duration, func(ctx context.Context) error { return op(ctx, int(n.Add(1)-1)) })
		}
		runs := []func() *outcome{
			func() *outcome { o := closed(create); created = o.opsByClient; return o },
			func() *outcome { return closed(update) },
			func() *outcome {
				return paced(func(ctx context.Context, i int) error { return create(ctx, b.cfg.Writers, i) })
			},
			func() *outcome {
				return paced(func(ctx context.Context, i int) error { return update(ctx, i%b.cfg.Writers, i) })
			},
		}
		for i, run := range runs {
			var o *outcome
			cpu, err := b.cpuDuring(s, func() error { o = run(); return nil })
			if err != nil {
				return err
			}
			phases[i].outcomes[side], phases[i].cpu[side] = o, cpu
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows := make([]Row, len(phases))
	for i, p := range phases {
		rows[i] = Row{Label: p.label, Incomplete: failures(p.outcomes),
			Metrics: append(latencyMetrics(p.outcomes["cache"], p.outcomes["etcd"]), cpuMetrics("write", p.cpu, p.outcomes)...)}
	}
	return b.finish(Scenario{
		ID:    "writes",
		Title: "Writes: what the cache costs writers",
		Workload: fmt.Sprintf("%d writers in a closed loop create 1 KB config maps for %s per side, then update them with merge patches for %s; "+
			"then, paced at %s/s on both sides (open loop: each write starts on time whether or not earlier ones have returned), "+
			"%s more creates and as many updates of the first ones. A closed loop measures each side at its own pace, so its latencies "+
			"are at different loads; the paced rows compare them at the same load. "+
			"The cache-on server also feeds every write to its watch cache; CPU is per successful write, from /proc.",
			b.cfg.Writers, b.cfg.Duration, b.cfg.Duration, FormatValue(Count, b.cfg.WriteRate), b.cfg.Duration),
		Rows: rows,
	})
}
