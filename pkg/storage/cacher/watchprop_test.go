package cacher

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/storagemetrics"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// The property test of the cache's watches: random writes through the
// cache race with watchers started at random times with random options;
// afterwards each watcher's events are checked exactly against what the
// history of the writes (their revisions, from etcd) says it must see.

const (
	propWriters    = 4
	propWrites     = 2000 // in all
	propClients    = 40
	propNamesPer   = 6 // names per writer (each in every namespace)
	propMaxResumes = 3
	propPause      = 500 * time.Millisecond
)

var (
	propNamespaces = []string{"ns-0", "ns-1", "ns-2", "ns-3", "ns-4"}
	propNodes      = []string{"", "node-0", "node-1", "node-2", "node-3", "node-4"}
	propPhases     = []string{"Running", "Pending"}
)

// propPod is the test's own model of what a write stored: the oracle
// evaluates selectors on it, not on the cache's parsing of the object.
type propPod struct {
	ns, name, node string
	a              string // label a's value; "" when the pod has no label a
	phase          string
}

func (p *propPod) key() string { return p.ns + "/" + p.name }

// json is the pod's JSON; gen varies the bytes.
func (p *propPod) json(gen int) []byte {
	var lbls map[string]string
	if p.a != "" {
		lbls = map[string]string{"a": p.a}
	}
	return podJSON(p.ns, p.name, p.node, p.phase, lbls, gen)
}

// propWrite is one write, at its revision.
type propWrite struct {
	rv  uint64
	key string
	pod *propPod // the state after; nil: deleted
	// obj is the object the write returned: the new state, or for a
	// deletion the last state at the deletion's revision.
	obj *object.Object
}

// propSelector is a watcher's scope and selectors, both as options for
// the cache and as a predicate on the model.
type propSelector struct {
	scope string
	desc  string
	lsel  labels.Selector
	fsel  fields.Selector
	match func(*propPod) bool
}

func (s *propSelector) matches(p *propPod) bool {
	return p != nil && strings.HasPrefix(p.key(), s.scope) && (s.match == nil || s.match(p))
}

func randomPropSelector(rng *rand.Rand, indexed bool) *propSelector {
	s := &propSelector{}
	var preds []func(*propPod) bool
	var desc []string
	// Some watchers select everything (they see every event); most
	// select some.
	if rng.IntN(3) == 0 {
		s.scope = propNamespaces[rng.IntN(len(propNamespaces))] + "/"
		desc = append(desc, "scope "+s.scope)
	}
	switch rng.IntN(4) {
	case 1:
		s.lsel = labels.SelectorFromSet(labels.Set{"a": "x"})
		preds = append(preds, func(p *propPod) bool { return p.a == "x" })
		desc = append(desc, "labels a=x")
	case 2:
		var err error
		if s.lsel, err = labels.Parse("a!=y"); err != nil {
			panic(err)
		}
		preds = append(preds, func(p *propPod) bool { return p.a != "y" })
		desc = append(desc, "labels a!=y")
	}
	field := rng.IntN(6) // 0 and 5: no field selector
	if indexed {
		field = 1
	}
	switch field {
	case 1, 2: // served by the index
		node := propNodes[rng.IntN(len(propNodes))]
		s.fsel = fields.OneTermEqualSelector("spec.nodeName", node)
		preds = append(preds, func(p *propPod) bool { return p.node == node })
	case 3:
		name := fmt.Sprintf("p%d-%d", rng.IntN(propWriters), rng.IntN(propNamesPer))
		s.fsel = fields.OneTermEqualSelector("metadata.name", name)
		preds = append(preds, func(p *propPod) bool { return p.name == name })
	case 4:
		node := propNodes[rng.IntN(len(propNodes))]
		s.fsel = fields.OneTermNotEqualSelector("spec.nodeName", node)
		preds = append(preds, func(p *propPod) bool { return p.node != node })
	}
	if s.fsel != nil {
		desc = append(desc, "fields "+s.fsel.String())
	}
	if len(preds) > 0 {
		s.match = func(p *propPod) bool {
			for _, f := range preds {
				if !f(p) {
					return false
				}
			}
			return true
		}
	}
	s.desc = strings.Join(desc, ", ")
	if s.desc == "" {
		s.desc = "everything"
	}
	return s
}

