// Package storage is the contract between the HTTP server and the stores
// behind it (etcd3, and the watch cache wrapping it): the Interface, its
// options, the semantics tables that turn options into a read plan, typed
// errors and continue tokens.
//
// Keys are relative to a store's resource: "namespace/name" for namespaced
// objects, "name" for cluster-scoped ones. A scope is a key prefix: "" for
// the whole resource, "namespace/" for one namespace.
package storage

import (
	"context"
	"path"
	"strings"
	"sync"

	"github.com/watchcache/watchcache/pkg/object"
)

// Interface is one resource's storage.
type Interface interface {
	// Schema describes the resource's objects (selectable fields).
	Schema() *object.Schema

	// Create stores a new object under key; it fails with ErrAlreadyExists
	// if the key exists. data must not carry metadata.resourceVersion, and
	// the caller must not modify it afterwards (records share it; so for
	// the bytes an UpdateFunc returns).
	Create(ctx context.Context, key string, data []byte) (*object.Object, error)

	// Get returns the object under key, read as opts.ResourceVersion says.
	Get(ctx context.Context, key string, opts GetOptions) (*object.Object, error)

	// GetList returns the objects under scope that match the selectors, read
	// as the list table says (see PlanList).
	GetList(ctx context.Context, scope string, opts ListOptions) (*List, error)

	// Watch streams changes under scope as the watch table says (see
	// PlanWatch). Validation errors are returned here, before any event.
	Watch(ctx context.Context, scope string, opts ListOptions) (Watcher, error)

	// GuaranteedUpdate reads the object under key, checks preconditions,
	// applies tryUpdate and writes the result if the object did not change
	// meanwhile, retrying on conflict. cached, if not nil, is a recent state
	// of the object tried first (saving a read); a stale one costs a retry.
	// When tryUpdate returns the stored bytes unchanged nothing is written
	// and the current object is returned.
	GuaranteedUpdate(ctx context.Context, key string, preconditions *Preconditions, tryUpdate UpdateFunc, cached *object.Object) (*object.Object, error)

	// Delete removes the object under key if the preconditions hold, and
	// returns its last state at the deletion's revision. cached is as for
	// GuaranteedUpdate.
	Delete(ctx context.Context, key string, preconditions *Preconditions, cached *object.Object) (*object.Object, error)

	// CurrentResourceVersion returns etcd's current revision, read
	// linearizably.
	CurrentResourceVersion(ctx context.Context) (uint64, error)

	// RequestProgress asks etcd to send a progress notification on this
	// store's watch stream.
	RequestProgress(ctx context.Context) error
}

// UpdateFunc computes an object's new JSON from its current state. Any
// metadata.resourceVersion in the result is ignored.
type UpdateFunc func(current *object.Object) ([]byte, error)

// List is the result of GetList.
type List struct {
	// Items are the list's objects in key order; for a streamed list, those
	// of its first chunk.
	Items []*object.Object
	// Rest, when not nil, reads the rest of a streamed list (see
	// ListOptions.Stream): the objects after Items, in key order, at
	// ResourceVersion, one chunk at a time, each chunk passed to yield once
	// it is read, filtered, and never empty. It returns the first error of
	// a read (ErrExpired if etcd compacted ResourceVersion meanwhile,
	// ErrUnavailable, the context's error) or of yield, which stops the
	// reading. The list is complete only when Rest returns nil. Rest reads
	// with the context given to GetList, runs on the caller's goroutine,
	// holds nothing between calls of yield but its position (a caller that
	// never calls it leaks nothing), and may be called only once.
	Rest func(yield func(chunk []*object.Object) error) error
	// ResourceVersion is the revision the list reflects.
	ResourceVersion uint64
	// Continue, if not empty, fetches the next page.
	Continue string
	// RemainingItemCount, when known (no selector filtered the list), is the
	// number of objects after this page.
	RemainingItemCount *int64
	// Shard is the shard selector that filtered the list (nil: none did,
	// even if one was asked for, when the store's ShardedListAndWatch gate
	// is off). The server echoes it as metadata.shardInfo, which tells
	// clients the list is a shard rather than the whole collection.
	Shard *ShardSelector
}

