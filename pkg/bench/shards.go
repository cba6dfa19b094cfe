// The shards scenario: KEP-5866's sharded list and watch (4 informers, each a
// range of uid hashes, against one unsharded informer), and the check that
// their union is the whole.

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/bits"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// shardCount is how many shards the shards scenario splits the pods into.
const shardCount = 4

// shardEventGrace is how long, after its last update, a watch phase of the
// shards scenario waits for its watchers to receive every event.
const shardEventGrace = 30 * time.Second

// podsPath is the collection of all pods.
const podsPath = "/api/v1/pods"

// hashRange is the uid hashes from first to last, both included: a shard.
type hashRange struct{ first, last uint64 }

// shardRanges splits the 64-bit hash space into n ranges of (nearly) equal
// size, in order, without gap or overlap.
func shardRanges(n int) []hashRange {
	ranges := make([]hashRange, n)
	for i := range ranges {
		// i·2^64/n, which fits in 64 bits since i < n.
		ranges[i].first, _ = bits.Div64(uint64(i), 0, uint64(n))
		if i > 0 {
			ranges[i-1].last = ranges[i].first - 1
		}
	}
	ranges[n-1].last = math.MaxUint64
	return ranges
}

// bounds are the range's start, inclusive, and end, exclusive, as a
// shardSelector writes them: 0x and 16 hex digits, the last range's end
// 2^64.
func (r hashRange) bounds() (start, end string) {
	end = "0x10000000000000000"
	if r.last != math.MaxUint64 {
		end = fmt.Sprintf("0x%016x", r.last+1)
	}
	return fmt.Sprintf("0x%016x", r.first), end
}

// selector is the shard's shardSelector (KEP-5866).
func (r hashRange) selector() string {
	start, end := r.bounds()
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", start, end)
}

// holds says whether the FNV-1a 64 hash of uid, the hash KEP-5866 defines,
// is in the range.
func (r hashRange) holds(uid string) bool {
	h := fnv.New64a()
	h.Write([]byte(uid))
	sum := h.Sum64()
	return r.first <= sum && sum <= r.last
}

// informerList is an informer's initial LIST and what the benchmark read
// of it.
type informerList struct {
	took  time.Duration
	bytes int64
	cpu   cpuUsage
	// resourceVersion and shardInfo (its selector; "" without shardInfo)
	// are the list's metadata.
	resourceVersion, shardInfo string
	// pods are the items' namespace/name and uids their uids, in order.
	pods, uids []string
}

