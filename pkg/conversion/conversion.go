// Package conversion serves a resource in a version other than the one it
// is stored in (events.k8s.io/v1 Events are stored as core/v1 Events, as
// kube-apiserver stores them; autoscaling/v1 HorizontalPodAutoscalers
// are stored as autoscaling/v2): Store wraps the stored resource's store so
// that every object read is converted to the served version and every
// object written is converted back. Custom resources' versions are
// converted through it too, with package crd's NopConverter.
package conversion

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

// Converter converts one kind's objects between the version it is stored
// in and the version it is served in. Both take and give JSON objects
// (metadata included, resourceVersion not).
type Converter interface {
	ToStorage(served []byte) ([]byte, error)
	FromStorage(stored []byte) ([]byte, error)
}

// For returns the converter of a kind served in another version than it
// is stored in, by "group/version/Kind"; nil if there is none.
func For(group, version, kind string) Converter {
	return converters[group+"/"+version+"/"+kind]
}

// converters are the conversions of the kinds served in two versions.
var converters = map[string]Converter{
	"events.k8s.io/v1/Event":                 events{},
	"autoscaling/v1/HorizontalPodAutoscaler": hpas{},
}

// servedSchema decodes converted objects. Selectors are the stored
// resource's and are evaluated on stored objects, so converted objects
// need no selectable fields of their own.
var servedSchema = object.MustSchema()

// Store serves inner's objects converted by c.
func Store(inner storage.Interface, c Converter) storage.Interface {
	return &store{Interface: inner, c: c}
}

type store struct {
	storage.Interface
	c Converter
}

// served converts a stored object, keeping its key and resourceVersion;
// it is o itself if the conversion changed nothing.
func (s *store) served(o *object.Object) (*object.Object, error) {
	data, err := s.c.FromStorage(o.Stored())
	if err != nil {
		return nil, &storage.Error{Code: storage.ErrInternal, Key: o.Key(), Message: "converting the stored object", Err: err}
	}
	if bytes.Equal(data, o.Stored()) {
		return o, nil
	}
	served, _, err := object.Decode(servedSchema, o.Key(), data, o.ResourceVersion())
	if err != nil {
		return nil, &storage.Error{Code: storage.ErrInternal, Key: o.Key(), Message: "decoding the converted object", Err: err}
	}
	return served, nil
}

// stored converts written data to the stored version.
func (s *store) stored(key string, data []byte) ([]byte, error) {
	out, err := s.c.ToStorage(data)
	if err != nil {
		return nil, storage.NewError(storage.ErrInvalid, key, "converting the object to its stored version: %v", err)
	}
	return out, nil
}

func (s *store) servedOrError(o *object.Object, err error) (*object.Object, error) {
	if err != nil {
		return nil, err
	}
	return s.served(o)
}

func (s *store) Create(ctx context.Context, key string, data []byte) (*object.Object, error) {
	stored, err := s.stored(key, data)
	if err != nil {
		return nil, err
	}
	return s.servedOrError(s.Interface.Create(ctx, key, stored))
}

func (s *store) Get(ctx context.Context, key string, opts storage.GetOptions) (*object.Object, error) {
	return s.servedOrError(s.Interface.Get(ctx, key, opts))
}

// GetList converts the list's objects; those of a streamed list's rest
// are converted chunk by chunk as they are read.
func (s *store) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	list, err := s.Interface.GetList(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	out := *list
	if out.Items, err = s.servedAll(list.Items); err != nil {
		return nil, err
	}
	if list.Rest != nil {
		out.Rest = func(yield func([]*object.Object) error) error {
			return list.Rest(func(chunk []*object.Object) error {
				served, err := s.servedAll(chunk)
				if err != nil {
					return err
				}
				return yield(served)
			})
		}
	}
	return &out, nil
}

// servedAll converts stored objects.
func (s *store) servedAll(objs []*object.Object) ([]*object.Object, error) {
	out := make([]*object.Object, len(objs))
	for i, o := range objs {
		var err error
		if out[i], err = s.served(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GuaranteedUpdate hands tryUpdate the served form of the current object
// and stores its result converted back; the served form unchanged is the
// stored object unchanged (nothing written). cached, being of the served
// form, is not passed on.
func (s *store) GuaranteedUpdate(ctx context.Context, key string, pre *storage.Preconditions, tryUpdate storage.UpdateFunc, _ *object.Object) (*object.Object, error) {
	return s.servedOrError(s.Interface.GuaranteedUpdate(ctx, key, pre, func(cur *object.Object) ([]byte, error) {
		served, err := s.served(cur)
		if err != nil {
			return nil, err
		}
		data, err := tryUpdate(served)
		if err != nil || bytes.Equal(data, served.Stored()) {
			return cur.Stored(), err
		}
		return s.stored(key, data)
	}, nil))
}

func (s *store) Delete(ctx context.Context, key string, pre *storage.Preconditions, _ *object.Object) (*object.Object, error) {
	return s.servedOrError(s.Interface.Delete(ctx, key, pre, nil))
}

func (s *store) Watch(ctx context.Context, scope string, opts storage.ListOptions) (storage.Watcher, error) {
	inner, err := s.Interface.Watch(ctx, scope, opts)
	if err != nil {
		return nil, err
	}
	w := &watcher{inner: inner, out: make(chan storage.Event), done: make(chan struct{})}
	go w.run(s)
	return w, nil
}

// watcher converts the objects of another watch's events.
type watcher struct {
	inner storage.Watcher
	out   chan storage.Event
	done  chan struct{}
	stop  sync.Once
}

func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

func (w *watcher) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.inner.Stop()
	})
}

// run forwards the inner watch's events, converted, until it ends or the
// watch is stopped. A converted event's encoding is its own (not shared
// with the stored version's watchers); an event the conversion did not
// change keeps the shared one.
func (w *watcher) run(s *store) {
	defer close(w.out)
	for ev := range w.inner.ResultChan() {
		if ev.Object != nil {
			served, err := s.served(ev.Object)
			if err != nil {
				var serr *storage.Error
				errors.As(err, &serr)
				ev = storage.Event{Type: storage.EventError, Err: serr}
			} else if served != ev.Object {
				ev.Object, ev.Shared = served, nil
			}
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}
