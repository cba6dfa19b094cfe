// Package pipeline is the write pipeline: the named stages a create, an
// update (a PUT, a patch, an apply, a subresource's write) or a delete
// passes through between its handler and storage, in one ordered list
// that pkg/app builds (pipeline.go there). It corresponds to
// kube-apiserver's admission chain together with the registry's
// validation step between its mutating and validating phases:
//
//	mutating stages → Validation → validating stages → Storage → committed stages
//
// The handlers prepare a write (decode, metadata, defaults, the kind's
// strategy, managedFields) and hand it to the pipeline, which runs the
// stages in order, stores the result and tells the committed stages. A
// stage is an interface value: adding one (quota, an allocator, a seat
// release) is one line in the list.
package pipeline

import (
	"context"
	"fmt"

	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	admissionv1 "k8s.io/api/admission/v1"
	kjson "sigs.k8s.io/json"
)

// Mutating is a stage of the mutating phase: it returns the object of a
// create or update as it changes it (req.Object, changed in place or
// not), or refuses the write.
type Mutating interface {
	Mutate(ctx context.Context, req *Request) (map[string]any, error)
}

// Validating is a stage of the validating phase: it refuses a write or
// lets it through, changing nothing. It sees creates and updates with the
// object as it will be stored (req.Object, and req.Stored, its bytes), and
// deletes with only req.OldObject.
type Validating interface {
	Validate(ctx context.Context, req *Request) error
}

// Committed is a stage after storage: it is told of every write that
// succeeded (not of dry runs) before the response is written, with the
// write's resourceVersion.
type Committed interface {
	Committed(ctx context.Context, res *resource.Resource, rv uint64)
}

// Written is a stage after storage, like Committed, told of the object
// each write left: the created or updated object, the deleted one (marked
// for deletion when finalizers hold it), each object a deletecollection
// deleted. Releasing what a deleted object held (a Service's IPs) is one.
type Written interface {
	Written(ctx context.Context, req *Request, obj *object.Object)
}

// marker is a step the pipeline does itself; it places it in the list.
type marker string

// Validation is where the object is validated by its kind's rules and
// encoded as it will be stored (the handler's Encoder), between the
// mutating and the validating phases.
const Validation marker = "validation"

// Storage is where the write reaches storage, between the validating and
// the committed stages.
const Storage marker = "storage"

// Stage is one named stage of the pipeline: Step is a Mutating,
// Validating, Committed or Written, or one of the markers Validation and Storage.
type Stage struct {
	Name string
	Step any
}

// Encoder validates a write's object by its kind's rules and encodes it
// as stored: a 422 Invalid when it fails. With the bytes it returns the
// value they were marshalled from, if any (resource.Resource.EncodeTyped's
// Go object; nil otherwise), which the store encodes for etcd without
// decoding the bytes again (storage.Built).
type Encoder func(obj map[string]any) (data []byte, built any, err error)

// Pipeline runs its stages on writes. It is immutable and safe for
// concurrent use.
type Pipeline struct {
	mutating   []Mutating
	validating []Validating
	committed  []Committed
	written    []Written
	names      []string
}

// New builds the pipeline of stages, in order. The order must be
// mutating stages, Validation, validating stages, Storage, committed
// stages; anything else is a programming error and panics.
func New(stages ...Stage) *Pipeline {
	p := &Pipeline{}
	phase := 0 // 0 mutating, 1 validating, 2 committed
	for _, s := range stages {
		p.names = append(p.names, s.Name)
		ok := true
		switch step := s.Step.(type) {
		case marker:
			ok = step == Validation && phase == 0 || step == Storage && phase == 1
			phase++
		case Mutating:
			ok = phase == 0
			p.mutating = append(p.mutating, step)
		case Validating:
			ok = phase == 1
			p.validating = append(p.validating, step)
		case Committed:
			ok = phase == 2
			p.committed = append(p.committed, step)
		case Written:
			ok = phase == 2
			p.written = append(p.written, step)
		default:
			ok = false
		}
		if !ok {
			panic(fmt.Sprintf("pipeline: stage %q (%T) out of place", s.Name, s.Step))
		}
	}
	if phase != 2 {
		panic("pipeline: the stages must include Validation and Storage")
	}
	return p
}

// Stages are the names of the stages, in order.
func (p *Pipeline) Stages() []string { return p.names }