// listInformer LISTs path as client-go's reflector does when it starts:
// resourceVersion=0 and no limit, the whole list, read to the end; the
// server's and etcd's CPU is measured over the request alone, the items
// decoded afterwards.
func (b *bench) listInformer(ctx context.Context, s *server, path string) (informerList, error) {
	var l informerList
	var body []byte
	var err error
	l.cpu, err = b.cpuDuring(s, func() error {
		var err error
		l.took, err = timed(func() error {
			resp, err := s.send(ctx, http.MethodGet, withQuery(path, "resourceVersion=0"), "", nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err = io.ReadAll(resp.Body)
			return err
		})
		return err
	})
	if err != nil {
		return l, err
	}
	l.bytes = int64(len(body))
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
			ShardInfo       struct {
				Selector string `json:"selector"`
			} `json:"shardInfo"`
		} `json:"metadata"`
		Items []struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
				UID       string `json:"uid"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return l, fmt.Errorf("GET %s: %w", path, err)
	}
	l.resourceVersion, l.shardInfo = list.Metadata.ResourceVersion, list.Metadata.ShardInfo.Selector
	for _, it := range list.Items {
		l.pods = append(l.pods, it.Metadata.Namespace+"/"+it.Metadata.Name)
		l.uids = append(l.uids, it.Metadata.UID)
	}
	return l, nil
}

// informerWatch is an informer's watch, from its list's resourceVersion,
// and what it received.
type informerWatch struct {
	path, resourceVersion string
	// pods and events are the pod (namespace/name) and the eventKey of
	// every event but bookmarks, in order; received counts them as they
	// come.
	pods, events []string
	received     atomic.Int64
	// bytes is the size of the stream, bookmarks included.
	bytes int64
	// err is what ended the watch before its phase did, or an ERROR event.
	err error
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// read decodes the watch's events from stream until it ends; an end
// after ctx's is the phase's.
func (w *informerWatch) read(ctx context.Context, stream io.Reader) {
	counted := &countingReader{r: stream}
	defer func() { w.bytes = counted.n }()
	events := json.NewDecoder(counted)
	for {
		var ev watchEvent
		if err := events.Decode(&ev); err != nil {
			if ctx.Err() == nil {
				w.err = fmt.Errorf("ended early: %w", err)
			}
			return
		}
		meta := ev.Object.Metadata
		switch ev.Type {
		case "BOOKMARK":
		case "ERROR":
			w.err = fmt.Errorf("an ERROR event, code %d", ev.Object.Code)
			return
		default:
			w.pods = append(w.pods, meta.Namespace+"/"+meta.Name)
			w.events = append(w.events, eventKey(meta.Namespace, meta.Name, meta.ResourceVersion))
			w.received.Add(1)
		}
	}
}

// watchPhase runs one watch phase of the shards scenario against s: every
// watch of groups opens from its resourceVersion with bookmarks, then the
// paced writer makes its updates (see updatePods); the phase ends when each
// group's watches have together received an event per successful update,
// or shardEventGrace after the last update. It returns the server's and
// etcd's CPU over the whole phase and the writer's outcome.
func (b *bench) watchPhase(ctx context.Context, s *server, phase string, groups [][]*informerWatch) (cpuUsage, *outcome, error) {
	var writes *outcome
	cpu, err := b.cpuDuring(s, func() error {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		for _, w := range slices.Concat(groups...) {
			query := "watch=1&allowWatchBookmarks=true&resourceVersion=" + url.QueryEscape(w.resourceVersion)
			resp, err := s.send(ctx, http.MethodGet, withQuery(w.path, query), "", nil)
			if err != nil {
				return err
			}
			wg.Go(func() {
				defer resp.Body.Close()
				w.read(ctx, resp.Body)
			})
		}
		writes = b.updatePods(ctx, s, phase)
		deadline := time.Now().Add(shardEventGrace)
		for !allReceived(groups, writes.ops) && time.Now().Before(deadline) && ctx.Err() == nil {
			sleep(ctx, 10*time.Millisecond)
		}
		return nil
	})
	return cpu, writes, err
}

// allReceived says whether each group's watches have together received at
// least n events.
func allReceived(groups [][]*informerWatch, n int64) bool {
	for _, g := range groups {
		var got int64
		for _, w := range g {
			got += w.received.Load()
		}
		if got < n {
			return false
		}
	}
	return true
}

// updatePods makes ShardUpdates merge patches of an annotation of pods at
// ShardRate per second (open loop), update k to pod (k × 7919) mod Pods,
// which spreads them over the pods and their namespaces; each value is
// unique to the side, the phase and the update, so that none is a no-op.
func (b *bench) updatePods(ctx context.Context, s *server, phase string) *outcome {
	var next atomic.Int64
	// Half an update more than the updates' time, so that openLoop's
	// rounding down of rate × duration makes exactly ShardUpdates.
	d := time.Duration((float64(b.cfg.ShardUpdates) + 0.5) / b.cfg.ShardRate * float64(time.Second))
	return openLoop(ctx, b.cfg.ShardRate, d, func(ctx context.Context) error {
		k := int(next.Add(1) - 1)
		ns, name := podIdentity(benchdata.Pod(k*7919%b.cfg.Pods, b.cfg.Namespaces, b.cfg.Nodes))
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"watchcache-bench/shards":"%s-%s-%d"}}}`, s.side(), phase, k)
		_, err := s.do(ctx, http.MethodPatch, "/api/v1/namespaces/"+ns+"/pods/"+name, "application/merge-patch+json", patch)
		return err
	})
}

// shardInformer is one sharded informer: its range, list and watch.
type shardInformer struct {
	shard hashRange
	list  informerList
	watch *informerWatch
}

// shardSide is what the shards scenario measured on one side.
type shardSide struct {
	// The first phase: the unsharded informer alone.
	whole       informerList
	wholeWatch  *informerWatch
	wholeCPU    cpuUsage
	wholeWrites *outcome
	// The second: the sharded informers, and the unsharded watcher beside
	// them that their watches are checked against.
	shards       []shardInformer
	beside       *informerWatch
	shardsCPU    cpuUsage
	shardsWrites *outcome
}

// podsCaughtUp makes a consistent read of the pods, which the cache-on
// server answers once its pods have caught up with etcd: after it, a list
// at resourceVersion=0 holds every pod written before (settle reads
// namespaces, whose cache is not the pods'), and a watch from its
// resourceVersion no write of the other side or of an earlier phase.
func podsCaughtUp(ctx context.Context, s *server) error {
	_, err := s.do(ctx, http.MethodGet, podsPath+"?limit=1", "", nil)
	return err
}

