// Conformance tests of KEP-2340's WATCH table and of watches: selectors,
// DELETED's last state, bookmarks and RequestProgress, compaction, Stop and
// context cancellation, with the oracle's expected events.

package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// The watch tests: every row of the WATCH table of KEP-2340
// (docs/design.md), quoted as "ResourceVersion | ResourceVersionMatch |
// SendInitialEvents", with the WatchList semantics of KEP-3157 for sendInitialEvents=true (the
// initial state as ADDED events, then a BOOKMARK marked
// k8s.io/initial-events-end at the state's revision, then the stream);
// selector transitions; DELETED events; bookmarks; compaction; and how a
// watch ends.
//
// Expected events come from the oracle (e.hist): watchEventsAfter computes
// what a watcher over a scope and a selector must see after a revision.

const (
	// watchQuietWait is how long "nothing more arrives" is watched for
	// after the expected events.
	watchQuietWait = 100 * time.Millisecond
	// watchNoBookmarkWait is how long a watch without AllowWatchBookmarks is
	// watched for bookmarks (several progress notification intervals).
	watchNoBookmarkWait = time.Second
	// watchBookmarkWait bounds the wait for a bookmark (progress
	// notifications come every ProgressNotifyInterval).
	watchBookmarkWait = 3 * time.Second
	// watchCloseWait bounds the wait for a watch's channel to close.
	watchCloseWait = 5 * time.Second
	// watchManyObjects is more events than a watcher buffers.
	watchManyObjects = 300
)

// watchWant is an event the oracle expects: its type and its object at the
// event's revision.
type watchWant struct {
	typ storage.EventType
	obj *object.Object
}

// watchEventsAfter returns the events a watcher of scope whose selectors
// accept what keep accepts (nil: all) must receive for the writes after
// revision from, in order: an object that starts passing is ADDED, one that
// keeps passing is MODIFIED, one that is deleted or stops passing is
// DELETED with its last passing state at the write's revision.
func watchEventsAfter(h *history, from uint64, scope string, keep func(*object.Object) bool) []watchWant {
	pass := func(o *object.Object) bool { return o != nil && (keep == nil || keep(o)) }
	state := map[string]*object.Object{}
	var out []watchWant
	for _, w := range h.writes {
		old := state[w.key]
		if w.obj == nil {
			delete(state, w.key)
		} else {
			state[w.key] = w.obj
		}
		if w.rv <= from || !strings.HasPrefix(w.key, scope) {
			continue
		}
		switch oldP, newP := pass(old), pass(w.obj); {
		case newP && oldP:
			out = append(out, watchWant{storage.EventModified, w.obj})
		case newP:
			out = append(out, watchWant{storage.EventAdded, w.obj})
		case oldP:
			out = append(out, watchWant{storage.EventDeleted, old.WithResourceVersion(w.rv)})
		}
	}
	return out
}

// watchStartCandidates returns the revisions a watch served from "any"
// state may start at, newest first: every revision of the test's history up
// to upTo, and 0 (before the test's first write).
func watchStartCandidates(h *history, upTo uint64) []uint64 {
	out := []uint64{upTo}
	for i := len(h.writes) - 1; i >= 0; i-- {
		if rv := h.writes[i].rv; rv < out[len(out)-1] {
			out = append(out, rv)
		}
	}
	if out[len(out)-1] != 0 {
		out = append(out, 0)
	}
	return out
}

func watchFmtEvent(ev storage.Event) string {
	switch ev.Type {
	case storage.EventBookmark:
		s := fmt.Sprintf("BOOKMARK@%d", ev.ResourceVersion)
		if ev.InitialEventsEnd {
			s += "(initial-events-end)"
		}
		return s
	case storage.EventError:
		return fmt.Sprintf("ERROR(%v)", ev.Err)
	}
	return fmt.Sprintf("%s %v (event rv %d)", ev.Type, ev.Object, ev.ResourceVersion)
}

func watchFmtEvents(evs []storage.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = watchFmtEvent(ev)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func watchFmtWants(ws []watchWant) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%s %v", w.typ, w.obj)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// watchEventDiff describes how got differs from want ("" if it does not):
// type, revision (of the event and of its object), key and served bytes.
func watchEventDiff(got storage.Event, want watchWant) string {
	rv := want.obj.ResourceVersion()
	if got.Type != want.typ || got.Object == nil || got.Err != nil || got.InitialEventsEnd ||
		got.ResourceVersion != rv || got.Object.Key() != want.obj.Key() || got.Object.ResourceVersion() != rv {
		return fmt.Sprintf("got %s, want %s %v", watchFmtEvent(got), want.typ, want.obj)
	}
	if !bytes.Equal(got.Object.JSON(), want.obj.JSON()) {
		return fmt.Sprintf("%s %v: got object %s, want %s", got.Type, got.Object, got.Object.JSON(), want.obj.JSON())
	}
	return ""
}

// watchMatchInitial checks that head is the initial state: one ADDED event
// per object of state, in any order.
func watchMatchInitial(head []storage.Event, state []*object.Object) string {
	if len(head) != len(state) {
		return fmt.Sprintf("initial events %s, want ADDED for each of %v", watchFmtEvents(head), state)
	}
	for _, ev := range head {
		if ev.Type != storage.EventAdded || ev.Object == nil {
			return fmt.Sprintf("initial events %s: %s is not an ADDED event", watchFmtEvents(head), watchFmtEvent(ev))
		}
	}
	sorted := append([]storage.Event(nil), head...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Object.Key() < sorted[j].Object.Key() })
	for i := range sorted {
		if d := watchEventDiff(sorted[i], watchWant{storage.EventAdded, state[i]}); d != "" {
			return fmt.Sprintf("initial events %s, want ADDED for each of %v: %s", watchFmtEvents(head), state, d)
		}
	}
	return ""
}

// watchMatchStream checks that evs are exactly want, in order.
func watchMatchStream(evs []storage.Event, want []watchWant) string {
	if len(evs) != len(want) {
		return fmt.Sprintf("streamed events %s, want %s", watchFmtEvents(evs), watchFmtWants(want))
	}
	for i := range evs {
		if d := watchEventDiff(evs[i], want[i]); d != "" {
			return fmt.Sprintf("streamed events %s, want %s: event %d: %s", watchFmtEvents(evs), watchFmtWants(want), i, d)
		}
	}
	return ""
}

