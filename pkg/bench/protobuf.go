// The protobuf scenario: JSON and protobuf side by side on one cache-on
// server over the same pods: LISTs of everything, kubelets' LISTs, watch
// fan-out, the client's cost to decode a list and to sync an informer, and
// the cache's memory with both encodings kept; and the targets of issue 24.

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// wireEncoding is one of the two encodings compared: its name in the
// report and the media type its clients ask for.
type wireEncoding struct{ name, mediaType string }

// The encodings compared, protobuf first: it is the report's first side,
// so that "protobuf advantage" is JSON's figure over protobuf's (above 1×
// protobuf did better).
var (
	protobufWire = wireEncoding{"protobuf", "application/vnd.kubernetes.protobuf"}
	jsonWire     = wireEncoding{"JSON", "application/json"}
	wires        = []wireEncoding{protobufWire, jsonWire}
)

// The protobuf scenario's repetitions.
const (
	// protobufListPasses LISTs of all pods per encoding, each decoded.
	protobufListPasses = 5
	// informerSyncs informer syncs per encoding.
	informerSyncs = 3
	// fanoutRounds fan-outs per encoding, their events merged.
	fanoutRounds = 2
)

// decoder is what client-go decodes a body of mediaType with: the
// serializer its clientsets negotiate.
func decoder(mediaType string) kruntime.Decoder {
	info, ok := kruntime.SerializerInfoForMediaType(scheme.Codecs.WithoutConversion().SupportedMediaTypes(), mediaType)
	if !ok {
		panic("client-go has no serializer for " + mediaType)
	}
	return info.Serializer
}

// encodingFigures is what the protobuf scenario measured in one encoding.
type encodingFigures struct {
	// listBytes is the size of a LIST of all pods; listRead the time from
	// its request to its last byte, decode the time to decode it into a
	// PodList (on one goroutine) and decodeCPU the process's processor
	// time meanwhile; listServerCPU is the server's processor time per
	// LIST.
	listBytes                   int64
	listRead, decode, decodeCPU outcome
	listServerCPU               float64
	syncWall, syncCPU           outcome // informer syncs
	syncStreamed                bool    // the informer's initial list was a watch with sendInitialEvents
	kubeletRead, kubeletDecoded []*outcome
	fanout                      *fanoutSide
	fanoutServerCPU             float64 // per update, its events to every watcher included
	fanoutClientCPU             float64 // per event received, the writers' patches included
}

// protobufRun is everything the protobuf scenario measured.
type protobufRun struct {
	pods, nodes int
	loaded      directLoad
	// baseline is a cache-on server over an empty etcd; afterJSON the
	// server over the pods after a JSON LIST of all of them, afterBoth
	// after a protobuf one too (every record holding its message).
	baseline, afterJSON, afterBoth memory
	// firstProtobufList is the first protobuf LIST of all pods, which
	// made every pod's message.
	firstProtobufList          time.Duration
	kubeletClients             []int
	duration                   time.Duration
	watchers, updates, writers int
	byWire                     map[string]*encodingFigures
}