// shardsOn runs the shards scenario's two phases against s.
func (b *bench) shardsOn(ctx context.Context, s *server) (*shardSide, error) {
	r := &shardSide{}
	if err := podsCaughtUp(ctx, s); err != nil {
		return nil, err
	}
	var err error
	if r.whole, err = b.listInformer(ctx, s, podsPath); err != nil {
		return nil, err
	}
	r.wholeWatch = &informerWatch{path: podsPath, resourceVersion: r.whole.resourceVersion}
	if r.wholeCPU, r.wholeWrites, err = b.watchPhase(ctx, s, "unsharded", [][]*informerWatch{{r.wholeWatch}}); err != nil {
		return nil, err
	}
	if err := podsCaughtUp(ctx, s); err != nil {
		return nil, err
	}
	var watches []*informerWatch
	for _, shard := range shardRanges(shardCount) {
		path := podsPath + "?shardSelector=" + url.QueryEscape(shard.selector())
		list, err := b.listInformer(ctx, s, path)
		if err != nil {
			return nil, err
		}
		w := &informerWatch{path: path, resourceVersion: list.resourceVersion}
		r.shards = append(r.shards, shardInformer{shard: shard, list: list, watch: w})
		watches = append(watches, w)
	}
	// The lists ran one after the other, caught up, with no pod written
	// meanwhile: from the first one's resourceVersion, the watcher sees
	// every event any shard may.
	r.beside = &informerWatch{path: podsPath, resourceVersion: r.shards[0].list.resourceVersion}
	r.shardsCPU, r.shardsWrites, err = b.watchPhase(ctx, s, "sharded", [][]*informerWatch{{r.beside}, watches})
	return r, err
}

// unionMismatch compares, as sets of keys, the union of parts with whole:
// it describes the keys that occur more than once (in whole, or across
// the parts), those of whole that no part has and those of the parts that
// whole lacks, each with an example; "" if the union is whole and no key
// is repeated. what names the keys ("listed pods").
func unionMismatch(what string, whole []string, parts [][]string) string {
	var problems []string
	add := func(n int, example, says string) {
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s %s (e.g. %s)", n, what, says, example))
		}
	}
	wanted := map[string]bool{}
	repeated, example := 0, ""
	for _, k := range whole {
		if wanted[k] {
			repeated, example = repeated+1, k
		}
		wanted[k] = true
	}
	add(repeated, example, "twice in the unsharded one")
	seen := map[string]bool{}
	repeated, extra := 0, 0
	exampleExtra := ""
	for _, part := range parts {
		for _, k := range part {
			switch {
			case seen[k]:
				repeated, example = repeated+1, k
			case !wanted[k]:
				extra, exampleExtra = extra+1, k
			}
			seen[k] = true
		}
	}
	add(repeated, example, "more than once in the shards")
	add(extra, exampleExtra, "in the shards but not in the unsharded one")
	missing := 0
	for _, k := range whole {
		if !seen[k] {
			missing, example = missing+1, k
		}
	}
	add(missing, example, "in no shard")
	return strings.Join(problems, ", ")
}

// shardRows are the shards scenario's rows, in order: the unsharded
// informer, each shard, the shards together.
const (
	unshardedRow = 0
	togetherRow  = shardCount + 1
)

// problems checks what one side's shards received against the unsharded
// informer's, returning what is wrong by row (see unshardedRow).
func (r *shardSide) problems() [togetherRow + 1][]string {
	var notes [togetherRow + 1][]string
	short := func(row int, what string, w *informerWatch, writes *outcome) {
		if w.err != nil {
			notes[row] = append(notes[row], fmt.Sprintf("%s: %v", what, w.err))
		}
		if got := w.received.Load(); got != writes.ops {
			notes[row] = append(notes[row], fmt.Sprintf("%s received %d events for %d successful updates (waiting up to %s after the last)", what, got, writes.ops, shardEventGrace))
		}
		if f := failures(map[string]*outcome{"updates": writes}); f != "" {
			notes[row] = append(notes[row], f)
		}
	}
	short(unshardedRow, "the watch", r.wholeWatch, r.wholeWrites)
	shardOf := map[string]int{} // pod → shard, as listed
	var listed, watched [][]string
	for i, sh := range r.shards {
		row := 1 + i
		if sel := sh.shard.selector(); sh.list.shardInfo != sel {
			notes[row] = append(notes[row], fmt.Sprintf("metadata.shardInfo.selector is %q, want %q", sh.list.shardInfo, sel))
		}
		outside := 0
		for j, uid := range sh.list.uids {
			shardOf[sh.list.pods[j]] = i
			if !sh.shard.holds(uid) {
				outside++
			}
		}
		if outside > 0 {
			notes[row] = append(notes[row], fmt.Sprintf("%d listed pods' uid hashes are outside the shard", outside))
		}
		listed, watched = append(listed, sh.list.pods), append(watched, sh.watch.events)
	}
	for i, sh := range r.shards {
		if sh.watch.err != nil {
			notes[1+i] = append(notes[1+i], fmt.Sprintf("the watch: %v", sh.watch.err))
		}
		foreign := 0
		for _, pod := range sh.watch.pods {
			if shard, ok := shardOf[pod]; !ok || shard != i {
				foreign++
			}
		}
		if foreign > 0 {
			notes[1+i] = append(notes[1+i], fmt.Sprintf("%d watch events of pods not listed in the shard", foreign))
		}
	}
	if m := unionMismatch("listed pods", r.whole.pods, listed); m != "" {
		notes[togetherRow] = append(notes[togetherRow], "UNION CHECK FAILED: the shards' lists are not the unsharded list: "+m)
	}
	if m := unionMismatch("watch events", r.beside.events, watched); m != "" {
		notes[togetherRow] = append(notes[togetherRow], "UNION CHECK FAILED: the shards' watch events are not those of the unsharded watcher beside them: "+m)
	}
	short(togetherRow, "the unsharded watcher beside the shards", r.beside, r.shardsWrites)
	return notes
}