// watchExpect says what a watch must have delivered.
type watchExpect struct {
	scope string
	keep  func(*object.Object) bool
	// initial: the watch starts with its initial state as ADDED events.
	initial bool
	// endBookmark: a BOOKMARK marked initial-events-end ends the initial
	// state, at the state's revision R, with minR <= R <= maxR.
	endBookmark bool
	minR, maxR  uint64
	// bookmarksOK: other bookmarks may arrive (after the initial state);
	// if false none may.
	bookmarksOK bool
	// starts: without endBookmark, the revisions R the watch may have
	// started at (its initial state is the state at R and it streams the
	// writes after R); one of them must explain the events.
	starts []uint64
}

// checkWatch checks that got (all events up to the last expected one) is
// what x says, against the oracle, and returns the revision the watch
// started at.
func (e *env) checkWatch(t *testing.T, what string, got []storage.Event, x watchExpect) uint64 {
	t.Helper()
	end := -1
	for i, ev := range got {
		switch ev.Type {
		case storage.EventError:
			t.Fatalf("%s: error event %v; events %s", what, ev.Err, watchFmtEvents(got))
		case storage.EventBookmark:
			switch {
			case ev.Object != nil || ev.Err != nil:
				t.Fatalf("%s: bookmark carries an object or error: %s", what, watchFmtEvent(ev))
			case ev.InitialEventsEnd && !x.endBookmark:
				t.Fatalf("%s: unexpected initial-events-end bookmark; events %s", what, watchFmtEvents(got))
			case ev.InitialEventsEnd && end >= 0:
				t.Fatalf("%s: second initial-events-end bookmark; events %s", what, watchFmtEvents(got))
			case ev.InitialEventsEnd:
				end = i
			case !x.bookmarksOK:
				t.Fatalf("%s: BOOKMARK without AllowWatchBookmarks; events %s", what, watchFmtEvents(got))
			case x.endBookmark && end < 0:
				t.Fatalf("%s: BOOKMARK before the initial-events-end bookmark; events %s", what, watchFmtEvents(got))
			}
		}
	}
	if x.endBookmark {
		if end < 0 {
			t.Fatalf("%s: no initial-events-end bookmark; events %s", what, watchFmtEvents(got))
		}
		r := got[end].ResourceVersion
		if r < x.minR || r > x.maxR {
			t.Fatalf("%s: initial-events-end bookmark at %d, want between %d and %d", what, r, x.minR, x.maxR)
		}
		if d := watchMatchInitial(got[:end], e.hist.stateAt(r, x.scope, x.keep)); d != "" {
			t.Fatalf("%s: state at %d: %s", what, r, d)
		}
		// After the initial state, revisions only grow: an event is after
		// every earlier bookmark, a bookmark not before any earlier event.
		var tail []storage.Event
		last := r
		for _, ev := range got[end+1:] {
			if ev.Type == storage.EventBookmark {
				if ev.ResourceVersion < last {
					t.Fatalf("%s: bookmark at %d after an event or bookmark at %d; events %s", what, ev.ResourceVersion, last, watchFmtEvents(got))
				}
			} else {
				if ev.ResourceVersion <= last {
					t.Fatalf("%s: event %s after revision %d; events %s", what, watchFmtEvent(ev), last, watchFmtEvents(got))
				}
				tail = append(tail, ev)
			}
			last = ev.ResourceVersion
		}
		if d := watchMatchStream(tail, watchEventsAfter(e.hist, r, x.scope, x.keep)); d != "" {
			t.Fatalf("%s: after initial state at %d: %s", what, r, d)
		}
		return r
	}
	var evs []storage.Event
	for _, ev := range got {
		if ev.Type != storage.EventBookmark {
			evs = append(evs, ev)
		}
	}
	var diffs []string
	for _, r := range x.starts {
		var state []*object.Object
		if x.initial {
			state = e.hist.stateAt(r, x.scope, x.keep)
		}
		d := fmt.Sprintf("%d events, want at least %d initial ones", len(evs), len(state))
		if len(evs) >= len(state) {
			if d = watchMatchInitial(evs[:len(state)], state); d == "" {
				d = watchMatchStream(evs[len(state):], watchEventsAfter(e.hist, r, x.scope, x.keep))
			}
		}
		if d == "" {
			return r
		}
		diffs = append(diffs, fmt.Sprintf("as a watch starting at %d: %s", r, d))
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("(and %d other start revisions)", len(diffs)-3))
	}
	t.Fatalf("%s: events %s are wrong:\n%s", what, watchFmtEvents(got), strings.Join(diffs, "\n"))
	return 0
}

// watchCollect reads w's events, bookmarks included, until a non-bookmark
// event at revision rv or later (or an error event) arrives.
func watchCollect(t *testing.T, w storage.Watcher, rv uint64) []storage.Event {
	t.Helper()
	var got []storage.Event
	deadline := time.After(eventTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch channel closed before an event at revision %d; got %s", rv, watchFmtEvents(got))
			}
			got = append(got, ev)
			if ev.Type == storage.EventError || (ev.Type != storage.EventBookmark && ev.ResourceVersion >= rv) {
				return got
			}
		case <-deadline:
			t.Fatalf("no event at revision %d within %s; got %s", rv, eventTimeout, watchFmtEvents(got))
		}
	}
}

// watchQuiet checks that nothing (but bookmarks, if bookmarksOK) arrives
// for wait, and that the channel stays open.
func watchQuiet(t *testing.T, what string, w storage.Watcher, wait time.Duration, bookmarksOK bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: watch channel closed unexpectedly", what)
			}
			if ev.Type != storage.EventBookmark || ev.InitialEventsEnd || !bookmarksOK {
				t.Fatalf("%s: unexpected event %s", what, watchFmtEvent(ev))
			}
		case <-deadline:
			return
		}
	}
}

// watchDrain reads w until its channel closes, failing after
// watchCloseWait, and returns what it read.
func watchDrain(t *testing.T, what string, w storage.Watcher) []storage.Event {
	t.Helper()
	var got []storage.Event
	deadline := time.After(watchCloseWait)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatalf("%s: watch channel not closed within %s; read %s", what, watchCloseWait, watchFmtEvents(got))
		}
	}
}

