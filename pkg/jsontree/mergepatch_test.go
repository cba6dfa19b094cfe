package jsontree

import (
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	kjson "sigs.k8s.io/json"
)

// MergePatch gives what json-patch's MergePatch gives on the same JSON
// text, quirks included.
func TestMergePatchAsJSONPatch(t *testing.T) {
	doc := `{"a":1,"b":{"c":"x","d":[1,2],"e":{"f":null,"g":2}},"h":null,"i":"s","j":[{"k":null}],"big":12345678901234567890,"f":1.5}`
	for _, patch := range []string{
		`{}`,
		`{"a":null}`,
		`{"a":2,"z":{"y":null,"x":{"w":null,"v":1}}}`,
		`{"b":{"c":null,"d":[3,null,{"n":null,"m":1}],"e":{"g":null,"new":{"q":null}}}}`,
		`{"b":[1,{"p":null}]}`,
		`{"b":"replaced"}`,
		`{"h":{"p":null,"q":1}}`,
		`{"i":{"p":null,"q":[{"r":null}]}}`,
		`{"j":[{"k":null,"l":2}]}`,
		`{"missing":null}`,
		`{"big":1,"f":2.25,"n":-0.5,"e":1e3}`,
		`{"b":{"e":{"f":{"deep":null,"keep":true}}}}`,
	} {
		want, err := jsonpatch.MergePatch([]byte(doc), []byte(patch))
		if err != nil {
			t.Fatal(err)
		}
		var wantTree, got, p map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(want, &wantTree); err != nil {
			t.Fatal(err)
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(doc), &got); err != nil {
			t.Fatal(err)
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(patch), &p); err != nil {
			t.Fatal(err)
		}
		MergePatch(got, p)
		if !reflect.DeepEqual(got, wantTree) {
			t.Errorf("patch %s:\n got %v\nwant %v", patch, got, wantTree)
		}
	}
}
