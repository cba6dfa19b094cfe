package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	"github.com/watchcache/watchcache/pkg/strategy"
	admissionv1 "k8s.io/api/admission/v1"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

// recorder is a stage of every kind that records what it sees in trace.
type recorder struct {
	name  string
	trace *[]string
	fail  bool
}

func (r recorder) see(req *Request) error {
	*r.trace = append(*r.trace, r.name+":"+string(req.Operation))
	if r.fail {
		return errors.New(r.name + " refused")
	}
	return nil
}

type mutator struct{ recorder }

func (m mutator) Mutate(_ context.Context, req *Request) (map[string]any, error) {
	req.Object["data"].(map[string]any)[m.name] = "x"
	return req.Object, m.see(req)
}

type validator struct{ recorder }

func (v validator) Validate(_ context.Context, req *Request) error {
	if req.Operation != admissionv1.Delete && !strings.Contains(string(req.Stored), `"m2":"x"`) {
		// The validating stages see the bytes to be stored, with what the
		// mutators set.
		*v.trace = append(*v.trace, v.name+":not the stored bytes")
	}
	return v.see(req)
}

type committer struct{ recorder }

func (c committer) Committed(_ context.Context, res *resource.Resource, rv uint64) {
	*c.trace = append(*c.trace, c.name+":committed")
}

func newStore(t *testing.T) (storage.Interface, *resource.Resource) {
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	cms := reg.Lookup("", "v1", "configmaps")
	return etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: cms.EtcdPrefix("/pipeline-test/" + t.Name()), Schema: cms.Schema(),
		Resource: cms.String()}), cms
}

// encodeJSON is an Encoder that checks nothing.
func encodeJSON(trace *[]string) Encoder {
	return func(obj map[string]any) ([]byte, any, error) {
		*trace = append(*trace, "encode")
		data, err := json.Marshal(obj)
		return data, nil, err
	}
}