// watchStopped stops w and reports whether Stop returned within
// watchCloseWait (if not, it is left running).
func watchStopped(w storage.Watcher) bool {
	done := make(chan struct{})
	go func() { w.Stop(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(watchCloseWait):
		return false
	}
}

// watchStop stops w, failing if Stop does not return within watchCloseWait.
func watchStop(t *testing.T, what string, w storage.Watcher) {
	t.Helper()
	if !watchStopped(w) {
		t.Fatalf("%s: Stop did not return within %s", what, watchCloseWait)
	}
}

// watch opens a watch that the test stops at its end (a Stop that hangs
// fails the test instead of hanging the suite).
func (e *env) watch(t *testing.T, ctx context.Context, scope string, opts storage.ListOptions) storage.Watcher {
	t.Helper()
	w, err := e.store.Watch(ctx, scope, opts)
	if err != nil {
		t.Fatalf("watch %q %+v: %v", scope, opts, err)
	}
	t.Cleanup(func() {
		if !watchStopped(w) {
			t.Errorf("watch %q %+v: Stop did not return within %s", scope, opts, watchCloseWait)
		}
	})
	return w
}

func watchBool(b bool) *bool { return &b }

func watchRV(rv uint64) string { return storage.FormatResourceVersion(rv) }

// watchKind is what a valid watch table row does.
type watchKind int

const (
	// watchInitialConsistent: the newest state (at least the state when
	// the watch was opened), then the stream.
	watchInitialConsistent watchKind = iota
	// watchInitialAny: any state, then the stream after it.
	watchInitialAny
	// watchInitialNotOlder: a state at revision >= N, then the stream.
	watchInitialNotOlder
	// watchFromN: the stream after revision N, replayed from history.
	watchFromN
	// watchFromNow: the stream after the revision current at the watch's
	// start.
	watchFromNow
	// watchFromNowAny: as watchFromNow, but "now" may be the (older)
	// revision a cache has reached.
	watchFromNowAny
)

// watchRowCase is one valid row of the watch table.
type watchRowCase struct {
	row   string // the row as written in KEP-2340
	name  string
	rv    string // "", "0", or "N" (a revision of the test's history)
	match metav1.ResourceVersionMatch
	send  *bool
	kind  watchKind
}

var watchRows = []watchRowCase{
	// "_unset_ | _unset_ | _unset_ | Quorum list + watch stream"
	{"_unset_ | _unset_ | _unset_", "Unset_Unset_Unset", "", "", nil, watchInitialConsistent},
	// "_unset_ | _NotOlderThan_ | false | Watch stream from etcd RV"
	{"_unset_ | _NotOlderThan_ | false", "Unset_NotOlderThan_False", "", metav1.ResourceVersionMatchNotOlderThan, watchBool(false), watchFromNow},
	// "_unset_ | _NotOlderThan_ | true | Quorum list + watch stream"
	{"_unset_ | _NotOlderThan_ | true", "Unset_NotOlderThan_True", "", metav1.ResourceVersionMatchNotOlderThan, watchBool(true), watchInitialConsistent},
	// "_0_ | _unset_ | _unset_ | Quorum list + watch stream" (a cache:
	// "List + watch stream", of any state)
	{"_0_ | _unset_ | _unset_", "Zero_Unset_Unset", "0", "", nil, watchInitialAny},
	// "_0_ | _NotOlderThan_ | false | Watch stream from etcd RV" (a cache:
	// "Watch stream from current watchcache RV")
	{"_0_ | _NotOlderThan_ | false", "Zero_NotOlderThan_False", "0", metav1.ResourceVersionMatchNotOlderThan, watchBool(false), watchFromNowAny},
	// "_0_ | _NotOlderThan_ | true | Quorum list + watch stream" (a cache:
	// "List + watch stream", of any state)
	{"_0_ | _NotOlderThan_ | true", "Zero_NotOlderThan_True", "0", metav1.ResourceVersionMatchNotOlderThan, watchBool(true), watchInitialAny},
	// "_RV_ | _unset_ | _unset_ | Watch stream from RV"
	{"_RV_ | _unset_ | _unset_", "RV_Unset_Unset", "N", "", nil, watchFromN},
	// "_RV_ | _NotOlderThan_ | false | Check RV > etcd RV. Watch stream from RV"
	{"_RV_ | _NotOlderThan_ | false", "RV_NotOlderThan_False", "N", metav1.ResourceVersionMatchNotOlderThan, watchBool(false), watchFromN},
	// "_RV_ | _NotOlderThan_ | true | Check RV > etcd RV. Quorum list + watch stream"
	{"_RV_ | _NotOlderThan_ | true", "RV_NotOlderThan_True", "N", metav1.ResourceVersionMatchNotOlderThan, watchBool(true), watchInitialNotOlder},
}

// One test per valid row of the watch table: WatchRow_<name>.
var _ = func() struct{} {
	for _, c := range watchRows {
		register("WatchRow_"+c.name, func(t *testing.T, e *env) { watchRowScenario(t, e, c) })
	}
	return struct{}{}
}()

// watchRowScenario runs one valid row: objects in ns1/ and ns2/ with a
// history (N is a revision in its middle), two watches with the row's
// options (over the whole resource and over ns1/), writes after the watch
// started, and a check of everything both watches delivered.
func watchRowScenario(t *testing.T, e *env, c watchRowCase) {
	a := e.create("ns1", "a", "n1", map[string]string{"app": "x"})
	e.create("ns1", "b", "n2", map[string]string{"app": "y"})
	c0 := e.create("ns2", "c", "n1", map[string]string{"app": "x"})
	n := e.hist.lastRV()
	// Writes after N, before the watch: streamed by the "from RV" rows.
	a = e.update(a, "n2", map[string]string{"app": "x"})
	e.create("ns1", "d", "n1", nil)
	e.remove("ns1/b")
	e.update(c0, "n3", nil)
	startRV := e.hist.lastRV()

	rv := c.rv
	if rv == "N" {
		rv = watchRV(n)
	}
	bookmarks := c.send != nil && *c.send // as WatchList clients do
	opts := storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: c.match, SendInitialEvents: c.send, AllowWatchBookmarks: bookmarks}
	scopes := []string{"", "ns1/"}
	ws := make([]storage.Watcher, len(scopes))
	for i, scope := range scopes {
		ws[i] = e.watch(t, e.ctx, scope, opts)
	}
	current, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Writes after the watch started.
	e.update(a, "n1", nil)
	e.create("ns2", "e", "n1", nil)
	f := e.create("ns1", "f", "n2", nil)
	e.remove("ns1/d")
	e.update(f, "n3", map[string]string{"app": "x"})
	final := e.hist.lastRV()

	for i, scope := range scopes {
		what := fmt.Sprintf("%q, scope %q, N=%d, watch opened at %d", c.row, scope, n, startRV)
		x := watchExpect{scope: scope, bookmarksOK: bookmarks, endBookmark: c.send != nil && *c.send, maxR: current}
		switch c.kind {
		case watchInitialConsistent:
			x.initial, x.minR, x.starts = true, startRV, []uint64{startRV}
		case watchInitialAny:
			x.initial, x.starts = true, watchStartCandidates(e.hist, startRV)
		case watchInitialNotOlder:
			x.initial, x.minR = true, n
		case watchFromN:
			x.starts = []uint64{n}
		case watchFromNow:
			x.starts = []uint64{startRV}
		case watchFromNowAny:
			x.starts = watchStartCandidates(e.hist, startRV)
		}
		got := watchCollect(t, ws[i], final)
		e.checkWatch(t, what, got, x)
		watchQuiet(t, what, ws[i], watchQuietWait, bookmarks)
	}

	if c.match == metav1.ResourceVersionMatchNotOlderThan && c.rv == "N" {
		// "Check RV > etcd RV": a revision etcd has not reached.
		huge := opts
		huge.ResourceVersion = watchRV(final + 1000000)
		w, err := e.store.Watch(e.ctx, "", huge)
		if w != nil {
			watchStop(t, "watch with a too large resourceVersion", w)
		}
		se := assertCode(t, err, storage.ErrTooLargeResourceVersion)
		if se.RetryAfterSeconds != 1 {
			t.Errorf("%q with a too large resourceVersion: Retry-After %d, want 1", c.row, se.RetryAfterSeconds)
		}
	}
}

