package cacher

import (
	"sort"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// logEvent is one change as the cache saw it, unfiltered.
type logEvent struct {
	rv  uint64
	typ storage.EventType // EventAdded, EventModified or EventDeleted
	// obj is the new state; for EventDeleted the last state, at rv.
	obj *object.Object
	// prev is the state before (nil for EventAdded), at rv: what a watcher
	// whose selector the object leaves receives as DELETED.
	prev *object.Object
	at   time.Time
}

// eventLog is the recent history of a resource's events, for watches that
// start at a past revision. It holds every event with a revision after
// start, in revision order, for the history window and within a capacity;
// the slice grows with the event rate and shrinks when the rate drops.
// Dropping the oldest events advances head rather than moving the rest
// (a full log drops an event per event added: moving 100,000 pointers each
// time would cost more than the event's dispatch); the dropped prefix is
// reclaimed once it is half the slice, so a drop costs O(1) amortized.
//
// Owned by the dispatcher: guarded by Cacher.watchMu. Callers copy what
// they keep of after's result before releasing the lock.
type eventLog struct {
	window   time.Duration
	capacity int
	start    uint64      // every event with rv > start is in events[head:]
	events   []*logEvent // events[:head] are dropped (nil)
	head     int
}

func newEventLog(window time.Duration, capacity int) *eventLog {
	return &eventLog{window: window, capacity: capacity}
}

// reset empties the log, which now starts at rv (a re-list).
func (l *eventLog) reset(rv uint64) {
	clear(l.events)
	l.events, l.head = l.events[:0], 0
	l.start = rv
}

// logged returns the events held, oldest first.
func (l *eventLog) logged() []*logEvent { return l.events[l.head:] }

// add appends an event and drops what fell out of the window or capacity.
func (l *eventLog) add(e *logEvent) {
	l.events = append(l.events, e)
	live := l.logged()
	drop := 0
	for drop < len(live) && (len(live)-drop > l.capacity || e.at.Sub(live[drop].at) > l.window) {
		drop++
	}
	if drop == 0 {
		return
	}
	l.start = live[drop-1].rv
	clear(live[:drop])
	l.head += drop
	if l.head < len(l.events)-l.head {
		return
	}
	// The dropped prefix is at least half: move the rest to the front, into
	// a smaller array when the rate dropped a lot (giving memory back).
	live = l.logged()
	if cap(l.events) > 1024 && len(live) < cap(l.events)/4 {
		l.events, l.head = append(make([]*logEvent, 0, 2*len(live)), live...), 0
		return
	}
	n := copy(l.events, live)
	clear(l.events[n:])
	l.events, l.head = l.events[:n], 0
}

// after returns the events with a revision after rv, and false when the
// log no longer holds them all (rv is too old).
func (l *eventLog) after(rv uint64) ([]*logEvent, bool) {
	if rv < l.start {
		return nil, false
	}
	live := l.logged()
	i := sort.Search(len(live), func(i int) bool { return live[i].rv > rv })
	return live[i:], true
}

// since counts the events logged at or after t.
func (l *eventLog) since(t time.Time) int {
	live := l.logged()
	return len(live) - sort.Search(len(live), func(i int) bool { return !live[i].at.Before(t) })
}
