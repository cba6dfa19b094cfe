package cacher

import (
	"slices"
	"testing"
	"time"
)

// logRevs lists the revisions of the events a log holds, oldest first.
func logRevs(l *eventLog) []uint64 {
	var out []uint64
	for _, e := range l.logged() {
		out = append(out, e.rv)
	}
	return out
}

// TestEventLogCapacity: a full log keeps the newest capacity events,
// start follows the last one dropped, after answers from it and refuses
// older revisions, and dropped events are released, across many
// reclaimings of the dropped prefix.
func TestEventLogCapacity(t *testing.T) {
	now := time.Now()
	l := newEventLog(time.Hour, 10)
	l.reset(100)
	for rv := uint64(101); rv <= 1000; rv++ {
		l.add(&logEvent{rv: rv, at: now})
		want := max(rv-9, 101)
		if got := logRevs(l); got[0] != want || got[len(got)-1] != rv || len(got) != int(rv-want+1) {
			t.Fatalf("after adding %d: %v", rv, got)
		}
		if l.start != want-1 {
			t.Fatalf("after adding %d: start %d, want %d", rv, l.start, want-1)
		}
	}
	if n := pinned(&l.events); n != 0 {
		t.Errorf("%d dropped events are still referenced", n)
	}
	if _, ok := l.after(989); ok {
		t.Error("after(989) answered though event 990 was dropped")
	}
	events, ok := l.after(995)
	if !ok || len(events) != 5 || events[0].rv != 996 {
		t.Errorf("after(995): %d events from %v, %v", len(events), events[0].rv, ok)
	}
	if n := l.since(now); n != 10 {
		t.Errorf("since: %d, want 10", n)
	}
}

// TestEventLogWindow: events older than the window go as newer ones come,
// and a log that was large gives its memory back once the rate drops.
func TestEventLogWindow(t *testing.T) {
	start := time.Now()
	l := newEventLog(10*time.Second, 100000)
	l.reset(0)
	// 10,000 events in one second, then one a second for a minute.
	for rv := uint64(1); rv <= 10000; rv++ {
		l.add(&logEvent{rv: rv, at: start.Add(time.Duration(rv) * 100 * time.Microsecond)})
	}
	large := cap(l.events.items)
	for i := range uint64(60) {
		l.add(&logEvent{rv: 10001 + i, at: start.Add(time.Duration(2+i) * time.Second)})
	}
	got := logRevs(l)
	// At 61 s, the window holds the events from 51 s: revisions 10050 on.
	if want := []uint64{10050, 10060}; got[0] != want[0] || got[len(got)-1] != want[1] || !slices.IsSorted(got) || len(got) != 11 {
		t.Errorf("held %v", got)
	}
	if cap(l.events.items) >= large/4 {
		t.Errorf("capacity %d after the rate dropped, was %d", cap(l.events.items), large)
	}
	if n := pinned(&l.events); n != 0 {
		t.Errorf("%d dropped events are still referenced", n)
	}
}

// BenchmarkEventLogAddFull: adding to a log at its capacity (100,000
// events, the server's), which drops the oldest event every time.
//
//	go test ./pkg/storage/cacher -run '^$' -bench EventLogAddFull
func BenchmarkEventLogAddFull(b *testing.B) {
	now := time.Now()
	l := newEventLog(time.Hour, maxLoggedEvents)
	l.reset(0)
	rv := uint64(0)
	for range maxLoggedEvents {
		rv++
		l.add(&logEvent{rv: rv, at: now})
	}
	for b.Loop() {
		rv++
		l.add(&logEvent{rv: rv, at: now})
	}
}