// The "Fails [validation]" rows of the watch table: Watch returns
// ErrBadRequest (and no watcher, so no event), whatever the revision, even
// one etcd has not reached. Also options outside the table.
var _ = register("WatchTableFailsValidation", func(t *testing.T, e *env) {
	a := e.create("ns1", "a", "n1", nil)
	n, huge := watchRV(a.ResourceVersion()), watchRV(a.ResourceVersion()+1000000)
	sends := map[string]*bool{"_unset_": nil, "false": watchBool(false), "true": watchBool(true)}
	exact, notOlder := metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan
	all := []string{"_unset_", "false", "true"}
	rows := []struct {
		row   string
		rvs   []string
		match metav1.ResourceVersionMatch
		sends []string
	}{
		{"_unset_ | _unset_ | false / true", []string{""}, "", []string{"false", "true"}},
		{"_unset_ | _NotOlderThan_ | _unset_", []string{""}, notOlder, []string{"_unset_"}},
		{"_unset_ | _Exact_ | _unset_ / false / true", []string{""}, exact, all},
		{"_0_ | _unset_ | false / true", []string{"0"}, "", []string{"false", "true"}},
		{"_0_ | _NotOlderThan_ | _unset_", []string{"0"}, notOlder, []string{"_unset_"}},
		{"_0_ | _Exact_ | _unset_ / false / true", []string{"0"}, exact, all},
		{"_RV_ | _unset_ | false / true", []string{n, huge}, "", []string{"false", "true"}},
		{"_RV_ | _NotOlderThan_ | _unset_", []string{n, huge}, notOlder, []string{"_unset_"}},
		{"_RV_ | _Exact_ | _unset_ / false / true", []string{n, huge}, exact, all},
	}
	check := func(t *testing.T, what string, scope string, opts storage.ListOptions) {
		t.Helper()
		w, err := e.store.Watch(e.ctx, scope, opts)
		if w != nil {
			watchStopped(w)
			t.Errorf("%s: Watch returned a watcher", what)
		}
		var se *storage.Error
		if !errors.As(err, &se) || se.Code != storage.ErrBadRequest {
			t.Errorf("%s: got error %v, want %s", what, err, storage.ErrBadRequest)
		}
	}
	for _, r := range rows {
		t.Run(strings.ReplaceAll(strings.ReplaceAll(r.row, " / ", ","), " ", ""), func(t *testing.T) {
			for _, rv := range r.rvs {
				for _, s := range r.sends {
					for _, bookmarks := range []bool{false, true} {
						opts := storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: r.match, SendInitialEvents: sends[s], AllowWatchBookmarks: bookmarks}
						check(t, fmt.Sprintf("%q: resourceVersion %q, sendInitialEvents %s, allowWatchBookmarks %v", r.row, rv, s, bookmarks), "", opts)
					}
				}
			}
		})
	}
	t.Run("OutsideTheTable", func(t *testing.T) {
		for _, rv := range []string{"-1", "x", "01", " 1", "1 "} {
			check(t, fmt.Sprintf("resourceVersion %q", rv), "", storage.ListOptions{ResourceVersion: rv})
		}
		check(t, "resourceVersionMatch Bogus", "", storage.ListOptions{ResourceVersion: n, ResourceVersionMatch: "Bogus", SendInitialEvents: watchBool(true)})
		check(t, "field selector on a field that is not selectable", "", storage.ListOptions{Fields: fields.OneTermEqualSelector("spec.unknown", "x")})
	})
})

// Field selector spec.nodeName=n1: an object updated from n1 to n2 arrives
// as DELETED with its last matching state at the update's revision; one
// updated from n2 to n1 as ADDED; writes to objects that match neither
// before nor after are not delivered. Through "_RV_ | _unset_ | _unset_"
// (stream) and "_unset_ | _NotOlderThan_ | true" (filtered initial state).
var _ = register("WatchFieldSelector", func(t *testing.T, e *env) {
	onN1 := func(o *object.Object) bool { return o.Fields().Get("spec.nodeName") == "n1" }
	sel := fields.OneTermEqualSelector("spec.nodeName", "n1")
	a := e.create("ns1", "a", "n1", nil)
	b := e.create("ns1", "b", "n2", nil)
	c := e.create("ns2", "c", "n1", nil)
	d := e.create("ns1", "d", "n3", nil)
	startRV := e.hist.lastRV()
	wFrom := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: watchRV(startRV), Fields: sel})
	wInit := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true), AllowWatchBookmarks: true, Fields: sel})
	current, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}

	a2 := e.update(a, "n2", nil)                         // stops matching: DELETED
	b2 := e.update(b, "n1", nil)                         // starts matching: ADDED
	e.update(d, "n4", nil)                               // matches neither before nor after
	c2 := e.update(c, "n1", map[string]string{"l": "v"}) // keeps matching: MODIFIED
	e.remove("ns1/d")                                    // never matched
	cDel := e.remove("ns2/c")                            // matched: DELETED
	e.create("ns1", "x", "n2", nil)                      // never matches
	z := e.create("ns1", "z", "n1", map[string]string{}) // ADDED

	ev := expectEvent(t, wFrom, storage.EventDeleted, "ns1/a", a2.ResourceVersion())
	if !ev.Object.StoredEqual(a) || !onN1(ev.Object) {
		t.Fatalf("DELETED for an object leaving the selector carries %s, want its last matching state %s", ev.Object.JSON(), a.JSON())
	}
	ev = expectEvent(t, wFrom, storage.EventAdded, "ns1/b", b2.ResourceVersion())
	if !bytes.Equal(ev.Object.JSON(), b2.JSON()) {
		t.Fatalf("ADDED for an object entering the selector carries %s, want %s", ev.Object.JSON(), b2.JSON())
	}
	ev = expectEvent(t, wFrom, storage.EventModified, "ns2/c", c2.ResourceVersion())
	if !bytes.Equal(ev.Object.JSON(), c2.JSON()) {
		t.Fatalf("MODIFIED carries %s, want %s", ev.Object.JSON(), c2.JSON())
	}
	ev = expectEvent(t, wFrom, storage.EventDeleted, "ns2/c", cDel.ResourceVersion())
	if !ev.Object.StoredEqual(c2) {
		t.Fatalf("DELETED carries %s, want the last state %s", ev.Object.JSON(), c2.JSON())
	}
	expectEvent(t, wFrom, storage.EventAdded, "ns1/z", z.ResourceVersion())
	watchQuiet(t, "field selector, from RV", wFrom, watchQuietWait, false)

	got := watchCollect(t, wInit, z.ResourceVersion())
	e.checkWatch(t, "field selector, \"_unset_ | _NotOlderThan_ | true\"", got, watchExpect{
		scope: "", keep: onN1, initial: true, endBookmark: true, minR: startRV, maxR: current, bookmarksOK: true,
	})
	if n := len(e.hist.stateAt(startRV, "", onN1)); n != 2 {
		t.Fatalf("test setup: %d objects on n1, want 2", n)
	}
})

