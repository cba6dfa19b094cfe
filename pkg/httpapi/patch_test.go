package httpapi

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	kjson "sigs.k8s.io/json"
)

// A merge patch merged on decoded trees (mergeDecoded) gives the object
// and the unknown fields that patching the JSON text and decoding it
// strictly give; what it cannot answer as that does, it declines.
func TestMergeDecodedAsText(t *testing.T) {
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	pods := reg.Lookup("", "v1", "pods")
	stored, err := pods.Encode(decodeJSON(t, benchdata.Pod(1, 10, 10)))
	if err != nil {
		t.Fatal(err)
	}
	cur, _, err := object.Decode(pods.Schema(), "ns-001/pod-00001", stored, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		patch    string
		declined bool
		// warnOnly: declined only where unknown fields are looked for.
		warnOnly bool
	}{
		{patch: `{}`},
		{patch: `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],"podIP":"10.0.0.1"}}`},
		{patch: `{"metadata":{"labels":{"a":"b","app":null}},"spec":{"activeDeadlineSeconds":30}}`},
		{patch: `{"spec":{"containers":[{"name":"c","image":"i","bogus":1}]}}`},
		{patch: `{"status":{"bogus":{"x":null}}}`},
		{patch: `{"status":{"bogus":null}}`},
		{patch: `{"metadata":null}`},
		{patch: `{"spec":{"bogus":1,"other":2}}`, declined: true, warnOnly: true},
		{patch: `{"spec":{"priority":"high"}}`, declined: true},
		{patch: `{"spec":{"priority":3.0}}`, declined: true},
		{patch: `{"spec":{"priority":3000000000}}`, declined: true},
		{patch: `[]`, declined: true},
		{patch: `null`, declined: true},
	} {
		for _, mode := range []encoding.FieldValidation{encoding.ValidationWarn, encoding.ValidationIgnore} {
			p := &patchRequest{mediaType: encoding.MergePatchType, body: []byte(c.patch), mode: mode}
			declined := c.declined && (!c.warnOnly || mode != encoding.ValidationIgnore)
			obj, old, problems, ok := p.mergeDecoded(cur, pods)
			if !ok {
				if !declined {
					t.Errorf("%s (%s): declined", c.patch, mode)
				}
				continue
			}
			if declined {
				t.Errorf("%s (%s): not declined", c.patch, mode)
			}
			if !reflect.DeepEqual(old, decodeJSON(t, cur.JSON())) {
				t.Errorf("%s (%s): old is not cur", c.patch, mode)
			}
			patched, aerr := applyPatch(p.mediaType, cur.JSON(), p.body, pods)
			if aerr != nil {
				t.Fatal(aerr)
			}
			want, wantProblems, err := encoding.DecodeFields(patched, pods, mode)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(obj, want) {
				t.Errorf("%s (%s): merged\n%v\nfrom text\n%v", c.patch, mode, obj, want)
			}
			if fmt.Sprint(problems) != fmt.Sprint(wantProblems) {
				t.Errorf("%s (%s): problems %v, from text %v", c.patch, mode, problems, wantProblems)
			}
		}
	}
}

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