// propStart is how a watcher's first watch starts.
type propStart int

const (
	propFromN         propStart = iota // RV=N: the events after N
	propAnyInitial                     // RV="0": initial state (any), then events
	propConsistent                     // RV unset: initial state (consistent), then events
	propSendInitial                    // NotOlderThan, sendInitialEvents=true
	propFromNowAny                     // NotOlderThan, sendInitialEvents=false, RV="0"
	propFromNowLatest                  // NotOlderThan, sendInitialEvents=false, RV unset
)

func (s propStart) String() string {
	return [...]string{"from N", "RV=0 (initial state)", "RV unset (initial state)", "sendInitialEvents=true", "from now (RV=0)", "from now (RV unset)"}[s]
}

// propSegment is one watch of a client: the first, or a resumption.
type propSegment struct {
	w      storage.Watcher
	fromRV uint64 // resumptions: the RV the watch resumed from
	events []storage.Event
	// closedBeforeEnd: the cache had already closed this watch when the
	// test began ending every watch (a slow-watcher termination).
	closedBeforeEnd atomic.Bool
	voluntary       bool // the client stopped it
	forced          bool // the cache closed it before the end
}

// propClient is one client: a watch and its resumptions.
type propClient struct {
	id        int
	sel       *propSelector
	start     propStart
	rvParam   string // the first watch's resourceVersion
	bookmarks bool
	// lo and hi bound the revision R the first watch starts at (its
	// initial state's, or the one it streams after): lo is known before
	// the call, hi is the cache's dispatched revision after it.
	lo, hi uint64
	// stopAfter[i] > 0: the client stops its i-th watch after that many
	// events past a point it can resume from.
	stopAfter []int
	// pauseAt > 0: a slow client, which stops reading for propPause after
	// that many events of its first watch (its watch may be closed).
	pauseAt int

	mu       sync.Mutex
	segments []*propSegment
	// truncated: the cache closed a watch before the client could resume
	// (no revision to resume from): its events are checked as a prefix.
	truncated bool
	err       string
}

func (cl *propClient) desc() string {
	return fmt.Sprintf("client %d (%s, rv %q, bookmarks %v, %s)", cl.id, cl.start, cl.rvParam, cl.bookmarks, cl.sel.desc)
}

func (cl *propClient) current() *propSegment {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.segments) == 0 {
		return nil
	}
	return cl.segments[len(cl.segments)-1]
}

func (cl *propClient) fail(format string, args ...any) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.err == "" {
		cl.err = fmt.Sprintf(format, args...)
	}
}

// dispatchedRV is the revision the cache has dispatched to its watchers.
func dispatchedRV(c *Cacher) uint64 {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	return c.dispatchRV
}

// propRun is the state shared by the writers, the clients and the checks.
type propRun struct {
	c         *Cacher
	startRV   uint64
	mu        sync.Mutex
	writes    []propWrite
	acked     atomic.Uint64 // the highest revision of a completed write
	count     atomic.Int64  // completed writes
	finishing atomic.Bool
}

func (r *propRun) record(w propWrite) {
	r.mu.Lock()
	r.writes = append(r.writes, w)
	r.mu.Unlock()
	for {
		cur := r.acked.Load()
		if w.rv <= cur || r.acked.CompareAndSwap(cur, w.rv) {
			break
		}
	}
	r.count.Add(1)
}