// Label selector app=x over scope "ns1/" (which sees nothing from "ns2/"):
// an object whose label changes away arrives as DELETED with its last
// matching state; one whose label changes to app=x as ADDED. Through
// "_unset_ | _NotOlderThan_ | false" (from now) and "_unset_ | _unset_ |
// _unset_" (initial state).
var _ = register("WatchLabelSelector", func(t *testing.T, e *env) {
	isX := func(o *object.Object) bool { return o.Labels().Get("app") == "x" }
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	a := e.create("ns1", "a", "n1", map[string]string{"app": "x"})
	b := e.create("ns1", "b", "n1", map[string]string{"app": "y"})
	c := e.create("ns2", "c", "n1", map[string]string{"app": "x"})
	startRV := e.hist.lastRV()
	wNow := e.watch(t, e.ctx, "ns1/", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false), Labels: sel})
	wInit := e.watch(t, e.ctx, "ns1/", storage.ListOptions{Labels: sel})

	a2 := e.update(a, "n1", map[string]string{"app": "y"}) // stops matching: DELETED
	b2 := e.update(b, "n1", map[string]string{"app": "x"}) // starts matching: ADDED
	e.update(c, "n2", map[string]string{"app": "x"})       // other namespace
	e.create("ns2", "d", "n1", map[string]string{"app": "x"})
	e.create("ns1", "e", "n1", map[string]string{"app": "z"}) // never matches
	b3 := e.update(b2, "n9", map[string]string{"app": "x"})   // MODIFIED
	bDel := e.remove("ns1/b")                                 // DELETED

	ev := expectEvent(t, wNow, storage.EventDeleted, "ns1/a", a2.ResourceVersion())
	if !ev.Object.StoredEqual(a) || !isX(ev.Object) {
		t.Fatalf("DELETED for an object leaving the selector carries %s, want its last matching state %s", ev.Object.JSON(), a.JSON())
	}
	expectEvent(t, wNow, storage.EventAdded, "ns1/b", b2.ResourceVersion())
	expectEvent(t, wNow, storage.EventModified, "ns1/b", b3.ResourceVersion())
	ev = expectEvent(t, wNow, storage.EventDeleted, "ns1/b", bDel.ResourceVersion())
	if !ev.Object.StoredEqual(b3) {
		t.Fatalf("DELETED carries %s, want the last state %s", ev.Object.JSON(), b3.JSON())
	}
	watchQuiet(t, "label selector, from now", wNow, watchQuietWait, false)

	got := watchCollect(t, wInit, bDel.ResourceVersion())
	e.checkWatch(t, "label selector, \"_unset_ | _unset_ | _unset_\"", got, watchExpect{
		scope: "ns1/", keep: isX, initial: true, starts: []uint64{startRV},
	})
	watchQuiet(t, "label selector, initial state", wInit, watchQuietWait, false)
})

// A DELETED event carries the object's last state at the deletion's
// revision, live ("_unset_ | _NotOlderThan_ | false") and replayed from
// history ("_RV_ | _unset_ | _unset_").
var _ = register("WatchDeletedCarriesLastState", func(t *testing.T, e *env) {
	a := e.create("ns1", "a", "n1", map[string]string{"app": "x"})
	a2 := e.update(a, "n2", map[string]string{"app": "y"})
	w := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false)})
	del := e.remove("ns1/a")
	if del.ResourceVersion() <= a2.ResourceVersion() {
		t.Fatalf("Delete returned %v, want the deletion's revision", del)
	}
	check := func(what string, ev storage.Event) {
		t.Helper()
		if !ev.Object.StoredEqual(a2) || !bytes.Equal(ev.Object.JSON(), a2.WithResourceVersion(del.ResourceVersion()).JSON()) || !bytes.Equal(ev.Object.JSON(), del.JSON()) {
			t.Fatalf("%s: DELETED carries %s, want the last state at the deletion's revision %s", what, ev.Object.JSON(), del.JSON())
		}
	}
	check("live", expectEvent(t, w, storage.EventDeleted, "ns1/a", del.ResourceVersion()))
	replay := e.watch(t, e.ctx, "ns1/", storage.ListOptions{ResourceVersion: watchRV(a.ResourceVersion())})
	expectEvent(t, replay, storage.EventModified, "ns1/a", a2.ResourceVersion())
	check("replayed", expectEvent(t, replay, storage.EventDeleted, "ns1/a", del.ResourceVersion()))
	watchQuiet(t, "replayed", replay, watchQuietWait, false)
})