// protobuf is the protobuf scenario: ProtobufPods pods (PodsPerNode per
// node, over Namespaces namespaces) written straight into a new etcd, a
// cache-on server over them, and each measurement made in JSON and in
// protobuf, the two alternating which goes first.
func (b *bench) protobuf(ctx context.Context) error {
	r := protobufRun{pods: b.cfg.ProtobufPods, kubeletClients: b.cfg.KubeletClients, duration: b.cfg.Duration,
		watchers: b.cfg.ProtobufWatchers, updates: b.cfg.ProtobufUpdates, writers: b.cfg.FanoutWriters,
		byWire: map[string]*encodingFigures{protobufWire.name: {}, jsonWire.name: {}}}
	r.nodes = max(1, r.pods/b.cfg.PodsPerNode)
	const etcdDir = "etcd-protobuf"
	if err := b.startEtcd(ctx, etcdDir); err != nil {
		return err
	}
	var s *server
	defer func() { b.stopOwn(s, etcdDir) }()
	empty, err := b.startServerAs(ctx, "protobuf-empty", true)
	if err != nil {
		return err
	}
	r.baseline, err = empty.memoryAfterGC(ctx)
	empty.stop()
	if err != nil {
		return err
	}
	if r.loaded, err = b.putPods(ctx, 0, r.pods, b.cfg.Namespaces, r.nodes); err != nil {
		return err
	}
	if s, err = b.startServerAs(ctx, "protobuf", true); err != nil {
		return err
	}

	// Memory: after a JSON LIST of everything, then after a protobuf one,
	// which makes and keeps every pod's message.
	if _, _, err := listAll(ctx, s.accepting(jsonWire.mediaType), nil); err != nil {
		return err
	}
	if r.afterJSON, err = s.memoryAfterGC(ctx); err != nil {
		return err
	}
	began := time.Now()
	if _, _, err := listAll(ctx, s.accepting(protobufWire.mediaType), nil); err != nil {
		return err
	}
	r.firstProtobufList = time.Since(began)
	if r.afterBoth, err = s.memoryAfterGC(ctx); err != nil {
		return err
	}

	b.bar.start("LISTs of all pods, decoded", 2*protobufListPasses)
	for pass := range protobufListPasses {
		for _, w := range alternate(pass) {
			if err := b.listAndDecode(ctx, s, w, r.byWire[w.name], r.pods); err != nil {
				b.bar.finish()
				return err
			}
			b.bar.add(1)
		}
	}
	b.bar.finish()
	for _, f := range r.byWire {
		f.listServerCPU /= protobufListPasses
	}

	b.bar.start("informer syncs", 2*informerSyncs)
	for i := range informerSyncs {
		for _, w := range alternate(i) {
			f := r.byWire[w.name]
			wall, cpu, streamed, err := informerSync(ctx, s.config, w.mediaType, r.pods)
			if err != nil {
				b.bar.finish()
				return fmt.Errorf("%s informer: %w", w.name, err)
			}
			f.syncWall.add(wall, nil)
			f.syncCPU.add(cpu, nil)
			f.syncStreamed = f.syncStreamed || streamed
			b.bar.add(1)
		}
	}
	b.bar.finish()

	for i, clients := range r.kubeletClients {
		for _, decoded := range []bool{false, true} {
			for _, w := range alternate(i) {
				f := r.byWire[w.name]
				o := b.kubeletLists(ctx, s.accepting(w.mediaType), w, f, r, clients, decoded)
				if decoded {
					f.kubeletDecoded = append(f.kubeletDecoded, o)
				} else {
					f.kubeletRead = append(f.kubeletRead, o)
				}
			}
		}
	}

	if err := b.createPodNamespaces(ctx, s); err != nil {
		return err
	}
	// Two rounds, protobuf first then JSON first: a p99 of a few thousand
	// events on a shared machine moves with whichever went first.
	for round := range fanoutRounds {
		for _, w := range alternate(round) {
			work := fanoutWork{collection: "/api/v1/pods", watchers: r.watchers, updates: r.updates, writers: r.writers, timeout: b.cfg.FanoutTimeout,
				watcher: s.accepting(w.mediaType), receive: receiveUpdates}
			if w == protobufWire {
				work.receive = receiveFrames
			}
			var side *fanoutSide
			client0 := processCPU()
			cpu, err := b.cpuDuring(s, func() error {
				var err error
				side, err = work.run(ctx, s, func(ctx context.Context, i int) error {
					ns, name := podIdentity(benchdata.Pod(i%min(r.pods, fanoutPodsMax), b.cfg.Namespaces, r.nodes))
					return stampedPatch(ctx, s, "/api/v1/namespaces/"+ns+"/pods/"+name, `{"metadata":{"annotations":{"sent":"%d"}}}`)
				})
				return err
			})
			if err != nil {
				return fmt.Errorf("%s fan-out: %w", w.name, err)
			}
			f := r.byWire[w.name]
			if f.fanout == nil {
				f.fanout = &fanoutSide{}
			}
			f.fanout.delivery.merge(&side.delivery)
			f.fanout.short += side.short
			f.fanout.eventRate += side.eventRate / fanoutRounds
			f.fanoutServerCPU += cpu.server / float64(fanoutRounds*r.updates)
			f.fanoutClientCPU += (processCPU() - client0).Seconds() / float64(fanoutRounds*max(side.delivery.ops, 1))
		}
	}
	if err := s.alive(); err != nil {
		return err
	}
	return b.finish(protobufScenario(r))
}

// alternate is the encodings in the order the i-th measurement takes
// them: protobuf first when i is even, JSON first when it is odd.
func alternate(i int) []wireEncoding {
	if i%2 == 0 {
		return wires
	}
	return []wireEncoding{wires[1], wires[0]}
}