// shards is KEP-5866's sharded list and watch: 4 informers, each of a
// quarter of the pods by uid hash, against one unsharded informer, and
// whether the shards together are the whole.
func (b *bench) shards(ctx context.Context) error {
	sides := map[string]*shardSide{}
	err := b.sides(ctx, func(ctx context.Context, s *server) error {
		var err error
		sides[s.side()], err = b.shardsOn(ctx, s)
		return err
	})
	if err != nil {
		return err
	}
	rows := make([]Row, togetherRow+1)
	rows[unshardedRow].Label = "unsharded informer"
	for i := range shardCount {
		rows[1+i].Label = fmt.Sprintf("shard %d of %d", i+1, shardCount)
	}
	rows[togetherRow].Label = fmt.Sprintf("%d shards together", shardCount)
	failed := false
	for _, side := range []string{"cache", "etcd"} {
		for i, notes := range sides[side].problems() {
			if len(notes) > 0 {
				rows[i].Incomplete = strings.TrimPrefix(rows[i].Incomplete+"; "+side+": "+strings.Join(notes, "; "), "; ")
				failed = true
			}
		}
	}
	metric := func(name string, unit Unit, value func(*shardSide) float64) Metric {
		return Metric{Name: name, Unit: unit, Cache: value(sides["cache"]), Etcd: value(sides["etcd"])}
	}
	listMetrics := func(list func(*shardSide) informerList) []Metric {
		return []Metric{
			metric("list latency", Seconds, func(r *shardSide) float64 { return list(r).took.Seconds() }),
			metric("list bytes", Bytes, func(r *shardSide) float64 { return float64(list(r).bytes) }),
			metric("list server CPU", CPUSeconds, func(r *shardSide) float64 { return list(r).cpu.server }),
			metric("objects", Count, func(r *shardSide) float64 { return float64(len(list(r).pods)) }),
		}
	}
	watchMetrics := func(watch func(*shardSide) []*informerWatch) []Metric {
		sum := func(r *shardSide, of func(w *informerWatch) int64) (n float64) {
			for _, w := range watch(r) {
				n += float64(of(w))
			}
			return n
		}
		return []Metric{
			metric("watch bytes", Bytes, func(r *shardSide) float64 { return sum(r, func(w *informerWatch) int64 { return w.bytes }) }),
			metric("events", Count, func(r *shardSide) float64 { return sum(r, func(w *informerWatch) int64 { return w.received.Load() }) }),
		}
	}
	phaseCPU := func(cpu func(*shardSide) cpuUsage) []Metric {
		return []Metric{
			metric("watch-phase server CPU", CPUSeconds, func(r *shardSide) float64 { return cpu(r).server }),
			metric("watch-phase etcd CPU", CPUSeconds, func(r *shardSide) float64 { return cpu(r).etcd }),
		}
	}
	// together sums the shards' lists.
	together := func(r *shardSide) informerList {
		var sum informerList
		for _, sh := range r.shards {
			sum.took += sh.list.took
			sum.bytes += sh.list.bytes
			sum.cpu.server += sh.list.cpu.server
			sum.cpu.etcd += sh.list.cpu.etcd
			sum.pods = append(sum.pods, sh.list.pods...)
		}
		return sum
	}
	rows[unshardedRow].Metrics = slices.Concat(
		listMetrics(func(r *shardSide) informerList { return r.whole }),
		[]Metric{metric("list etcd CPU", CPUSeconds, func(r *shardSide) float64 { return r.whole.cpu.etcd })},
		watchMetrics(func(r *shardSide) []*informerWatch { return []*informerWatch{r.wholeWatch} }),
		phaseCPU(func(r *shardSide) cpuUsage { return r.wholeCPU }))
	for i := range shardCount {
		rows[1+i].Metrics = append(listMetrics(func(r *shardSide) informerList { return r.shards[i].list }),
			watchMetrics(func(r *shardSide) []*informerWatch { return []*informerWatch{r.shards[i].watch} })...)
	}
	rows[togetherRow].Metrics = slices.Concat(
		listMetrics(together),
		[]Metric{
			// 0 when the unsharded list's CPU, read in 10 ms ticks, was 0.
			metric("list server CPU ÷ unsharded's", Count, func(r *shardSide) float64 {
				if r.whole.cpu.server == 0 {
					return 0
				}
				return together(r).cpu.server / r.whole.cpu.server
			}),
			metric("list etcd CPU", CPUSeconds, func(r *shardSide) float64 { return together(r).cpu.etcd }),
		},
		watchMetrics(func(r *shardSide) []*informerWatch {
			var ws []*informerWatch
			for _, sh := range r.shards {
				ws = append(ws, sh.watch)
			}
			return ws
		}),
		phaseCPU(func(r *shardSide) cpuUsage { return r.shardsCPU }))
	return b.finish(Scenario{
		ID:       "shards",
		Title:    "Sharded list and watch (KEP-5866): 4 sharded informers against one unsharded",
		Workload: b.shardsWorkload(failed),
		Rows:     rows,
	})
}