// ListOptions.KeyOnlyDeletes: a DELETED event may carry the key and the
// deletion's revision alone (etcd3's do; the cache's carry the last state,
// which it holds anyway); every other event is as without it. A watch that
// filters (labels, shard) ignores it: its DELETED events, of a deletion and
// of an object leaving its selection, carry the last state.
var _ = register("WatchKeyOnlyDeletes", func(t *testing.T, e *env) {
	a := e.create("ns1", "a", "n1", map[string]string{"app": "x"})
	b := e.create("ns1", "b", "n1", map[string]string{"app": "x"})
	fromNow := storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false), KeyOnlyDeletes: true}
	all := e.watch(t, e.ctx, "", fromNow)
	byLabel := fromNow
	byLabel.Labels = labels.SelectorFromSet(labels.Set{"app": "x"})
	selected := e.watch(t, e.ctx, "ns1/", byLabel)
	everyShard, err := storage.ParseShardSelector(fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", shardBounds[0], shardBounds[len(shardBounds)-1]))
	if err != nil {
		t.Fatal(err)
	}
	byShard := fromNow
	byShard.Shard = everyShard
	sharded := e.watch(t, e.ctx, "", byShard)

	a2 := e.update(a, "n2", map[string]string{"app": "y"}) // leaves app=x
	delA := e.remove("ns1/a")
	delB := e.remove("ns1/b")

	ev := expectEvent(t, all, storage.EventModified, "ns1/a", a2.ResourceVersion())
	if !ev.Object.StoredEqual(a2) {
		t.Fatalf("MODIFIED carries %s, want %s", ev.Object.JSON(), a2.JSON())
	}
	for _, del := range []struct {
		rv   uint64
		last *object.Object
	}{{delA.ResourceVersion(), a2}, {delB.ResourceVersion(), b}} {
		ev := expectEvent(t, all, storage.EventDeleted, del.last.Key(), del.rv)
		if len(ev.Object.Stored()) != 0 && !ev.Object.StoredEqual(del.last) {
			t.Fatalf("DELETED carries %s, want the key alone or the last state %s", ev.Object.JSON(), del.last.JSON())
		}
	}
	watchQuiet(t, "KeyOnlyDeletes, no selector", all, watchQuietWait, false)

	ev = expectEvent(t, selected, storage.EventDeleted, "ns1/a", a2.ResourceVersion())
	if !ev.Object.StoredEqual(a) {
		t.Fatalf("label selector: DELETED for an object leaving the selector carries %s, want its last matching state %s", ev.Object.JSON(), a.JSON())
	}
	ev = expectEvent(t, selected, storage.EventDeleted, "ns1/b", delB.ResourceVersion())
	if !ev.Object.StoredEqual(b) {
		t.Fatalf("label selector: DELETED carries %s, want the last state %s", ev.Object.JSON(), b.JSON())
	}
	watchQuiet(t, "KeyOnlyDeletes, label selector", selected, watchQuietWait, false)

	expectEvent(t, sharded, storage.EventModified, "ns1/a", a2.ResourceVersion())
	for _, last := range []*object.Object{a2, b} {
		ev := nextNonBookmark(t, sharded)
		if ev.Type != storage.EventDeleted || ev.Object == nil || !ev.Object.StoredEqual(last) {
			t.Fatalf("shard selector: got %s, want DELETED with the last state %s", watchFmtEvent(ev), last.JSON())
		}
	}
	watchQuiet(t, "KeyOnlyDeletes, shard selector", sharded, watchQuietWait, false)
})

// nextBookmarkAtLeast reads w until a BOOKMARK at revision rv or later
// arrives, checking bookmarks on the way and that revisions never go back;
// non-bookmark events are returned.
func nextBookmarkAtLeast(t *testing.T, what string, w storage.Watcher, rv uint64, last *uint64) []storage.Event {
	t.Helper()
	var evs []storage.Event
	deadline := time.After(watchBookmarkWait)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: watch channel closed", what)
			}
			switch ev.Type {
			case storage.EventBookmark:
				if ev.Object != nil || ev.Err != nil || ev.InitialEventsEnd || ev.ResourceVersion < *last {
					t.Fatalf("%s: bookmark %s after revision %d", what, watchFmtEvent(ev), *last)
				}
				*last = ev.ResourceVersion
				if ev.ResourceVersion >= rv {
					return evs
				}
			case storage.EventError:
				t.Fatalf("%s: %s", what, watchFmtEvent(ev))
			default:
				if ev.ResourceVersion <= *last {
					t.Fatalf("%s: event %s after revision %d", what, watchFmtEvent(ev), *last)
				}
				*last = ev.ResourceVersion
				evs = append(evs, ev)
			}
		case <-deadline:
			t.Fatalf("%s: no BOOKMARK at revision %d or later within %s (progress notifications every %s); got %s",
				what, rv, watchBookmarkWait, ProgressNotifyInterval, watchFmtEvents(evs))
		}
	}
}

// With AllowWatchBookmarks, BOOKMARKs arrive as etcd's progress
// notifications do (every ProgressNotifyInterval), at the revision the
// watch has reached: past the last write, even one the watch does not see
// (another namespace).
var _ = register("WatchBookmarks", func(t *testing.T, e *env) {
	a := e.create("ns1", "a", "n1", nil)
	w := e.watch(t, e.ctx, "ns1/", storage.ListOptions{ResourceVersion: watchRV(a.ResourceVersion()), AllowWatchBookmarks: true})
	a2 := e.update(a, "n2", nil)
	last := a.ResourceVersion()
	evs := nextBookmarkAtLeast(t, "after a write", w, a2.ResourceVersion(), &last)
	if len(evs) != 1 || watchEventDiff(evs[0], watchWant{storage.EventModified, a2}) != "" {
		t.Fatalf("events before the bookmark: %s, want MODIFIED %v", watchFmtEvents(evs), a2)
	}
	// Periodic: another one comes without any write.
	nextBookmarkAtLeast(t, "without writes", w, last, &last)
	other := e.create("ns2", "b", "n1", nil)
	if evs := nextBookmarkAtLeast(t, "after a write outside the scope", w, other.ResourceVersion(), &last); len(evs) != 0 {
		t.Fatalf("events for a write outside the scope: %s", watchFmtEvents(evs))
	}
})

// After a write, RequestProgress makes a bookmarks-enabled watch send a
// BOOKMARK at that write's revision or later.
var _ = register("WatchRequestProgress", func(t *testing.T, e *env) {
	w := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false), AllowWatchBookmarks: true})
	a := e.create("ns1", "a", "n1", nil)
	if err := e.store.RequestProgress(e.ctx); err != nil {
		t.Fatalf("RequestProgress: %v", err)
	}
	var last uint64
	evs := nextBookmarkAtLeast(t, "after RequestProgress", w, a.ResourceVersion(), &last)
	if len(evs) != 1 || watchEventDiff(evs[0], watchWant{storage.EventAdded, a}) != "" {
		t.Fatalf("events before the bookmark: %s, want ADDED %v", watchFmtEvents(evs), a)
	}
	b := e.create("ns2", "b", "n1", nil)
	if err := e.store.RequestProgress(e.ctx); err != nil {
		t.Fatalf("RequestProgress: %v", err)
	}
	evs = nextBookmarkAtLeast(t, "after a second RequestProgress", w, b.ResourceVersion(), &last)
	if len(evs) != 1 || watchEventDiff(evs[0], watchWant{storage.EventAdded, b}) != "" {
		t.Fatalf("events before the bookmark: %s, want ADDED %v", watchFmtEvents(evs), b)
	}
})