// listAll LISTs all pods from the cache (resourceVersion=0) with client,
// reading the response into buf (reset first; a new buffer if nil), and
// returns the body and how long it took from the request to its last byte.
func listAll(ctx context.Context, client *apiClient, buf *bytes.Buffer) ([]byte, time.Duration, error) {
	if buf == nil {
		buf = &bytes.Buffer{}
	}
	buf.Reset()
	began := time.Now()
	resp, err := client.send(ctx, http.MethodGet, "/api/v1/pods?resourceVersion=0", "", nil)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), time.Since(began), nil
}

// listAndDecode LISTs all pods in w, measuring the server's processor time
// meanwhile, then decodes the body into a PodList on this goroutine,
// timing it by the clock and by the process's processor time (after a
// collection, so that no earlier garbage is collected meanwhile).
func (b *bench) listAndDecode(ctx context.Context, s *server, w wireEncoding, f *encodingFigures, pods int) error {
	var body []byte
	var took time.Duration
	cpu, err := b.cpuDuring(s, func() error {
		var err error
		body, took, err = listAll(ctx, s.accepting(w.mediaType), nil)
		return err
	})
	if err != nil {
		return err
	}
	f.listRead.add(took, nil)
	f.listServerCPU += cpu.server
	f.listBytes = int64(len(body))
	runtime.GC()
	var list corev1.PodList
	cpu0 := processCPU()
	wall, err := timed(func() error {
		_, _, err := decoder(w.mediaType).Decode(body, nil, &list)
		return err
	})
	if err != nil {
		return fmt.Errorf("decoding a %s list: %w", w.name, err)
	}
	f.decodeCPU.add(processCPU()-cpu0, nil)
	f.decode.add(wall, nil)
	if len(list.Items) != pods {
		return fmt.Errorf("a %s LIST of all pods decoded into %d pods, want %d", w.name, len(list.Items), pods)
	}
	return nil
}