// write runs one writer: creates, updates (always changing the bytes) and
// deletes of its own keys.
func (r *propRun) write(ctx context.Context, id, ops int, rng *rand.Rand) error {
	live := map[string]*propPod{}
	gen := 0
	for range ops {
		ns := propNamespaces[rng.IntN(len(propNamespaces))]
		name := fmt.Sprintf("p%d-%d", id, rng.IntN(propNamesPer))
		key := ns + "/" + name
		gen++
		next := &propPod{ns: ns, name: name, node: propNodes[rng.IntN(len(propNodes))], a: []string{"", "x", "y"}[rng.IntN(3)], phase: propPhases[rng.IntN(len(propPhases))]}
		data := next.json(id*1000000 + gen)
		cur := live[key]
		switch {
		case cur == nil:
			obj, err := r.c.Create(ctx, key, data)
			if err != nil {
				return fmt.Errorf("create %s: %w", key, err)
			}
			live[key] = next
			r.record(propWrite{rv: obj.ResourceVersion(), key: key, pod: next, obj: obj})
		case rng.IntN(3) > 0:
			obj, err := r.c.GuaranteedUpdate(ctx, key, nil, func(*object.Object) ([]byte, error) { return data, nil }, nil)
			if err != nil {
				return fmt.Errorf("update %s: %w", key, err)
			}
			live[key] = next
			r.record(propWrite{rv: obj.ResourceVersion(), key: key, pod: next, obj: obj})
		default:
			obj, err := r.c.Delete(ctx, key, nil, nil)
			if err != nil {
				return fmt.Errorf("delete %s: %w", key, err)
			}
			delete(live, key)
			r.record(propWrite{rv: obj.ResourceVersion(), key: key, obj: obj})
		}
	}
	return nil
}

// newClient draws a client's options.
func (r *propRun) newClient(id int, rng *rand.Rand) *propClient {
	// From N twice as often as the others (resumptions are from N too).
	slow := id%8 == 0
	cl := &propClient{id: id, sel: randomPropSelector(rng, slow), start: propStart(rng.IntN(7) % 6), bookmarks: rng.IntN(2) == 0}
	if slow {
		cl.pauseAt = 1 + rng.IntN(10)
	}
	if cl.start == propSendInitial {
		cl.bookmarks = true
	}
	for range propMaxResumes {
		n := 0
		if rng.IntN(5) < 2 {
			n = 1 + rng.IntN(40)
		}
		cl.stopAfter = append(cl.stopAfter, n)
	}
	return cl
}

// firstOptions returns the options of a client's first watch, choosing
// its RV now (N: a revision between the cache's start and the last
// completed write).
func (r *propRun) firstOptions(cl *propClient, rng *rand.Rand) storage.ListOptions {
	opts := storage.ListOptions{Labels: cl.sel.lsel, Fields: cl.sel.fsel, AllowWatchBookmarks: cl.bookmarks}
	notOlder := metav1.ResourceVersionMatchNotOlderThan
	randomN := func() string {
		return storage.FormatResourceVersion(r.startRV + rng.Uint64N(r.acked.Load()-r.startRV+1))
	}
	switch cl.start {
	case propFromN:
		opts.ResourceVersion = randomN()
	case propAnyInitial:
		opts.ResourceVersion = "0"
	case propConsistent:
	case propSendInitial:
		opts.ResourceVersionMatch, opts.SendInitialEvents = notOlder, ptrTo(true)
		switch rng.IntN(3) {
		case 0:
			opts.ResourceVersion = "0"
		case 1:
			opts.ResourceVersion = randomN()
		}
	case propFromNowAny:
		opts.ResourceVersion, opts.ResourceVersionMatch, opts.SendInitialEvents = "0", notOlder, ptrTo(false)
	case propFromNowLatest:
		opts.ResourceVersionMatch, opts.SendInitialEvents = notOlder, ptrTo(false)
	}
	cl.rvParam = opts.ResourceVersion
	return opts
}

func ptrTo[T any](v T) *T { return &v }

