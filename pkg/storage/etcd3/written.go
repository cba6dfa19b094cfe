// The records of values this store has just written, for its watches:
// the event of its own write is taken from memory rather than decoded.

package etcd3

import (
	"sync"
	"sync/atomic"

	"github.com/watchcache/watchcache/pkg/object"
)

// RoundTripCodec is a Codec that can tell, for a record's stored JSON,
// whether decoding what it encodes gives that JSON back byte for byte
// (false when it cannot tell cheaply). A store remembers the record of a
// value it writes (see written): the record itself when it round-trips,
// else the one it decoded from the value to answer the write with; with
// any other codec every watch event is decoded.
type RoundTripCodec interface {
	Codec
	RoundTrips(stored []byte) bool
}

// writtenMax bounds the values a store remembers: the writes whose events
// its watches have not reached yet (each taken entry is dropped), and those
// no watch takes (a write that failed, a watch of another range); the
// oldest goes first. A watch that falls further behind its store's writes
// (a loaded machine: 256 was seen to miss a few under 32 writers) decodes
// the older ones. At most about 4 MB for pods (a value and a record of
// 1.3 and 2.5 KB each), held only while a watch lags or watches another
// range.
const writtenMax = 1024

// written remembers, by etcd key, the value this store last wrote there
// and the record it is the encoding of, so that a watch's event of that
// write costs neither the codec's decoding (a pod's protobuf into JSON
// through its Go type: tens of microseconds) nor the record's scan.
//
// Invariant: an entry holds the exact value bytes sent to etcd and the
// record (at no revision) those bytes decode to, which holds because the
// codec round-trips the record's JSON (RoundTripCodec) or there is none
// (the transformer gives back the plaintext it was given). A watch takes a
// record only for an event whose value is byte for byte that value: so a
// write by anyone else (another replica, etcdctl) decodes, unless it wrote
// the very same bytes, which decode to the very same record. Entries are
// keyed by key, not by revision, and put before the write: the watch may
// see the event before the writer learns its revision. A write that fails
// leaves its entry, harmless, until the next write of the key or until it
// is the oldest.
type written struct {
	// watches counts the store's running watches: without one nothing is
	// remembered.
	watches atomic.Int32

	mu      sync.Mutex
	entries map[string]writtenEntry
	// ring holds the keys in the order they were put; ring[next] is the
	// oldest (a slot whose entry was taken or replaced since is stale).
	ring [writtenMax]writtenSlot
	next int
	seq  uint64
}

type writtenEntry struct {
	value  string
	record *object.Object
	seq    uint64
}

type writtenSlot struct {
	key string
	seq uint64
}

// remember notes that value, about to be written at fullKey, is the
// encoding of record, which decoding value gives (the caller knows: the
// codec round-trips, or record was decoded from value), if a watch may
// take it.
func (s *Store) remember(fullKey, value string, record *object.Object) {
	if s.written.watches.Load() == 0 {
		return
	}
	w := &s.written
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entries == nil {
		w.entries = make(map[string]writtenEntry)
	}
	if old := w.ring[w.next]; old.key != "" && w.entries[old.key].seq == old.seq {
		delete(w.entries, old.key)
	}
	w.seq++
	w.entries[fullKey] = writtenEntry{value: value, record: record, seq: w.seq}
	w.ring[w.next] = writtenSlot{key: fullKey, seq: w.seq}
	w.next = (w.next + 1) % writtenMax
}

// take returns the remembered record of value at fullKey, at revision rev,
// and forgets it; nil if value is not what this store last wrote there.
func (w *written) take(fullKey, value []byte, rev int64) *object.Object {
	w.mu.Lock()
	e, ok := w.entries[string(fullKey)]
	if ok && e.value == string(value) {
		delete(w.entries, string(fullKey))
	}
	w.mu.Unlock()
	if !ok || e.value != string(value) {
		return nil
	}
	return e.record.WithResourceVersion(uint64(rev))
}
