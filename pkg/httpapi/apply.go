// Server-side apply: a PATCH of application/apply-patch+yaml merged by the
// field manager, creating the object if it does not exist, and the YAML
// duplicate-field problems of an apply patch.

package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/defaults"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/storage"
	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// serverSideApply answers a PATCH of application/apply-patch+yaml: the
// applied configuration is merged into the object by field ownership
// (409 naming the fields and their managers when another manager owns a
// field it changes, unless force), then written as any update; an object
// that does not exist is created from it.
func (s *Server) serverSideApply(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	body, aerr := encoding.ReadBody(r)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	mode, aerr := encoding.ParseFieldValidation(r)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	patchJSON, err := yaml.YAMLToJSON(body)
	var patch map[string]any
	if err == nil {
		err = kjson.UnmarshalCaseSensitivePreserveInts(patchJSON, &patch)
	}
	if err != nil || patch == nil {
		apistatus.Write(w, apistatus.BadRequest("the apply patch is not a YAML or JSON object: %v", err), req.res.Subject(req.name))
		return
	}
	if aerr := checkTypeMeta(patch, req.res); aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(req.name))
		return
	}
	fm, err := s.fieldManager(req)
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	// Only duplicate fields are left to find once the apply succeeded: it
	// fails on any field the kind's schema does not declare.
	var duplicates error
	if mode != encoding.ValidationIgnore {
		duplicates = yaml.UnmarshalStrict(body, &map[string]any{})
	}
	warn := false
	apply := func(live map[string]any) (map[string]any, error) {
		out, err := fm.Apply(&unstructured.Unstructured{Object: live}, &unstructured.Unstructured{Object: jsontree.DeepCopy(patch).(map[string]any)}, req.manager, req.force)
		if err != nil {
			return nil, apistatus.Unknown(err)
		}
		if duplicates != nil && mode == encoding.ValidationStrict {
			return nil, apistatus.BadRequest("error strict decoding patch: %v", duplicates)
		}
		warn = duplicates != nil
		obj := out.(*unstructured.Unstructured).Object
		// As kube-apiserver defaults the result of an apply and prunes it
		// (not reporting what it prunes).
		if req.res.CustomSchema != nil {
			req.res.CustomSchema.Prune(obj)
			req.res.CustomSchema.Default(obj)
		}
		return obj, nil
	}
	applied := *req
	applied.applied = true
	updated, err := s.pipeline.Update(r.Context(), store, req.key(), func(cur *object.Object) (*pipeline.Request, pipeline.Encoder, error) {
		var live map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cur.JSON(), &live); err != nil {
			return nil, nil, err
		}
		defaults.Apply(req.res.Group, req.res.Kind, live)
		obj, err := apply(live)
		if err != nil {
			return nil, nil, err
		}
		return s.prepareUpdate(r.Context(), obj, nil, &applied, cur)
	})
	if storage.CodeOf(err) == storage.ErrNotFound && req.subresource == "" {
		live := &unstructured.Unstructured{Object: map[string]any{}}
		live.SetGroupVersionKind(req.res.GroupVersionKind())
		obj, err := apply(live.Object)
		if err != nil {
			apistatus.Write(w, err, req.res.Subject(req.name))
			return
		}
		data, _ := json.Marshal(obj)
		if warn {
			encoding.AddWarnings(w.Header(), yamlProblems(duplicates))
		}
		applied.verb = "create"
		s.createObject(w, r, &applied, store, data, encoding.ValidationIgnore)
		return
	}
	if warn {
		encoding.AddWarnings(w.Header(), yamlProblems(duplicates))
	}
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.writeObject(w, req, http.StatusOK, updated)
}

// yamlProblems are the duplicate fields of an apply patch that YAML's
// strict decoding reported in err: each line of its report, as
// kube-apiserver warns of them.
func yamlProblems(err error) []error {
	var typeErr *yamlv2.TypeError
	if !errors.As(err, &typeErr) {
		return []error{err}
	}
	out := make([]error, len(typeErr.Errors))
	for i, line := range typeErr.Errors {
		out[i] = errors.New(line)
	}
	return out
}