// runClient is a client: it watches, reads every event, stops and resumes from
// the last revision it got (as a client does) when it planned to or when
// the cache closed its watch early, until the test ends every watch.
func (r *propRun) runClient(ctx context.Context, cl *propClient, opts storage.ListOptions) {
	dispatchedBefore, ackedBefore := dispatchedRV(r.c), r.acked.Load()
	w, err := r.c.Watch(ctx, cl.sel.scope, opts)
	if err != nil {
		cl.fail("watch: %v", err)
		return
	}
	cl.hi = dispatchedRV(r.c)
	cl.lo = dispatchedBefore
	switch {
	case cl.start == propFromN || cl.start == propSendInitial && cl.rvParam != "" && cl.rvParam != "0":
		n, _ := strconv.ParseUint(cl.rvParam, 10, 64)
		if cl.start == propFromN {
			cl.lo, cl.hi = n, n
		} else {
			cl.lo = max(cl.lo, n)
		}
	case cl.rvParam == "":
		cl.lo = max(cl.lo, ackedBefore)
	}
	seg := &propSegment{w: w}
	cl.mu.Lock()
	cl.segments = append(cl.segments, seg)
	cl.mu.Unlock()

	// resumeRV is the revision to resume from, once the client knows one
	// past the initial state: the RV of the last event or bookmark after
	// it.
	var resumeRV uint64
	canResume := cl.start == propFromN
	if canResume {
		resumeRV = cl.lo
	}
	sinceResumable := 0
	for {
		ev, ok := <-seg.w.ResultChan()
		if !ok {
			if r.finishing.Load() && !seg.closedBeforeEnd.Load() {
				return // ended by the test, complete
			}
			seg.forced = true
			if !canResume {
				cl.mu.Lock()
				cl.truncated = true
				cl.mu.Unlock()
				return
			}
		} else {
			seg.events = append(seg.events, ev)
			switch {
			case ev.Type == storage.EventError:
				cl.fail("ERROR event %v", ev.Err)
				seg.w.Stop()
				return
			case ev.Type == storage.EventBookmark && !ev.InitialEventsEnd && !canResume:
				// A bookmark comes after the initial state.
				canResume = true
			case ev.Type == storage.EventBookmark && ev.InitialEventsEnd:
				canResume = true
			case ev.Type != storage.EventBookmark && (cl.start == propFromNowAny || cl.start == propFromNowLatest):
				canResume = true
			}
			if canResume {
				resumeRV = ev.ResourceVersion
				sinceResumable++
			}
			if len(cl.segments) == 1 && len(seg.events) == cl.pauseAt {
				time.Sleep(propPause)
			}
			if n := len(cl.segments) - 1; n >= len(cl.stopAfter) || cl.stopAfter[n] == 0 || sinceResumable < cl.stopAfter[n] || r.finishing.Load() {
				continue
			}
			seg.w.Stop()
			seg.voluntary = true
			// What was buffered may still come; then the channel ends.
			timeout := time.After(5 * time.Second)
		drain:
			for {
				select {
				case ev, ok := <-seg.w.ResultChan():
					if !ok {
						break drain
					}
					seg.events = append(seg.events, ev)
					if ev.Type == storage.EventError {
						cl.fail("ERROR event %v", ev.Err)
						return
					}
					resumeRV = ev.ResourceVersion
				case <-timeout:
					cl.fail("the channel is not closed 5s after Stop returned")
					return
				}
			}
		}
		// Resume from the last revision received.
		w, err := r.c.Watch(ctx, cl.sel.scope, storage.ListOptions{
			ResourceVersion: storage.FormatResourceVersion(resumeRV), Labels: cl.sel.lsel, Fields: cl.sel.fsel, AllowWatchBookmarks: cl.bookmarks})
		if err != nil {
			cl.fail("resuming from %d: %v", resumeRV, err)
			return
		}
		seg = &propSegment{w: w, fromRV: resumeRV}
		cl.mu.Lock()
		cl.segments = append(cl.segments, seg)
		cl.mu.Unlock()
		sinceResumable = 0
	}
}

func watchEventString(ev storage.Event) string {
	switch ev.Type {
	case storage.EventBookmark:
		if ev.InitialEventsEnd {
			return fmt.Sprintf("BOOKMARK@%d(initial-events-end)", ev.ResourceVersion)
		}
		return fmt.Sprintf("BOOKMARK@%d", ev.ResourceVersion)
	case storage.EventError:
		return fmt.Sprintf("ERROR(%v)", ev.Err)
	}
	return fmt.Sprintf("%s %v@%d", ev.Type, ev.Object, ev.ResourceVersion)
}