// processCPU is the processor time this process has used, user and
// system, from getrusage.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// informerSync starts a SharedInformer on all pods, from client-go's
// informer factory and a clientset speaking mediaType, and returns the
// time and this process's processor time from its start to HasSynced
// (checked every millisecond), and whether its initial list was a watch
// with sendInitialEvents (client-go's WatchListClient). The server runs
// in another process: its work is not in the processor time.
func informerSync(ctx context.Context, cfg *rest.Config, mediaType string, pods int) (wall, cpu time.Duration, streamed bool, err error) {
	c := rest.CopyConfig(cfg)
	c.ContentType, c.AcceptContentTypes = mediaType, mediaType
	var sawStream atomic.Bool
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("sendInitialEvents") == "true" {
				sawStream.Store(true)
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return 0, 0, false, err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	informer := factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop)
	runtime.GC()
	cpu0, began := processCPU(), time.Now()
	factory.Start(stop)
	deadline := began.Add(5 * time.Minute)
	for !informer.HasSynced() {
		if ctx.Err() != nil {
			return 0, 0, false, ctx.Err()
		}
		if time.Now().After(deadline) {
			return 0, 0, false, fmt.Errorf("not synced after 5 minutes")
		}
		time.Sleep(time.Millisecond)
	}
	wall, cpu = time.Since(began), processCPU()-cpu0
	if n := len(informer.GetStore().ListKeys()); n != pods {
		return 0, 0, false, fmt.Errorf("synced with %d pods, want %d", n, pods)
	}
	return wall, cpu, sawStream.Load(), nil
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// kubeletLists runs clients kubelets LISTing their node's pods
// (consistently) in a closed loop for the run's duration, in w: reading
// each answer to the end, or also decoding it into a PodList (decoded).
// An answer is checked to hold its node's pods: by its size (at least
// 90% of the node's pods at the encoding's average size in a LIST of all
// pods) or, decoded, by its items.
func (b *bench) kubeletLists(ctx context.Context, client *apiClient, w wireEncoding, f *encodingFigures, r protobufRun, clients int, decoded bool) *outcome {
	perNode := r.pods / r.nodes
	minBytes := f.listBytes / int64(r.pods) * int64(perNode) * 9 / 10
	dec := decoder(w.mediaType)
	bufs := make([]bytes.Buffer, clients)
	return closedLoop(ctx, clients, forDuration(clients, r.duration, 1), func(ctx context.Context, client_, i int) error {
		node := benchdata.Node(client_*7919+i*31, r.nodes)
		resp, err := client.send(ctx, http.MethodGet, nodePodsPath(node), "", nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		buf := &bufs[client_]
		buf.Reset()
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return err
		}
		if !decoded {
			if int64(buf.Len()) < minBytes {
				return fmt.Errorf("%s LIST of %s's pods: %d bytes, expected at least %d", w.name, node, buf.Len(), minBytes)
			}
			return nil
		}
		var list corev1.PodList
		if _, _, err := dec.Decode(buf.Bytes(), nil, &list); err != nil {
			return err
		}
		if len(list.Items) < perNode {
			return fmt.Errorf("%s LIST of %s's pods: %d pods, expected at least %d", w.name, node, len(list.Items), perNode)
		}
		return nil
	})
}

// protobufStamp precedes, in a protobuf watch event, the time at which the
// update it reports was sent (see stampedPatch): the map entry of the
// annotation "sent" (its key, field 1, then its value's tag, field 2).
var protobufStamp = []byte("\x0a\x04sent\x12")

// receiveFrames is receiveUpdates for a protobuf watch: it reads the
// stream's frames (a 4-byte big-endian length, then a WatchEvent) until it
// has n updates stamped by stampedPatch or the stream ends, recording each
// one's latency.
func receiveFrames(stream io.Reader, n int) watcherReceipts {
	var r watcherReceipts
	in := bufio.NewReaderSize(stream, 64<<10)
	var head [4]byte
	var frame []byte
	for r.received < n {
		if _, err := io.ReadFull(in, head[:]); err != nil {
			return r
		}
		size := int(binary.BigEndian.Uint32(head[:]))
		frame = slices.Grow(frame[:0], size)[:size]
		if _, err := io.ReadFull(in, frame); err != nil {
			return r
		}
		_, rest, ok := bytes.Cut(frame, protobufStamp)
		if !ok {
			continue
		}
		length, k := binary.Uvarint(rest)
		if k <= 0 || length > uint64(len(rest)-k) {
			continue
		}
		sent, err := strconv.ParseInt(string(rest[k:k+int(length)]), 10, 64)
		r.last = time.Now()
		r.latency.add(r.last.Sub(time.Unix(0, sent)), err)
		r.received++
	}
	return r
}

// protobufTarget is one of issue 24's targets: a figure measured and the
// bound it should meet.
type protobufTarget struct {
	name  string
	value float64
	// bound, and whether value must be at least (atLeast) or at most it.
	bound   float64
	atLeast bool
}

// pass says whether the target was met.
func (t protobufTarget) pass() bool {
	if t.atLeast {
		return t.value >= t.bound
	}
	return t.value <= t.bound
}

// verdict is "pass" or "miss".
func (t protobufTarget) verdict() string {
	if t.pass() {
		return "pass"
	}
	return "miss"
}

// String is the target in words, e.g. "protobuf LIST ... ≥ 1×: 1.3× (pass)".
func (t protobufTarget) String() string {
	op := "≤"
	if t.atLeast {
		op = "≥"
	}
	return fmt.Sprintf("%s %s %s×: %s× (%s)", t.name, op, significant(t.bound, 2), significant(t.value, 2), t.verdict())
}

// perPodHeap is the growth of the server's Go heap per pod at m.
func (r protobufRun) perPodHeap(m memory) float64 {
	return float64(m.heap-r.baseline.heap) / float64(r.pods)
}

// jsonPerPod is the pods' stored JSON size, on average.
func (r protobufRun) jsonPerPod() float64 { return float64(r.loaded.jsonBytes) / float64(r.pods) }

// p50 is an outcome's median in seconds.
func p50(o *outcome) float64 { return o.latency.percentile(0.5).Seconds() }

// ratio is a/b, or 0 if b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// targets are issue 24's targets against what r measured: a protobuf LIST
// of all pods from the cache at least as fast as a JSON one (request to
// last byte, medians), the client's CPU to sync an informer at least 2×
// lower in protobuf, fan-out p99 no slower in protobuf, and the cache's
// Go heap per pod with both encodings kept at most 2× the pod's JSON.
func (r protobufRun) targets() []protobufTarget {
	pb, js := r.byWire[protobufWire.name], r.byWire[jsonWire.name]
	t := []protobufTarget{
		{name: "LIST all from the cache, JSON time ÷ protobuf time", value: ratio(p50(&js.listRead), p50(&pb.listRead)), bound: 1, atLeast: true},
		{name: "informer sync, client CPU, JSON ÷ protobuf", value: ratio(p50(&js.syncCPU), p50(&pb.syncCPU)), bound: 2, atLeast: true},
	}
	if pb.fanout != nil && js.fanout != nil {
		t = append(t, protobufTarget{name: "fan-out p99, JSON ÷ protobuf", bound: 1, atLeast: true,
			value: ratio(js.fanout.delivery.latency.percentile(0.99).Seconds(), pb.fanout.delivery.latency.percentile(0.99).Seconds())})
	}
	return append(t, protobufTarget{name: "Go heap per pod, both encodings kept, ÷ its JSON", value: ratio(r.perPodHeap(r.afterBoth), r.jsonPerPod()), bound: 2})
}

// both is a metric measured in both encodings: Cache is protobuf's, Etcd
// JSON's.
func both(name string, unit Unit, pb, js float64, higherIsBetter bool) Metric {
	return Metric{Name: name, Unit: unit, Cache: pb, Etcd: js, HigherIsBetter: higherIsBetter}
}

// protobufScenario reports the protobuf scenario: a row per measurement,
// protobuf and JSON side by side, then the targets.
func protobufScenario(r protobufRun) Scenario {
	pb, js := r.byWire[protobufWire.name], r.byWire[jsonWire.name]
	n := FormatValue(Count, float64(r.pods))
	rows := []Row{
		{Label: fmt.Sprintf("LIST all %s pods, resourceVersion=0", n), Metrics: []Metric{
			both("bytes", Bytes, float64(pb.listBytes), float64(js.listBytes), false),
			both("request to last byte, p50", Seconds, p50(&pb.listRead), p50(&js.listRead), false),
			both("server CPU per LIST", CPUSeconds, pb.listServerCPU, js.listServerCPU, false),
			both("client: decode into a PodList, p50", Seconds, p50(&pb.decode), p50(&js.decode), false),
			both("client: decode CPU, p50", CPUSeconds, p50(&pb.decodeCPU), p50(&js.decodeCPU), false),
			both("request and decode, p50", Seconds, p50(&pb.listRead)+p50(&pb.decode), p50(&js.listRead)+p50(&js.decode), false),
			{Name: "first protobuf LIST (makes every pod's message)", Unit: Seconds, Cache: r.firstProtobufList.Seconds(), FirstOnly: true},
		}},
		{Label: fmt.Sprintf("informer sync, %s pods", n), Metrics: []Metric{
			both("start to HasSynced, p50", Seconds, p50(&pb.syncWall), p50(&js.syncWall), false),
			both("client CPU, p50", CPUSeconds, p50(&pb.syncCPU), p50(&js.syncCPU), false),
		}},
	}
	for i, clients := range r.kubeletClients {
		for _, decoded := range []bool{false, true} {
			label, get := fmt.Sprintf("kubelets: %d clients, read to the end", clients), func(f *encodingFigures) *outcome { return f.kubeletRead[i] }
			if decoded {
				label, get = fmt.Sprintf("kubelets: %d clients, decoded", clients), func(f *encodingFigures) *outcome { return f.kubeletDecoded[i] }
			}
			if i >= len(pb.kubeletRead) || i >= len(pb.kubeletDecoded) || i >= len(js.kubeletRead) || i >= len(js.kubeletDecoded) {
				continue
			}
			o, q := get(pb), get(js)
			rows = append(rows, Row{Label: label, Incomplete: failures(map[string]*outcome{protobufWire.name: o, jsonWire.name: q}), Metrics: []Metric{
				both("throughput", PerSecond, o.throughput(), q.throughput(), true),
				both("p50", Seconds, o.latency.percentile(0.5).Seconds(), q.latency.percentile(0.5).Seconds(), false),
				both("p99", Seconds, o.latency.percentile(0.99).Seconds(), q.latency.percentile(0.99).Seconds(), false),
			}})
		}
	}
	if pb.fanout != nil && js.fanout != nil {
		row := Row{Label: fmt.Sprintf("fan-out: %s watchers of all pods", FormatValue(Count, float64(r.watchers))), Metrics: []Metric{
			both("events per second", PerSecond, pb.fanout.eventRate, js.fanout.eventRate, true),
			both("p50", Seconds, pb.fanout.delivery.latency.percentile(0.5).Seconds(), js.fanout.delivery.latency.percentile(0.5).Seconds(), false),
			both("p99", Seconds, pb.fanout.delivery.latency.percentile(0.99).Seconds(), js.fanout.delivery.latency.percentile(0.99).Seconds(), false),
			both("server CPU per update", CPUSeconds, pb.fanoutServerCPU, js.fanoutServerCPU, false),
			both("benchmark (clients) CPU per event", CPUSeconds, pb.fanoutClientCPU, js.fanoutClientCPU, false),
		}}
		for _, w := range wires {
			if short := r.byWire[w.name].fanout.short; short > 0 {
				row.Incomplete += fmt.Sprintf("%s: %d watchers did not receive every event. ", w.name, short)
			}
		}
		row.Incomplete = strings.TrimSpace(row.Incomplete)
		rows = append(rows, row)
	}
	rows = append(rows, Row{Label: "cache memory per pod", Metrics: []Metric{
		both("Go heap per pod", Bytes, r.perPodHeap(r.afterBoth), r.perPodHeap(r.afterJSON), false),
		both("Go heap per pod ÷ its JSON", Count, r.perPodHeap(r.afterBoth)/r.jsonPerPod(), r.perPodHeap(r.afterJSON)/r.jsonPerPod(), false),
	}})
	targets := r.targets()
	var words []string
	row := Row{Label: "targets"}
	for _, t := range targets {
		words = append(words, t.String())
		row.Metrics = append(row.Metrics, Metric{Name: fmt.Sprintf("%s (target %s %s×): %s", t.name, map[bool]string{true: "≥", false: "≤"}[t.atLeast],
			significant(t.bound, 2), t.verdict()), Unit: Count, Cache: t.value, FirstOnly: true})
	}
	rows = append(rows, row)
	sync := "LIST (resourceVersion=0) then watch"
	if pb.syncStreamed || js.syncStreamed {
		sync = "streamed watch with sendInitialEvents (client-go's WatchListClient, on by default)"
	}
	return Scenario{
		ID:    "protobuf",
		Title: "Protobuf and JSON side by side",
		Sides: []string{protobufWire.name, jsonWire.name},
		Workload: fmt.Sprintf("%s (%s nodes, over the namespaces), then a cache-on server over them; every measurement is made in protobuf and in JSON "+
			"(Accept: %s or %s), alternating which goes first. "+
			"LIST all: %d LISTs of all pods per encoding at resourceVersion=0 (from the cache), each read to the end (the server's CPU from /proc meanwhile), "+
			"then decoded by the benchmark into a typed PodList on one goroutine with client-go's serializer for the media type, after a forced GC, "+
			"timed by the clock and by the process's processor time (getrusage); the first protobuf LIST, which made every pod's message, is apart. "+
			"Informer sync: %d syncs per encoding of a SharedInformer on all pods from client-go's informer factory, its clientset's ContentType and "+
			"AcceptContentTypes set to the encoding, from Start to HasSynced (its initial list a %s); client CPU is this process's processor time over the sync "+
			"(decoding, TLS, the informer's store; the server runs in its own process). "+
			"Kubelets: clients in a closed loop for %s per encoding LIST their node's pods (fieldSelector spec.nodeName, consistent, %d pods), "+
			"reading the answer to the end, then again decoding it into a PodList. "+
			"Fan-out: %s watchers of all pods in the encoding while %d writers make %s merge patches of %d pods' annotations, %d times per encoding, the events of all "+
			"together (events per second the mean of the rounds); latency from the start of each patch to each watcher's receipt of its event "+
			"(found in the JSON line or the protobuf frame, not decoded); server CPU per update is the server's processor time over the fan-out (the patches, "+
			"and their events to every watcher) ÷ the updates; the benchmark's, over the same time (the watchers reading their streams and the writers), ÷ the events received. "+
			"Memory: the server's Go heap after a forced GC, less that of a cache-on server over an empty etcd (%s), per pod: after a JSON LIST of all pods "+
			"(the JSON column), then after a protobuf one too, every record then holding its message as well (the protobuf column); "+
			"÷ its JSON is over the pods' stored JSON (%s each). **protobuf advantage** is JSON's figure ÷ protobuf's for times, sizes and costs, "+
			"protobuf's ÷ JSON's for throughputs: above 1× protobuf did better. Targets: %s.",
			r.loaded.describe(), FormatValue(Count, float64(r.nodes)), protobufWire.mediaType, jsonWire.mediaType,
			protobufListPasses, informerSyncs, sync, r.duration, r.pods/r.nodes,
			FormatValue(Count, float64(r.watchers)), r.writers, FormatValue(Count, float64(r.updates)), min(r.pods, fanoutPodsMax), fanoutRounds,
			FormatValue(Bytes, float64(r.baseline.heap)), FormatValue(Bytes, r.jsonPerPod()), strings.Join(words, "; ")),
		Rows: rows,
	}
}
