// The options of Get, GetList and Watch as on the wire, preconditions of
// updates and deletes, and the check of selectors and scope.

package storage

import (
	"github.com/watchcache/watchcache/pkg/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// GetOptions are the options of Get.
type GetOptions struct {
	// ResourceVersion: "" most recent, "0" any, "N" not older than N.
	ResourceVersion string
}

// ListOptions are the options of GetList and Watch, as on the wire.
type ListOptions struct {
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	Limit                int64
	Continue             string
	// Labels and Fields select objects; nil selects everything.
	Labels labels.Selector
	Fields fields.Selector
	// Shard, if not nil, selects the objects of a shard (shardSelector,
	// KEP-5866): like the other selectors it filters lists, pages and
	// watches. A store whose ShardedListAndWatch gate is off ignores it
	// (and its lists then carry no List.Shard), as kube-apiserver does.
	Shard *ShardSelector
	// AllowWatchBookmarks asks a watch for BOOKMARK events.
	AllowWatchBookmarks bool
	// SendInitialEvents asks a watch for the current state first, ended by a
	// BOOKMARK marked k8s.io/initial-events-end (nil: unset).
	SendInitialEvents *bool
	// Stream (not on the wire) lets GetList return a list read from etcd
	// without a limit before it has read it all: the first chunk in Items,
	// the rest in List.Rest, which the caller must then call to see every
	// object, so that a list of any size costs bounded memory when its
	// objects are written out as they come. Lists served from the watch
	// cache's memory, and paged lists, are complete anyway. Without Stream
	// every list is complete. Watch ignores it.
	Stream bool
	// KeyOnlyDeletes (not on the wire; Watch only) is for a watcher that
	// holds the last state of every object it watches: the watch cache's
	// reflector, which has applied every event since a consistent list. Its
	// DELETED events may then carry only the key and the deletion's
	// revision (a record from object.KeyOnly, which must not be served),
	// and the watcher fills in the last state it holds. The etcd3 store
	// then does not ask etcd for previous values, which etcd reads from its
	// database for every event. Ignored by watches that filter (label,
	// field or shard selectors: they need an object's previous state to
	// tell when it leaves their selection) and by stores that hold
	// previous states anyway (the watch cache). A watch whose events reach
	// clients must not set it.
	KeyOnlyDeletes bool
}

// Preconditions must hold for an update or delete to happen.
type Preconditions struct {
	UID             *string
	ResourceVersion *string
}

// Check returns an ErrConflict naming the first precondition obj fails.
func (p *Preconditions) Check(key string, obj *object.Object) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != obj.UID() {
		return NewError(ErrConflict, key, "Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, obj.UID())
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != FormatResourceVersion(obj.ResourceVersion()) {
		return NewError(ErrConflict, key, "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %d", *p.ResourceVersion, obj.ResourceVersion())
	}
	return nil
}

// Matches reports whether obj passes the options' selectors.
func (o *ListOptions) Matches(obj *object.Object) bool {
	if o.Labels != nil && !o.Labels.Empty() && !o.Labels.Matches(obj.Labels()) {
		return false
	}
	if o.Fields != nil && !o.Fields.Empty() && !o.Fields.Matches(obj.Fields()) {
		return false
	}
	return o.Shard == nil || o.Shard.Matches(obj)
}

// Filtered reports whether the selectors can drop objects (so counts of
// keys are not counts of results).
func (o *ListOptions) Filtered() bool {
	return (o.Labels != nil && !o.Labels.Empty()) || (o.Fields != nil && !o.Fields.Empty()) || o.Shard != nil
}

// CheckScopeAndSelectors checks what a list or watch reads: a valid scope
// and selectable fields.
func (o *ListOptions) CheckScopeAndSelectors(scope string, schema *object.Schema) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	return o.ValidateSelectors(schema)
}

// ValidateSelectors rejects field selectors on fields the resource does not
// make selectable, as kube-apiserver does ("field label not supported").
func (o *ListOptions) ValidateSelectors(schema *object.Schema) error {
	if o.Fields == nil {
		return nil
	}
	for _, r := range o.Fields.Requirements() {
		if !schema.Selectable(r.Field) {
			return NewBadRequest("field label not supported: %s", r.Field)
		}
	}
	return nil
}