// Chunks calls fn with the list's objects chunk by chunk, in key order:
// Items (if any), then each chunk Rest reads, which it consumes. It stops
// at fn's first error and returns it, or Rest's.
func (l *List) Chunks(fn func(chunk []*object.Object) error) error {
	if len(l.Items) > 0 {
		if err := fn(l.Items); err != nil {
			return err
		}
	}
	if l.Rest == nil {
		return nil
	}
	return l.Rest(fn)
}

// Each calls fn with every object of the list in key order, reading the
// rest of a streamed list as it goes (see Chunks).
func (l *List) Each(fn func(*object.Object) error) error {
	return l.Chunks(func(chunk []*object.Object) error {
		for _, o := range chunk {
			if err := fn(o); err != nil {
				return err
			}
		}
		return nil
	})
}

// Collect reads the rest of a streamed list into Items, for callers that
// need every object at once; the list is then complete (Rest nil). On
// error the list is left incomplete and must not be used.
func (l *List) Collect() error {
	if l.Rest == nil {
		return nil
	}
	rest := l.Rest
	l.Rest = nil
	return rest(func(chunk []*object.Object) error {
		l.Items = append(l.Items, chunk...)
		return nil
	})
}

// Watcher is a running watch.
type Watcher interface {
	// ResultChan delivers events; it is closed when the watch ends.
	ResultChan() <-chan Event
	// Stop ends the watch and releases what it holds. It is safe to call
	// more than once and concurrently with delivery.
	Stop()
}

// EventType is the type of a watch event, as on the wire.
type EventType string

// The watch event types.
const (
	EventAdded    EventType = "ADDED"
	EventModified EventType = "MODIFIED"
	EventDeleted  EventType = "DELETED"
	EventBookmark EventType = "BOOKMARK"
	EventError    EventType = "ERROR"
)

// Event is one watch event.
type Event struct {
	Type EventType
	// Object is the new state (for EventDeleted: the last state, at the
	// deletion's revision). Nil for EventBookmark and EventError.
	Object *object.Object
	// ResourceVersion is the event's revision; for Bookmark, the revision
	// the watch has reached.
	ResourceVersion uint64
	// InitialEventsEnd marks the Bookmark that ends the initial state of a
	// sendInitialEvents watch (annotation k8s.io/initial-events-end).
	InitialEventsEnd bool
	// Err is set for EventError.
	Err *Error
	// Shared, when not nil, is shared by every watcher this event was
	// delivered to: encoders keep the encoding there so that an event is
	// encoded once, not once per watcher.
	Shared *SharedEncoding
}

// SharedEncoding holds the encodings of one event, one per event type (a
// watcher may see an update as ADDED, MODIFIED or DELETED, depending on its
// selectors) and representation (a media type: JSON, protobuf; with its
// parameters for partial objects).
type SharedEncoding struct {
	mu      sync.Mutex
	encoded map[sharedKey][]byte
}

// sharedKey names one encoding of an event.
type sharedKey struct {
	t         EventType
	mediaType string
}

// Get returns the encoding of the event as type t in representation
// mediaType, calling encode the first time. The result is shared: do not modify it.
func (s *SharedEncoding) Get(t EventType, mediaType string, encode func() []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sharedKey{t, mediaType}
	if data, ok := s.encoded[key]; ok {
		return data
	}
	if s.encoded == nil {
		s.encoded = make(map[sharedKey][]byte, 1)
	}
	data := encode()
	s.encoded[key] = data
	return data
}

// CheckKey rejects keys that could address something outside the
// resource: empty, absolute or unclean ("..", ".", "//", trailing "/").
func CheckKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || path.Clean("/"+key) != "/"+key {
		return NewBadRequest("invalid key %q", key)
	}
	return nil
}

// CheckScope rejects scopes other than "" and a clean "prefix/".
func CheckScope(scope string) error {
	if scope == "" {
		return nil
	}
	if !strings.HasSuffix(scope, "/") {
		return NewBadRequest("invalid scope %q: must end with /", scope)
	}
	return CheckKey(strings.TrimSuffix(scope, "/"))
}