// TestStagesRunInOrder: a create passes the mutating stages, the encoder,
// the validating stages, storage and the committed stages in the list's
// order, each mutator's change seen by what follows; an update likewise,
// per attempt; a delete only the validating and committed stages; a dry
// run tells no committed stage; a refusal stops the write before storage.
func TestStagesRunInOrder(t *testing.T) {
	store, cms := newStore(t)
	var trace []string
	stages := func(failAt string) *Pipeline {
		r := func(name string) recorder { return recorder{name: name, trace: &trace, fail: name == failAt} }
		return New(
			Stage{"m1", mutator{r("m1")}},
			Stage{"m2", mutator{r("m2")}},
			Stage{"validation", Validation},
			Stage{"v1", validator{r("v1")}},
			Stage{"v2", validator{r("v2")}},
			Stage{"storage", Storage},
			Stage{"c1", committer{r("c1")}},
		)
	}
	p := stages("")
	if got := p.Stages(); !slices.Equal(got, []string{"m1", "m2", "validation", "v1", "v2", "storage", "c1"}) {
		t.Errorf("Stages() = %v", got)
	}
	ctx := context.Background()
	newReq := func(op admissionv1.Operation, name string, dryRun bool) *Request {
		return &Request{Resource: cms, Operation: op, Namespace: "ns", Name: name, DryRun: dryRun,
			Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns"}, "data": map[string]any{}}}
	}
	check := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(trace, want) {
			t.Errorf("%s: stages ran as %v, want %v", what, trace, want)
		}
		trace = nil
	}

	created, err := p.Create(ctx, store, "ns/a", newReq(admissionv1.Create, "a", false), encodeJSON(&trace))
	if err != nil {
		t.Fatal(err)
	}
	check("create", "m1:CREATE", "m2:CREATE", "encode", "v1:CREATE", "v2:CREATE", "c1:committed")
	if !strings.Contains(string(created.JSON()), `"m1":"x","m2":"x"`) {
		t.Errorf("stored %s, want the mutators' changes", created.JSON())
	}

	if _, err := p.Update(ctx, store, "ns/a", func(cur *object.Object) (*Request, Encoder, error) {
		return newReq(admissionv1.Update, "a", false), encodeJSON(&trace), nil
	}); err != nil {
		t.Fatal(err)
	}
	check("update", "m1:UPDATE", "m2:UPDATE", "encode", "v1:UPDATE", "v2:UPDATE", "c1:committed")

	if _, err := p.Create(ctx, storage.DryRun(store), "ns/b", newReq(admissionv1.Create, "b", true), encodeJSON(&trace)); err != nil {
		t.Fatal(err)
	}
	check("dry run", "m1:CREATE", "m2:CREATE", "encode", "v1:CREATE", "v2:CREATE")

	_, err = stages("v1").Create(ctx, store, "ns/c", newReq(admissionv1.Create, "c", false), encodeJSON(&trace))
	if err == nil || err.Error() != "v1 refused" {
		t.Errorf("refused create: err %v", err)
	}
	check("refused create", "m1:CREATE", "m2:CREATE", "encode", "v1:CREATE")
	if _, err := store.Get(ctx, "ns/c", storage.GetOptions{}); storage.CodeOf(err) != storage.ErrNotFound {
		t.Errorf("refused create stored something: %v", err)
	}

	if _, err := stages("v2").Delete(ctx, store, "ns/a", newReq(admissionv1.Delete, "a", false), nil, strategy.Deletion{Now: time.Now()}); err == nil {
		t.Error("refused delete succeeded")
	}
	check("refused delete", "v1:DELETE", "v2:DELETE")
	if _, err := p.Delete(ctx, store, "ns/a", newReq(admissionv1.Delete, "a", false), nil, strategy.Deletion{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	check("delete", "v1:DELETE", "v2:DELETE", "c1:committed")
}

// TestDeleteCollectionCommitsOnlyDeletions: a DeleteCollection that
// deletes objects tells the committed stages the revision of the last
// deletion; one that finds nothing to delete tells them nothing (no
// revision of the resource to wait for).
func TestDeleteCollectionCommitsOnlyDeletions(t *testing.T) {
	store, cms := newStore(t)
	var trace []string
	var revs []uint64
	p := New(Stage{"validation", Validation}, Stage{"storage", Storage}, Stage{"c", revRecorder{&revs}})
	ctx := context.Background()
	req := &Request{Resource: cms, Operation: admissionv1.Delete, Namespace: "ns"}
	deleted, err := p.DeleteCollection(ctx, store, "ns/", storage.ListOptions{}, req, strategy.Deletion{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted.Items) != 0 || len(revs) != 0 {
		t.Errorf("empty collection: deleted %d, committed revisions %v, want none", len(deleted.Items), revs)
	}
	for _, name := range []string{"a", "b"} {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns"}}
		if _, err := p.Create(ctx, store, "ns/"+name, &Request{Resource: cms, Operation: admissionv1.Create, Namespace: "ns", Name: name, Object: obj}, encodeJSON(&trace)); err != nil {
			t.Fatal(err)
		}
	}
	revs = nil
	deleted, err = p.DeleteCollection(ctx, store, "ns/", storage.ListOptions{}, req, strategy.Deletion{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted.Items) != 2 || !slices.Equal(revs, []uint64{deleted.Items[1].ResourceVersion()}) {
		t.Errorf("deleted %d, committed revisions %v, want 2 and the last deletion's", len(deleted.Items), revs)
	}
}

// revRecorder is a committed stage that records the revisions it is told.
type revRecorder struct{ revs *[]uint64 }

func (r revRecorder) Committed(_ context.Context, _ *resource.Resource, rv uint64) {
	*r.revs = append(*r.revs, rv)
}

// TestStagesOutOfPlace: New refuses a list whose stages are not in the
// pipeline's phases' order.
func TestStagesOutOfPlace(t *testing.T) {
	var trace []string
	m, v, c := mutator{recorder{"m", &trace, false}}, validator{recorder{"v", &trace, false}}, committer{recorder{"c", &trace, false}}
	for name, stages := range map[string][]Stage{
		"validating before validation": {{"v", v}, {"validation", Validation}, {"storage", Storage}},
		"mutating after validation":    {{"validation", Validation}, {"m", m}, {"storage", Storage}},
		"committed before storage":     {{"validation", Validation}, {"c", c}, {"storage", Storage}},
		"no storage":                   {{"validation", Validation}, {"v", v}},
		"storage twice":                {{"validation", Validation}, {"storage", Storage}, {"storage", Storage}},
		"not a stage":                  {{"validation", Validation}, {"x", 42}, {"storage", Storage}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not refuse it", name)
				}
			}()
			New(stages...)
		}()
	}
}