// Without AllowWatchBookmarks no BOOKMARK arrives (for sendInitialEvents=true
// at most the initial-events-end one), neither from etcd's periodic
// progress notifications nor after RequestProgress.
var _ = register("WatchNoBookmarksUnlessAllowed", func(t *testing.T, e *env) {
	p := e.create("ns1", "p", "n1", nil)
	wNow := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false)})
	wFrom := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: watchRV(p.ResourceVersion())})
	wInit := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true)})
	// A bookmarks-enabled watch on the same store must not make the others
	// send bookmarks.
	e.watch(t, e.ctx, "", storage.ListOptions{AllowWatchBookmarks: true})
	a := e.create("ns1", "a", "n1", nil)

	expectEvent(t, wNow, storage.EventAdded, "ns1/a", a.ResourceVersion())
	expectEvent(t, wFrom, storage.EventAdded, "ns1/a", a.ResourceVersion())
	for i := 0; ; i++ {
		ev := nextEvent(t, wInit)
		if i == 0 {
			if watchEventDiff(ev, watchWant{storage.EventAdded, p}) != "" {
				t.Fatalf("sendInitialEvents: first event %s, want ADDED %v", watchFmtEvent(ev), p)
			}
			continue
		}
		if i == 1 && ev.Type == storage.EventBookmark && ev.InitialEventsEnd {
			continue
		}
		if watchEventDiff(ev, watchWant{storage.EventAdded, a}) != "" {
			t.Fatalf("sendInitialEvents: event %d is %s, want ADDED %v (or the initial-events-end bookmark before it)", i, watchFmtEvent(ev), a)
		}
		break
	}
	if err := e.store.RequestProgress(e.ctx); err != nil {
		t.Fatalf("RequestProgress: %v", err)
	}
	// All three at once, for watchNoBookmarkWait.
	deadline := time.After(watchNoBookmarkWait)
	for {
		select {
		case ev, ok := <-wNow.ResultChan():
			t.Fatalf("\"_unset_ | _NotOlderThan_ | false\" without bookmarks: got %s (open %v)", watchFmtEvent(ev), ok)
		case ev, ok := <-wFrom.ResultChan():
			t.Fatalf("\"_RV_ | _unset_ | _unset_\" without bookmarks: got %s (open %v)", watchFmtEvent(ev), ok)
		case ev, ok := <-wInit.ResultChan():
			t.Fatalf("\"_unset_ | _NotOlderThan_ | true\" without bookmarks: got %s (open %v)", watchFmtEvent(ev), ok)
		case <-deadline:
			return
		}
	}
})

// A watch from a revision older than a compaction ends with an ERROR event
// of code Expired, then its channel closes ("_RV_ | _unset_ | _unset_" and
// "_RV_ | _NotOlderThan_ | false"); or Watch itself returns ErrExpired; or,
// from a watch cache whose event log still reaches back to that revision,
// exactly the events after it (the cache's own log has no gap).
// "_RV_ | _NotOlderThan_ | true" from such a revision is fine: its initial
// state is any state not older than RV.
var _ = register("WatchCompacted", func(t *testing.T, e *env) {
	a := e.create("ns1", "a", "n1", nil)
	old := a.ResourceVersion()
	a = e.update(a, "n2", nil)
	e.create("ns1", "b", "n1", nil)
	e.update(a, "n3", nil)
	compacted := e.compact()
	for _, c := range []struct {
		row  string
		opts storage.ListOptions
	}{
		{"_RV_ | _unset_ | _unset_", storage.ListOptions{ResourceVersion: watchRV(old)}},
		{"_RV_ | _unset_ | _unset_ (with bookmarks)", storage.ListOptions{ResourceVersion: watchRV(old), AllowWatchBookmarks: true}},
		{"_RV_ | _NotOlderThan_ | false", storage.ListOptions{ResourceVersion: watchRV(old), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false)}},
	} {
		what := fmt.Sprintf("%q from %d, compacted at %d", c.row, old, compacted)
		w, err := e.store.Watch(e.ctx, "", c.opts)
		if err != nil {
			assertCode(t, err, storage.ErrExpired)
			continue
		}
		t.Cleanup(func() { watchStopped(w) })
		ev := nextEvent(t, w)
		if ev.Type != storage.EventError {
			// A watch cache whose event log still reaches back to old may
			// serve the watch: then exactly the events after old.
			got := append([]storage.Event{ev}, watchCollect(t, w, e.hist.lastRV())...)
			e.checkWatch(t, what+", served from a kept event log", got, watchExpect{bookmarksOK: true, starts: []uint64{old}})
			watchStop(t, what, w)
			continue
		}
		if ev.Err == nil || ev.Err.Code != storage.ErrExpired || ev.Object != nil {
			watchStopped(w)
			t.Fatalf("%s: first event %s, want an ERROR with code %s", what, watchFmtEvent(ev), storage.ErrExpired)
		}
		if rest := watchDrain(t, what, w); len(rest) != 0 {
			t.Fatalf("%s: events after the ERROR: %s", what, watchFmtEvents(rest))
		}
		watchStop(t, what, w)
	}

	opts := storage.ListOptions{ResourceVersion: watchRV(old), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true), AllowWatchBookmarks: true}
	w := e.watch(t, e.ctx, "", opts)
	current, err := e.store.CurrentResourceVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.remove("ns1/b")
	got := watchCollect(t, w, e.hist.lastRV())
	e.checkWatch(t, fmt.Sprintf("\"_RV_ | _NotOlderThan_ | true\" from %d, compacted at %d", old, compacted), got, watchExpect{
		initial: true, endBookmark: true, minR: old, maxR: current, bookmarksOK: true,
	})
})