// admit runs the stages before storage on a create or update: the
// mutating stages, then encode (Validation), then the validating stages
// on what encode returned; it returns the bytes to store, and sets built
// to what they were marshalled from.
func (p *Pipeline) admit(ctx context.Context, req *Request, encode Encoder, built *storage.Built) ([]byte, error) {
	for _, m := range p.mutating {
		obj, err := m.Mutate(ctx, req)
		if err != nil {
			return nil, err
		}
		req.Object = obj
	}
	data, value, err := encode(req.Object)
	if err != nil {
		return nil, err
	}
	built.Set(data, value)
	req.Stored = data
	for _, v := range p.validating {
		if err := v.Validate(ctx, req); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// commit tells the committed stages of a write of req at rv that left
// objs (none of a dry run, which wrote nothing).
func (p *Pipeline) commit(ctx context.Context, req *Request, rv uint64, objs ...*object.Object) {
	if req.DryRun {
		return
	}
	for _, c := range p.committed {
		c.Committed(ctx, req.Resource, rv)
	}
	for _, w := range p.written {
		for _, o := range objs {
			w.Written(ctx, req, o)
		}
	}
}

// Create admits req, a create, stores it under key in store and tells the
// committed stages. A dry run's store (dryRun=All) stores nothing.
func (p *Pipeline) Create(ctx context.Context, store storage.Interface, key string, req *Request, encode Encoder) (*object.Object, error) {
	ctx, built := storage.WithBuilt(ctx)
	data, err := p.admit(ctx, req, encode, built)
	if err != nil {
		req.abort(ctx)
		return nil, err
	}
	created, err := store.Create(ctx, key, data)
	if err != nil {
		req.abort(ctx)
		return nil, err
	}
	p.commit(ctx, req, created.ResourceVersion(), created)
	return created, nil
}

// Update updates the object at key in store: next makes the write from
// the current object (each attempt of the optimistic update its own, on
// the object as it then is), which is admitted and stored. An update that
// takes the last finalizer from an object being deleted deletes it
// (package deletion). The committed stages are told of the result; what
// the stages took for an attempt that was not stored is given back
// (Request.OnAbort).
func (p *Pipeline) Update(ctx context.Context, store storage.Interface, key string,
	next func(cur *object.Object) (*Request, Encoder, error)) (*object.Object, error) {
	var last *Request
	ctx, built := storage.WithBuilt(ctx)
	updated, err := store.GuaranteedUpdate(ctx, key, nil, func(cur *object.Object) ([]byte, error) {
		if last != nil { // the previous attempt was not stored
			last.abort(ctx)
		}
		req, encode, err := next(cur)
		if err != nil {
			return nil, err
		}
		last = req
		return p.admit(ctx, req, encode, built)
	}, nil)
	if err != nil {
		if last != nil {
			last.abort(ctx)
		}
		return nil, err
	}
	if updated, err = deletion.FinishUpdate(ctx, last.Resource, store, updated); err != nil {
		return nil, err
	}
	p.commit(ctx, last, updated.ResourceVersion(), updated)
	return updated, nil
}

// Delete deletes the object at key in store as package deletion does
// (at once, or marked while finalizers or a grace period hold it), after
// the validating stages have seen the delete with the object's current
// state (a consistent read: an object created just before must be seen);
// a missing object is left to the delete's own NotFound.
func (p *Pipeline) Delete(ctx context.Context, store storage.Interface, key string, req *Request,
	pre *storage.Preconditions, d strategy.Deletion) (*object.Object, error) {
	if cur, err := store.Get(ctx, key, storage.GetOptions{}); err == nil {
		var old map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &old); err != nil {
			return nil, err
		}
		req.Operation, req.Object, req.OldObject = admissionv1.Delete, nil, old
		for _, v := range p.validating {
			if err := v.Validate(ctx, req); err != nil {
				return nil, err
			}
		}
	}
	deleted, err := deletion.Delete(ctx, req.Resource, store, key, pre, d, nil)
	if err != nil {
		return nil, err
	}
	p.commit(ctx, req, deleted.ResourceVersion(), deleted)
	return deleted, nil
}

// DeleteCollection deletes the objects of scope that opts select, as
// package deletion does, and tells the committed stages. Unlike
// kube-apiserver's, it asks no validating stage about each object.
func (p *Pipeline) DeleteCollection(ctx context.Context, store storage.Interface, scope string, opts storage.ListOptions,
	req *Request, d strategy.Deletion) (*storage.List, error) {
	deleted, err := deletion.DeleteAll(ctx, req.Resource, store, scope, opts, d)
	if err != nil {
		return nil, err
	}
	// Nothing deleted is nothing written: the list's revision is no
	// change of the resource, which a committed stage waiting for it (the
	// RBAC authorizer's catch-up) would wait for until the request ended,
	// as kube-controller-manager's namespace deleter found for an empty
	// namespace's roles.
	if len(deleted.Items) > 0 {
		p.commit(ctx, req, deleted.ResourceVersion, deleted.Items...)
	}
	return deleted, nil
}
