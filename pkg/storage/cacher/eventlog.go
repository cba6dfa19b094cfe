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
//
// Owned by the dispatcher: guarded by Cacher.watchMu.
type eventLog struct {
	window   time.Duration
	capacity int
	start    uint64 // every event with rv > start is in events
	events   []*logEvent
}

func newEventLog(window time.Duration, capacity int) *eventLog {
	return &eventLog{window: window, capacity: capacity}
}

// reset empties the log, which now starts at rv (a re-list).
func (l *eventLog) reset(rv uint64) {
	clear(l.events)
	l.events = l.events[:0]
	l.start = rv
}

// add appends an event and drops what fell out of the window or capacity.
func (l *eventLog) add(e *logEvent) {
	l.events = append(l.events, e)
	drop := 0
	for drop < len(l.events) && (len(l.events)-drop > l.capacity || e.at.Sub(l.events[drop].at) > l.window) {
		drop++
	}
	if drop == 0 {
		return
	}
	l.start = l.events[drop-1].rv
	n := copy(l.events, l.events[drop:])
	clear(l.events[n:])
	l.events = l.events[:n]
	// Give memory back when the rate dropped a lot.
	if cap(l.events) > 1024 && len(l.events) < cap(l.events)/4 {
		l.events = append(make([]*logEvent, 0, 2*len(l.events)), l.events...)
	}
}

// after returns the events with a revision after rv, and false when the
// log no longer holds them all (rv is too old).
func (l *eventLog) after(rv uint64) ([]*logEvent, bool) {
	if rv < l.start {
		return nil, false
	}
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].rv > rv })
	return l.events[i:], true
}

// since counts the events logged at or after t.
func (l *eventLog) since(t time.Time) int {
	return len(l.events) - sort.Search(len(l.events), func(i int) bool { return !l.events[i].at.Before(t) })
}
