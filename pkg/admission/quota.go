// The ResourceQuota plugin: a write that uses what a quota of its namespace
// limits is checked against the quota and its usage reserved in the quota's
// status.used before it is stored.

package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/quota"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// quotaRetries is how many times a batch whose reservation lost a
// conflict is checked again against the quotas as they then are
// (kube-apiserver's 3).
const quotaRetries = 3

// quotaTimeout bounds a write's wait for its quota check (kube-apiserver's
// 10 s, then a 500).
const quotaTimeout = 10 * time.Second

// Quota is kube-apiserver's ResourceQuota admission plugin, the last
// validating stage before storage: a create (or an update that may use
// more: a Service's type, a claim's size) in a namespace is checked against
// every quota there that counts it (package quota) and its usage is
// reserved by writing the quotas' status.used with a resourceVersion
// precondition. That optimistic write is the lock across replicas: two
// servers reserving from one quota at once conflict on its revision, and
// the loser checks again against the winner's usage, so the quota is never
// overspent. Within a server, the writes waiting on one namespace are
// checked together and reserved in one write per quota, as
// kube-apiserver's quota evaluator batches them. A dry run is checked and
// reserves nothing. Usage reserved for a write that then fails (a
// conflict of the object's own, a later refusal) stays until the quota
// controller recomputes it, as in kube-apiserver.
//
// Deliberate difference: the quotas are read consistently for each batch
// (kube-apiserver reads its informer, then its own last writes), and a
// namespace that the watch cache shows without quotas is not looked up
// again (kube-apiserver looks one up live only before its informer
// synced).
type Quota struct {
	Registry *resource.Registry

	mu      sync.Mutex
	pending map[string][]*quotaWaiter // by namespace, the writes waiting for the next batch
}

// quotaWaiter is one write waiting for its namespace's batch.
type quotaWaiter struct {
	write  quota.Write
	dryRun bool
	refuse func(error) error // the 403 of a refusal, naming the object
	result error             // decided once set, or done
	done   bool
	finish chan struct{}
}

// Validate checks a create or update against its namespace's quotas and
// reserves its usage.
func (s *Quota) Validate(ctx context.Context, req *pipeline.Request) error {
	if req.Namespace == "" || req.Operation == admissionv1.Delete {
		return nil
	}
	e := quota.For(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Plural})
	if e == nil {
		return nil
	}
	if has, err := s.hasQuotas(ctx, req.Namespace); err != nil || !has {
		return err
	}
	obj, err := e.FromTree(req.Object)
	if err != nil {
		return err
	}
	var old quota.Object
	op := admissionv1.Create
	if req.Operation == admissionv1.Update && req.OldObject != nil {
		if old, err = e.FromTree(req.OldObject); err != nil {
			return err
		}
		op = admissionv1.Update
	}
	update := op == admissionv1.Update
	if !e.Handles(string(op), req.Subresource, obj, old) {
		return nil
	}
	w := &quotaWaiter{write: quota.Write{Evaluator: e, Obj: obj, Old: old, Update: update}, dryRun: req.DryRun,
		refuse: func(err error) error { return forbidden(req, err) }, finish: make(chan struct{})}
	s.enqueue(req.Namespace, w)
	select {
	case <-w.finish:
		return w.result
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(quotaTimeout):
		return apierrors.NewInternalError(errors.New("resource quota evaluation timed out"))
	}
}

// enqueue adds w to its namespace's next batch, starting the namespace's
// worker if none runs.
func (s *Quota) enqueue(ns string, w *quotaWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string][]*quotaWaiter{}
	}
	waiting, running := s.pending[ns]
	s.pending[ns] = append(waiting, w)
	if !running {
		go s.work(ns)
	}
}

// work checks ns's batches one after the other until none waits. A
// namespace has a worker while its pending entry exists.
func (s *Quota) work(ns string) {
	for {
		s.mu.Lock()
		batch := s.pending[ns]
		if len(batch) == 0 {
			delete(s.pending, ns)
			s.mu.Unlock()
			return
		}
		s.pending[ns] = batch[:0:0]
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), quotaTimeout)
		s.check(ctx, ns, batch)
		cancel()
		for _, w := range batch {
			close(w.finish)
		}
	}
}

