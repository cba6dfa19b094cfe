// The cells of Events' rows: first and last seen, count, involved object,
// source and message, as kube-apiserver's printers compute them.

package table

import (
	"strings"
)

// eventTimes are what an event's Last Seen and First Seen read, in this
// order.
var eventTimes = []string{"firstTimestamp", "eventTime", "lastTimestamp", "series", "series.lastObservedTime"}

// eventFirstSeen is the age of an event's first occurrence.
func eventFirstSeen(v []raw, r *row) any {
	if first := v[0].time(); !first.IsZero() {
		return since(first, r.now)
	}
	return since(v[1].time(), r.now)
}

// eventLastSeen is the age of an event's last occurrence (of its series').
func eventLastSeen(v []raw, r *row) any {
	if v[3].present() {
		return since(v[4].time(), r.now)
	}
	if last := v[2].time(); !last.IsZero() {
		return since(last, r.now)
	}
	return eventFirstSeen(v, r)
}

// eventCount is how many times an event occurred (1 for a singleton).
func eventCount(v []raw, _ *row) any {
	if v[1].present() {
		return v[2].int()
	}
	return max(v[0].int(), 1)
}

// involvedObject names the object an event is about: "pod/web".
func involvedObject(v []raw, _ *row) any {
	kind, name := strings.ToLower(v[0].str()), v[1].str()
	if name == "" {
		return kind
	}
	return kind + "/" + name
}

// eventSource is the component that reported an event, with its host or
// instance: "kubelet, node-1".
func eventSource(v []raw, _ *row) any {
	component, instance := or(v[0].str(), v[1].str()), or(v[2].str(), v[3].str())
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

// eventMessage is an event's message without surrounding space.
func eventMessage(v []raw, _ *row) any { return strings.TrimSpace(v[0].str()) }