// shardsWorkload describes the shards scenario, and the outcome of its
// checks: failed says that some check failed on some side.
func (b *bench) shardsWorkload(failed bool) string {
	var bounds []string
	for _, r := range shardRanges(shardCount) {
		start, end := r.bounds()
		bounds = append(bounds, "["+start+", "+end+")")
	}
	checks := fmt.Sprintf("Checks passed on both sides: the %d shards' lists held each pod of the unsharded list exactly once, each pod in the shard "+
		"its uid's hash puts it, each list's metadata.shardInfo echoed its selector (in apimachinery v0.37.2 shardInfo carries only the selector, no count); "+
		"and the shards' watches together received exactly the events (pod and resourceVersion) of the unsharded watcher beside them, "+
		"each shard only events of its own pods.", shardCount)
	if failed {
		checks = "CHECKS FAILED: see the incomplete lines of the table; the shards together are not the whole."
	}
	return fmt.Sprintf("On each side, as client-go's informers start: one unsharded informer LISTs all %s pods (resourceVersion=0, no limit: the whole list, "+
		"read to the end), then WATCHes from the list's resourceVersion with allowWatchBookmarks=true while a paced writer makes %s merge patches of an "+
		"annotation at %s/s (open loop; update k to pod (k × 7919) mod %s, across all namespaces). Then %d sharded informers, each with "+
		"shardSelector=shardRange(object.metadata.uid, start, end) (FNV-1a 64 hash of the uid, start inclusive, end exclusive; ranges %s), "+
		"each LIST alone, one after the other (before each phase's lists, a consistent LIST of one pod makes the cache catch up), then all %d WATCH at once while the writer makes as many updates again. "+
		"Beside them one more unsharded watcher (from the first shard list's resourceVersion) receives the same updates for the check of the union: "+
		"it adds load to the shards' watch phase, as the unsharded informer's own watch does to its phase, so the two phases differ by the %d shards' watches. "+
		"A watch phase runs from opening its watches until each of them (the shards' together) has an event per successful update, "+
		"or %s after the last update; its CPU, the server's and etcd's processor time from /proc, includes the writer's patches. "+
		"List CPU is measured over each list alone; %d shards together sums the shards' figures (its list latency is the sum of the %d lists), "+
		"and \"list server CPU ÷ unsharded's\" is their total over the unsharded list's. Bytes are the responses as read (JSON, uncompressed), "+
		"watch streams with their bookmarks; events are the watch events but bookmarks. %s",
		FormatValue(Count, float64(b.cfg.Pods)), FormatValue(Count, float64(b.cfg.ShardUpdates)), FormatValue(Count, b.cfg.ShardRate),
		FormatValue(Count, float64(b.cfg.Pods)), shardCount, strings.Join(bounds, ", "), shardCount, shardCount, shardEventGrace,
		shardCount, shardCount, checks)
}