// Stop closes the channel, even with undelivered events, and may be called
// again and concurrently.
var _ = register("WatchStop", func(t *testing.T, e *env) {
	e.create("ns1", "p", "n1", nil)
	e.create("ns1", "q", "n1", nil)
	idle := e.watch(t, e.ctx, "", storage.ListOptions{})
	busy := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true), AllowWatchBookmarks: true})
	shared := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: "0"})
	for i := range 5 {
		e.create("ns1", fmt.Sprintf("o%d", i), "n1", nil)
	}
	time.Sleep(50 * time.Millisecond) // let undelivered events pile up

	watchStop(t, "first Stop", idle)
	watchDrain(t, "after Stop", idle)
	watchStop(t, "second Stop", idle)
	if _, ok := <-idle.ResultChan(); ok {
		t.Fatal("event after the channel closed")
	}

	watchStop(t, "Stop with undelivered events", busy)
	watchDrain(t, "after Stop with undelivered events", busy)

	// More undelivered events than any reasonable buffer: the watch is
	// blocked delivering when it is stopped, or its context cancelled.
	from := watchRV(e.hist.lastRV())
	for i := range watchManyObjects {
		e.create("ns2", fmt.Sprintf("m%03d", i), "n1", nil)
	}
	blocked := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: from})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	blockedCtx := e.watch(t, ctx, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(true), AllowWatchBookmarks: true})
	time.Sleep(100 * time.Millisecond)
	watchStop(t, "Stop of a watch blocked delivering", blocked)
	watchDrain(t, "after Stop of a watch blocked delivering", blocked)
	cancel()
	watchDrain(t, "after cancelling the context of a watch blocked delivering", blockedCtx)
	watchStop(t, "Stop after cancel", blockedCtx)

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); shared.Stop() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(watchCloseWait):
		t.Fatal("concurrent Stops did not return")
	}
	watchDrain(t, "after concurrent Stops", shared)
})

// Cancelling the context passed to Watch ends the watch: the channel
// closes, whether the watch is idle or has undelivered events; Stop is
// still safe afterwards.
var _ = register("WatchContextCancel", func(t *testing.T, e *env) {
	e.create("ns1", "p", "n1", nil)
	ctx1, cancel1 := context.WithCancel(e.ctx)
	defer cancel1()
	w := e.watch(t, ctx1, "", storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: watchBool(false), AllowWatchBookmarks: true})
	a := e.create("ns1", "a", "n1", nil)
	expectEvent(t, w, storage.EventAdded, "ns1/a", a.ResourceVersion())
	cancel1()
	for _, ev := range watchDrain(t, "idle watch, context cancelled", w) {
		if ev.Type != storage.EventBookmark {
			t.Errorf("idle watch, context cancelled: got %s", watchFmtEvent(ev))
		}
	}
	watchStop(t, "Stop after cancel", w)

	ctx2, cancel2 := context.WithCancel(e.ctx)
	defer cancel2()
	busy := e.watch(t, ctx2, "", storage.ListOptions{})
	for i := range 5 {
		e.create("ns1", fmt.Sprintf("o%d", i), "n1", nil)
	}
	time.Sleep(50 * time.Millisecond)
	cancel2()
	watchDrain(t, "watch with undelivered events, context cancelled", busy)
	watchStop(t, "Stop after cancel", busy)
})

// A watch with a selector from resourceVersion N, with etcd compacted at
// N+1, meets an update whose previous state was compacted away: it must
// deliver the right events (DELETED for an object that stopped matching,
// ADDED for one that started) or end with 410 Expired so that the client
// relists, never a MODIFIED for an object it never saw nor silence for one
// that left (found by the upstream storage tests).
var _ = register("WatchSelectorAtCompactionBoundary", func(t *testing.T, e *env) {
	sel := fields.OneTermEqualSelector("spec.nodeName", "n1")
	a := e.create("ns1", "a", "n1", nil)
	b := e.create("ns1", "b", "n2", nil)
	from := e.hist.lastRV()
	a2 := e.update(a, "n2", nil) // stops matching
	e.compact()                  // at a2's revision: a's previous state is gone
	b2 := e.update(b, "n1", nil) // starts matching
	w := e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: watchRV(from), Fields: sel})
	ev := nextNonBookmark(t, w)
	if ev.Type == storage.EventError {
		if ev.Err == nil || ev.Err.Code != storage.ErrExpired {
			t.Fatalf("the watch ended with %v, want 410 Expired", ev.Err)
		}
		return
	}
	if ev.Type != storage.EventDeleted || ev.Object == nil || ev.Object.Key() != "ns1/a" || ev.ResourceVersion != a2.ResourceVersion() {
		t.Fatalf("got %s %v, want DELETED ns1/a at %d or 410 Expired", ev.Type, ev.Object, a2.ResourceVersion())
	}
	expectEvent(t, w, storage.EventAdded, "ns1/b", b2.ResourceVersion())
})

// A watch from resourceVersion N, with etcd compacted at N+1 where the
// object created at N was deleted, meets a deletion whose previous state
// was compacted away: with or without a selector it must deliver DELETED
// with the object's last state or end with 410 Expired so that the client
// relists, never an internal error. A watch that ends cleanly before
// either (a cache closes a watcher that does not keep up, on a loaded
// machine) is resumed from N, as a client resumes it.

var _ = register("WatchDeleteAtCompactionBoundary", func(t *testing.T, e *env) {
	for _, sel := range []fields.Selector{nil, fields.OneTermEqualSelector("spec.nodeName", "n1")} {
		a := e.create("ns1", fmt.Sprintf("a%d", e.hist.lastRV()), "n1", nil)
		from := a.ResourceVersion()
		gone := e.remove(a.Key())
		e.compact() // at the deletion's revision: a's state is gone
		ev := firstAfterResumes(t, func() storage.Watcher {
			return e.watch(t, e.ctx, "", storage.ListOptions{ResourceVersion: watchRV(from), Fields: sel})
		})
		if ev.Type == storage.EventError {
			if ev.Err == nil || ev.Err.Code != storage.ErrExpired {
				t.Fatalf("selector %v: the watch ended with %v, want 410 Expired", sel, ev.Err)
			}
			continue
		}
		if ev.Type != storage.EventDeleted || ev.Object == nil || ev.Object.Key() != a.Key() || ev.ResourceVersion != gone.ResourceVersion() {
			t.Fatalf("selector %v: got %s %v, want DELETED %s at %d or 410 Expired", sel, ev.Type, ev.Object, a.Key(), gone.ResourceVersion())
		}
	}
})

// firstAfterResumes is the first event other than a bookmark of the watch
// that open starts, starting it again (as a client resumes from the
// revision it had) when it ends cleanly before any, up to three times.
func firstAfterResumes(t *testing.T, open func() storage.Watcher) storage.Event {
	t.Helper()
	for attempt := 0; ; attempt++ {
		w := open()
		for {
			var ev storage.Event
			var ok bool
			select {
			case ev, ok = <-w.ResultChan():
			case <-time.After(eventTimeout):
				t.Fatal("no watch event within", eventTimeout)
			}
			if !ok && attempt < 3 {
				break // ended cleanly: resume
			}
			if !ok {
				t.Fatal("the watch ended cleanly four times without an event")
			}
			if ev.Type != storage.EventBookmark {
				w.Stop()
				return ev
			}
		}
	}
}