func watchEventsString(evs []storage.Event) string {
	const most = 12
	parts := make([]string, 0, most+1)
	for i, ev := range evs {
		if i == most {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(evs)))
			break
		}
		parts = append(parts, watchEventString(ev))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// propExpected is an event the history says a watcher must get.
type propExpected struct {
	typ storage.EventType
	obj *object.Object // at the event's revision
}

func (e propExpected) String() string { return fmt.Sprintf("%s %v", e.typ, e.obj) }

// propOracle answers from the history of the writes, in revision order.
type propOracle struct {
	writes []propWrite
}

// stream returns the events a watcher of sel gets for every write of the
// history: ADDED when an object starts matching, MODIFIED while it
// matches, DELETED (its last state at the change's revision) when it
// stops matching or is deleted. rvs are the events' revisions.
func (o *propOracle) stream(sel *propSelector) (out []propExpected) {
	type entry struct {
		pod *propPod
		obj *object.Object
	}
	state := map[string]entry{}
	for _, w := range o.writes {
		old := state[w.key]
		if w.pod == nil {
			delete(state, w.key)
		} else {
			state[w.key] = entry{w.pod, w.obj}
		}
		was, is := sel.matches(old.pod), sel.matches(w.pod)
		switch {
		case was && is:
			out = append(out, propExpected{storage.EventModified, w.obj})
		case is:
			out = append(out, propExpected{storage.EventAdded, w.obj})
		case was:
			out = append(out, propExpected{storage.EventDeleted, old.obj.WithResourceVersion(w.rv)})
		}
	}
	return out
}

// stateAt returns the objects matching sel at revision rv, by key.
func (o *propOracle) stateAt(rv uint64, sel *propSelector) map[string]*object.Object {
	state := map[string]*object.Object{}
	pods := map[string]*propPod{}
	for _, w := range o.writes {
		if w.rv > rv {
			break
		}
		if w.pod == nil {
			delete(state, w.key)
			delete(pods, w.key)
		} else {
			state[w.key], pods[w.key] = w.obj, w.pod
		}
	}
	for k := range state {
		if !sel.matches(pods[k]) {
			delete(state, k)
		}
	}
	return state
}

// eventDiff says how a received event differs from the expected one.
func eventDiff(got storage.Event, want propExpected) string {
	rv := want.obj.ResourceVersion()
	if got.Type != want.typ || got.Object == nil || got.ResourceVersion != rv || got.Object.Key() != want.obj.Key() || got.Object.ResourceVersion() != rv {
		return fmt.Sprintf("got %s, want %s (event rv %d)", watchEventString(got), want, rv)
	}
	if !bytes.Equal(got.Object.JSON(), want.obj.JSON()) {
		return fmt.Sprintf("%s: got object %s, want %s", watchEventString(got), got.Object.JSON(), want.obj.JSON())
	}
	return ""
}

// matchFrom checks evs against the initial state at R (ADDED events, any
// order, when initial) followed by the stream after R; prefix accepts a
// prefix of that. It returns "" on success, and the number of initial
// events.
func (o *propOracle) matchFrom(evs []storage.Event, R uint64, initial bool, sel *propSelector, stream []propExpected, prefix bool) (string, int) {
	var state map[string]*object.Object
	if initial {
		state = o.stateAt(R, sel)
	}
	k := len(state)
	i := sort.Search(len(stream), func(i int) bool { return stream[i].obj.ResourceVersion() > R })
	after := stream[i:]
	if want := k + len(after); len(evs) > want || !prefix && len(evs) != want {
		return fmt.Sprintf("%d events, want %d (%d initial, %d after revision %d)", len(evs), want, k, len(after), R), k
	}
	seen := map[string]bool{}
	for j, ev := range evs {
		if j < k {
			want, ok := state[keyOf(ev)]
			if ev.Type != storage.EventAdded || !ok || seen[keyOf(ev)] {
				return fmt.Sprintf("initial event %d is %s; want ADDED for each of the %d objects matching at %d", j, watchEventString(ev), k, R), k
			}
			seen[keyOf(ev)] = true
			if d := eventDiff(ev, propExpected{storage.EventAdded, want}); d != "" {
				return fmt.Sprintf("initial event %d: %s", j, d), k
			}
			continue
		}
		if d := eventDiff(ev, after[j-k]); d != "" {
			var ctx []string
			for x := max(0, j-k-2); x < min(len(after), j-k+3); x++ {
				ctx = append(ctx, after[x].String())
			}
			return fmt.Sprintf("event %d (stream event %d after %d): %s; expected around it: %v", j, j-k, R, d, ctx), k
		}
	}
	return "", k
}