// check decides a batch: each write is checked against the quotas as the
// writes before it left them, then each quota changed is written once; the
// quotas whose write lost a conflict are read again and the writes not yet
// decided checked against them only (their reservations in the others are
// made).
func (s *Quota) check(ctx context.Context, ns string, batch []*quotaWaiter) {
	decide := func(err error) {
		for _, w := range batch {
			if !w.done {
				w.result, w.done = err, true
			}
		}
	}
	quotas, err := s.quotas(ctx, ns)
	if err != nil {
		decide(err)
		return
	}
	now := time.Now()
	for attempt := 0; ; attempt++ {
		before := quotas
		for _, w := range batch {
			if w.done {
				continue
			}
			next, err := quota.Check(quotas, w.write, now)
			var refusal *quota.Refusal
			switch {
			case errors.As(err, &refusal):
				w.result, w.done = w.refuse(refusal), true
			case err != nil:
				w.result, w.done = err, true
			case w.dryRun || !changed(quotas, next):
				w.done = true
			default:
				quotas = next
			}
		}
		var failed map[string]bool
		var lastErr error
		for i := range quotas {
			if quota.Equal(before[i].Status.Used, quotas[i].Status.Used) {
				continue
			}
			if err := s.reserve(ctx, &quotas[i]); err != nil {
				if failed == nil {
					failed = map[string]bool{}
				}
				failed[quotas[i].Name], lastErr = true, err
			}
		}
		if len(failed) == 0 {
			decide(nil)
			return
		}
		if attempt == quotaRetries {
			decide(lastErr)
			return
		}
		current, err := s.quotas(ctx, ns)
		if err != nil {
			decide(lastErr)
			return
		}
		quotas = quotas[:0:0]
		for _, q := range current {
			if failed[q.Name] {
				quotas = append(quotas, q)
			}
		}
	}
}

// changed says whether next (Check's result on quotas) reserves anything.
func changed(quotas, next []corev1.ResourceQuota) bool {
	for i := range quotas {
		if !quota.Equal(quotas[i].Status.Used, next[i].Status.Used) {
			return true
		}
	}
	return false
}

// The reads of quotas give a limit, so that a watch cache that is
// initializing sends them to etcd instead of refusing them (429): every
// write in a namespace waits on them.
const quotaPage = 500

// hasQuotas says whether the watch cache has ResourceQuotas in ns.
func (s *Quota) hasQuotas(ctx context.Context, ns string) (bool, error) {
	res := s.Registry.Lookup("", "v1", "resourcequotas")
	store := s.Registry.Store(res)
	if store == nil {
		return false, nil
	}
	list, err := store.GetList(ctx, res.Scope(ns), storage.ListOptions{ResourceVersion: "0", Limit: 1})
	if err != nil {
		return false, err
	}
	return len(list.Items) > 0, nil
}

// quotas reads ns's ResourceQuotas consistently, each with its
// resourceVersion.
func (s *Quota) quotas(ctx context.Context, ns string) ([]corev1.ResourceQuota, error) {
	res := s.Registry.Lookup("", "v1", "resourcequotas")
	store := s.Registry.Store(res)
	var out []corev1.ResourceQuota
	opts := storage.ListOptions{Limit: quotaPage}
	for store != nil {
		list, err := store.GetList(ctx, res.Scope(ns), opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			var q corev1.ResourceQuota
			if err := json.Unmarshal(o.JSON(), &q); err != nil {
				return nil, err
			}
			q.ResourceVersion = storage.FormatResourceVersion(o.ResourceVersion())
			out = append(out, q)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	return out, nil
}

// reserve writes q's status.used if q is unchanged since it was read (its
// resourceVersion): a 409 Conflict as kube-apiserver's status update
// gives if not.
func (s *Quota) reserve(ctx context.Context, q *corev1.ResourceQuota) error {
	res := s.Registry.Lookup("", "v1", "resourcequotas")
	used := map[string]any{}
	for n, v := range q.Status.Used {
		used[string(n)] = v.String()
	}
	_, err := s.Registry.Store(res).GuaranteedUpdate(ctx, res.Key(q.Namespace, q.Name), &storage.Preconditions{ResourceVersion: &q.ResourceVersion},
		func(cur *object.Object) ([]byte, error) {
			var obj map[string]any
			if err := decodeJSON(cur.JSON(), &obj); err != nil {
				return nil, err
			}
			status, _ := obj["status"].(map[string]any)
			if status == nil {
				status = map[string]any{}
				obj["status"] = status
			}
			status["used"] = used
			return res.Encode(obj)
		}, nil)
	if storage.IsConflict(err) {
		return apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, q.Name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return err
}
