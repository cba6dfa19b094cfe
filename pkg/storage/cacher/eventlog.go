// The event log: the recent changes the cache saw, within a time window and
// a capacity, from which watches start at an older revision.

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
// the queue grows with the event rate and shrinks when the rate drops.
//
// Owned by the dispatcher: guarded by Cacher.watchMu. Callers copy what
// they keep of after's result before releasing the lock.
type eventLog struct {
	window   time.Duration
	capacity int
	start    uint64 // every event with rv > start is in events
	events   queue[*logEvent]
}

func newEventLog(window time.Duration, capacity int) *eventLog {
	return &eventLog{window: window, capacity: capacity}
}

// reset empties the log, which now starts at rv (a re-list).
func (l *eventLog) reset(rv uint64) {
	l.events.clear()
	l.start = rv
}

// logged returns the events held, oldest first.
func (l *eventLog) logged() []*logEvent { return l.events.all() }

// add appends an event and drops what fell out of the window or capacity.
func (l *eventLog) add(e *logEvent) {
	l.events.push(e)
	live := l.logged()
	drop := 0
	for drop < len(live) && (len(live)-drop > l.capacity || e.at.Sub(live[drop].at) > l.window) {
		drop++
	}
	if drop > 0 {
		l.start = live[drop-1].rv
		l.events.dropFront(drop)
	}
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