func keyOf(ev storage.Event) string {
	if ev.Object == nil {
		return ""
	}
	return ev.Object.Key()
}

// check checks a client's events, all its watches concatenated, against
// the history.
func (o *propOracle) check(cl *propClient) string {
	if cl.err != "" {
		return cl.err
	}
	var all []storage.Event
	var lastRV uint64 // the last revision received (from N: N at first)
	known := cl.start == propFromN
	if known {
		lastRV = cl.lo
	}
	for i, seg := range cl.segments {
		// A resumption starts where the client was.
		if i > 0 && (!known || seg.fromRV != lastRV) {
			return fmt.Sprintf("watch %d resumed from %d, which is not the last revision received (%d)", i, seg.fromRV, lastRV)
		}
		if len(seg.events) > 0 {
			lastRV, known = seg.events[len(seg.events)-1].ResourceVersion, true
		}
		all = append(all, seg.events...)
	}
	var evs []storage.Event
	for _, ev := range all {
		switch ev.Type {
		case storage.EventBookmark:
		case storage.EventError:
			return fmt.Sprintf("ERROR event %v", ev.Err)
		default:
			evs = append(evs, ev)
		}
	}
	stream := o.stream(cl.sel)
	initial := cl.start == propAnyInitial || cl.start == propConsistent || cl.start == propSendInitial

	// The revision the first watch started at: the initial-events-end
	// bookmark's, N, or any in [lo, hi] that explains the events.
	var candidates []uint64
	if cl.start == propSendInitial {
		for _, ev := range cl.segments[0].events {
			if ev.InitialEventsEnd {
				candidates = []uint64{ev.ResourceVersion}
				if ev.ResourceVersion < cl.lo || ev.ResourceVersion > cl.hi {
					return fmt.Sprintf("initial-events-end bookmark at %d, want between %d and %d", ev.ResourceVersion, cl.lo, cl.hi)
				}
				break
			}
		}
		if candidates == nil && !cl.truncated {
			return fmt.Sprintf("no initial-events-end bookmark: %s", watchEventsString(cl.segments[0].events))
		}
	}
	if candidates == nil {
		candidates = []uint64{cl.lo}
		for _, w := range o.writes {
			if w.rv > cl.lo && w.rv <= cl.hi {
				candidates = append(candidates, w.rv)
			}
		}
	}
	R, k := uint64(0), 0
	var diffs []string
	for _, r := range candidates {
		d, n := o.matchFrom(evs, r, initial, cl.sel, stream, cl.truncated)
		if d == "" {
			R, k, diffs = r, n, nil
			break
		}
		diffs = append(diffs, fmt.Sprintf("from %d: %s", r, d))
	}
	if diffs != nil {
		if len(diffs) > 4 {
			diffs = append(diffs[:2], fmt.Sprintf("... (%d starts in [%d, %d] tried)", len(candidates), cl.lo, cl.hi), diffs[len(diffs)-1])
		}
		return fmt.Sprintf("events %s explained by no start: %s", watchEventsString(all), strings.Join(diffs, "; "))
	}

	// Bookmarks: only when allowed, none in the initial state, never
	// going back, and an event after a bookmark is after its revision.
	last, seen, ends := R, 0, 0
	for i, ev := range all {
		if ev.Type != storage.EventBookmark {
			if seen >= k && ev.ResourceVersion <= last {
				return fmt.Sprintf("event %d %s after revision %d", i, watchEventString(ev), last)
			}
			if seen >= k {
				last = ev.ResourceVersion
			}
			seen++
			continue
		}
		switch {
		case ev.Object != nil || ev.Err != nil:
			return fmt.Sprintf("bookmark %d carries an object or an error", i)
		case ev.InitialEventsEnd:
			ends++
			if cl.start != propSendInitial || ends > 1 || i >= len(cl.segments[0].events) || seen != k || ev.ResourceVersion != R {
				return fmt.Sprintf("unexpected initial-events-end bookmark %d (%s) after %d events (%d initial)", i, watchEventString(ev), seen, k)
			}
		case !cl.bookmarks:
			return fmt.Sprintf("bookmark %d (%s) without AllowWatchBookmarks", i, watchEventString(ev))
		case seen < k || cl.start == propSendInitial && ends == 0:
			return fmt.Sprintf("bookmark %d (%s) within the initial state", i, watchEventString(ev))
		case ev.ResourceVersion < last:
			return fmt.Sprintf("bookmark %d at %d after revision %d", i, ev.ResourceVersion, last)
		default:
			last = ev.ResourceVersion
		}
	}
	return ""
}

// TestWatchersMatchEtcdHistory: random writes (creates, updates that move
// pods between nodes and change their labels, deletes) race with 40
// watchers started at random times with random scopes, selectors
// (index-served or not) and starts (from a past revision, from "0",
// consistent, sendInitialEvents, from now). Some stop and resume from the
// last revision they got; a few stall for 500ms, so the cache may close
// them, and resume the same way. Each watcher's events, its watches
// concatenated, must be exactly what the history of the writes says: the
// initial state at its start revision, then for every later revision in
// order the ADDED, MODIFIED and DELETED events of the objects it selects,
// with no gap, no duplicate and no extra event; bookmarks only when
// allowed, never going back, never ahead of an event.
func TestWatchersMatchEtcdHistory(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WATCHPROP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (WATCHPROP_SEED reruns it)", seed)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	reg := prometheus.NewRegistry()
	c := New(Config{Store: newEtcdStore("watchprop-test"), Resource: "pods", IndexedFields: []string{"spec.nodeName"},
		BookmarkInterval: 100 * time.Millisecond, Metrics: storagemetrics.NewStorage(reg)})
	t.Cleanup(c.Stop)
	waitReady(t, c, 10*time.Second)
	r := &propRun{c: c, startRV: dispatchedRV(c)}
	r.acked.Store(r.startRV)
	start := time.Now()

	// Clients start once a random number of writes completed.
	clients := make([]*propClient, propClients)
	thresholds := make([]int64, propClients)
	clientRNG := rand.New(rand.NewPCG(seed, 1000))
	for i := range clients {
		clients[i] = r.newClient(i, clientRNG)
		thresholds[i] = clientRNG.Int64N(propWrites * 9 / 10)
	}
	sort.Slice(thresholds, func(i, j int) bool { return thresholds[i] < thresholds[j] })
	var clientsWG sync.WaitGroup
	var clientsDone atomic.Int64
	starterDone := make(chan struct{})
	go func() {
		defer close(starterDone)
		for i, cl := range clients {
			for r.count.Load() < thresholds[i] {
				time.Sleep(200 * time.Microsecond)
			}
			opts := r.firstOptions(cl, clientRNG)
			clientsWG.Go(func() {
				defer clientsDone.Add(1)
				r.runClient(ctx, cl, opts)
			})
		}
	}()

	var writersWG sync.WaitGroup
	errs := make([]error, propWriters)
	for i := range propWriters {
		wrng := rand.New(rand.NewPCG(seed, uint64(i+1)))
		writersWG.Go(func() { errs[i] = r.write(ctx, i, propWrites/propWriters, wrng) })
	}
	writersWG.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	<-starterDone
	writing := time.Since(start)

	sort.Slice(r.writes, func(i, j int) bool { return r.writes[i].rv < r.writes[j].rv })
	for i := 1; i < len(r.writes); i++ {
		if r.writes[i].rv == r.writes[i-1].rv {
			t.Fatalf("two writes at revision %d", r.writes[i].rv)
		}
	}
	lastRV := r.writes[len(r.writes)-1].rv
	if err := c.waitFor(ctx, lastRV); err != nil {
		t.Fatalf("the cache did not reach the last write's revision %d: %v", lastRV, err)
	}

	// Every event is dispatched. End every watch cleanly: each delivers
	// what it buffered and closes, and its client is done. But a watch
	// still sending its initial events drops, when ended, the events
	// dispatched to it meanwhile (legitimately: its client resumes from
	// the last revision it got), so first wait until no current watch
	// holds any (stalled clients wake up and catch up). Note the watches
	// the cache already closed (too slow): their clients resume.
	terminated := metricValue(t, reg, "apiserver_terminated_watchers_total", "pods")
	settled := func() bool {
		c.watchMu.Lock()
		defer c.watchMu.Unlock()
		for _, cl := range clients {
			if seg := cl.current(); seg != nil {
				if cw, ok := seg.w.(*cacheWatcher); ok && !cw.closed && len(cw.pending) > 0 {
					return false
				}
			}
		}
		for _, cl := range clients {
			if seg := cl.current(); seg != nil {
				if cw, ok := seg.w.(*cacheWatcher); ok && cw.closed {
					seg.closedBeforeEnd.Store(true)
				}
			}
		}
		return true
	}
	settleBy := time.Now().Add(10 * time.Second)
	for !settled() {
		if time.Now().After(settleBy) {
			t.Fatal("watches still hold undelivered events 10s after the last write")
		}
		time.Sleep(time.Millisecond)
	}
	r.finishing.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for clientsDone.Load() < propClients {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d clients ended 20s after the end of every watch", clientsDone.Load(), propClients)
		}
		c.endAllWatchers() // again for watches resumed meanwhile
		time.Sleep(2 * time.Millisecond)
	}
	clientsWG.Wait()

	// Check every client against the history.
	o := &propOracle{writes: r.writes}
	for i, w := range o.writes {
		// A deletion returns the last state at the deletion's revision.
		if w.pod != nil {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if o.writes[j].key == w.key {
				if want := o.writes[j].obj.WithResourceVersion(w.rv); !bytes.Equal(w.obj.JSON(), want.JSON()) {
					t.Errorf("Delete(%s) at %d returned %s, want %s", w.key, w.rv, w.obj.JSON(), want.JSON())
				}
				break
			}
		}
	}
	kinds := map[propStart]int{}
	events, bookmarks, resumed, voluntary, forced, truncated := 0, 0, 0, 0, 0, 0
	for _, cl := range clients {
		if d := o.check(cl); d != "" {
			t.Errorf("%s: %s", cl.desc(), d)
		}
		kinds[cl.start]++
		resumed += len(cl.segments) - 1
		for _, seg := range cl.segments {
			if seg.forced {
				forced++
			}
			if seg.voluntary {
				voluntary++
			}
			for _, ev := range seg.events {
				if ev.Type == storage.EventBookmark {
					bookmarks++
				} else {
					events++
				}
			}
		}
		if cl.truncated {
			truncated++
		}
	}
	if forced > int(terminated) {
		t.Errorf("%d watches closed early, but only %v watchers were terminated", forced, terminated)
	}
	c.watchMu.Lock()
	n := c.watchers.count
	c.watchMu.Unlock()
	if n != 0 {
		t.Errorf("%d watchers still registered at the end", n)
	}
	if g := metricValue(t, reg, "apiserver_watch_cache_watchers", "pods"); g != 0 {
		t.Errorf("watchers gauge is %v at the end, want 0", g)
	}
	t.Logf("%d writes (revisions %d to %d) in %s; %d clients %v; %d events and %d bookmarks received; %d resumptions (%d after a Stop); %d watches closed by the cache early (%v terminated), %d clients truncated; %s in all",
		len(r.writes), r.startRV+1, lastRV, writing.Round(time.Millisecond), propClients, kinds, events, bookmarks, resumed, voluntary, forced, terminated, truncated, time.Since(start).Round(time.Millisecond))
}
