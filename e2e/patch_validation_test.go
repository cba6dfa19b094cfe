package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The answers below are those of a kube-apiserver 1.37 (the reference
// server) to the same requests, the object's identity written as NS,
// UID, RV, CREATED and TIME (its first managedFields entry's time).

// pvPatch sends a patch of media type mt to path with the query query and
// returns the answer's status code, Warning headers and body.
func pvPatch(t *testing.T, path, query, mt, body string) (int, []string, []byte) {
	t.Helper()
	resp, data := htDo(t, "PATCH", path+"?"+query, mt, []byte(body))
	return resp.StatusCode, resp.Header.Values("Warning"), data
}

// pvFailure checks that an answer is the failure Status want: its code,
// reason and message, and, for a 422 about a patch, kube-apiserver's
// single cause on the field "patch" and no name or kind.
func pvFailure(t *testing.T, what string, code int, data []byte, want metav1.Status) {
	t.Helper()
	var got metav1.Status
	if err := json.Unmarshal(data, &got); err != nil || code != int(want.Code) || got.Code != want.Code || got.Reason != want.Reason || got.Message != want.Message {
		t.Errorf("%s: %d %s\nwant %d %q %q", what, code, data, want.Code, want.Reason, want.Message)
		return
	}
	detail, found := strings.CutPrefix(want.Message, ` "" is invalid: patch: `)
	if !found {
		return
	}
	wantDetails := metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: detail, Field: "patch"}}}
	if d := got.Details; d == nil || d.Name != "" || d.Kind != "" || d.Group != "" || !slices.Equal(d.Causes, wantDetails.Causes) {
		t.Errorf("%s: details %+v, want %+v", what, got.Details, wantDetails)
	}
}

// pvInvalidPatch is kube-apiserver's 422 about a patch whose result shown
// as shown failed to decode with detail.
func pvInvalidPatch(shown, detail string) metav1.Status {
	return metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: ` "" is invalid: patch: Invalid value: ` + strconv.Quote(shown) + `: ` + detail}
}

// pvShown checks that an answer is kube-apiserver's 422 about a patch
// that failed to decode with detail, the patched object it shows starting
// with parts[0] and holding the other parts in order.
func pvShown(t *testing.T, what string, code int, data []byte, detail string, parts ...string) {
	t.Helper()
	var got metav1.Status
	json.Unmarshal(data, &got)
	quoted, ok := strings.CutPrefix(got.Message, ` "" is invalid: patch: Invalid value: `)
	if ok {
		quoted, ok = strings.CutSuffix(quoted, ": "+detail)
	}
	shown, err := strconv.Unquote(quoted)
	ok = ok && err == nil && strings.HasPrefix(shown, parts[0])
	for _, part := range parts[1:] {
		_, shown, ok = strings.Cut(shown, part)
		if !ok {
			break
		}
	}
	if code != http.StatusUnprocessableEntity || !ok {
		t.Errorf("%s: %d %s\nwant 422 showing %s, then: %s", what, code, data, strings.Join(parts, " ... "), detail)
	}
}

// pvIdentity replaces the placeholders of a recorded text with the
// identity of the object at path.
func pvIdentity(t *testing.T, path, text string) string {
	t.Helper()
	var obj struct {
		Metadata struct {
			Namespace, UID, ResourceVersion, CreationTimestamp string
			ManagedFields                                      []struct{ Time string }
		}
	}
	htJSON(t, "GET", path, nil, http.StatusOK, &obj)
	m := obj.Metadata
	if len(m.ManagedFields) == 0 {
		t.Fatalf("%s has no managedFields", path)
	}
	return strings.NewReplacer("NS", m.Namespace, "UID", m.UID, "RV", m.ResourceVersion, "CREATED", m.CreationTimestamp,
		"TIME", m.ManagedFields[0].Time).Replace(text)
}

// TestPatchFieldValidation: a merge, JSON or strategic merge patch whose
// result has unknown or duplicate fields is refused under
// fieldValidation=Strict with kube-apiserver's 422 about the patch (the
// patched object, or a strategic merge patch itself, shown) and warned
// about under Warn; a result that does not decode into the kind's type is
// the same 422 whatever the mode. Server-side apply fails on any field
// the kind does not declare (500, as kube-apiserver) and reports only
// duplicate fields (400 under Strict, one warning per line under Warn).
func TestPatchFieldValidation(t *testing.T) {
	ns := htNamespace(t, "patchvalidation")
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	htJSON(t, "POST", cms+"?fieldManager=test", htConfigMapBody("cm", map[string]string{"a": "1"}), http.StatusCreated, nil)
	cm := cms + "/cm"
	// The ConfigMap as kube-apiserver encodes it, its fields in the
	// order of its Go type, under the top-level fields a patch sorts.
	cmMeta := pvIdentity(t, cm, `"metadata":{"name":"cm","namespace":"NS","uid":"UID","resourceVersion":"RV","creationTimestamp":"CREATED",`+
		`"managedFields":[{"manager":"test","operation":"Update","apiVersion":"v1","time":"TIME","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]}`)

	for _, c := range []struct {
		name, mt, body string
		want           metav1.Status
	}{
		{"a merge patch", "application/merge-patch+json", `{"bogus":1,"data":{"b":"2"}}`,
			pvInvalidPatch(`{"apiVersion":"v1","bogus":1,"data":{"a":"1","b":"2"},"kind":"ConfigMap",`+cmMeta+`}`, `strict decoding error: unknown field "bogus"`)},
		{"a JSON patch", "application/json-patch+json", `[{"op":"add","path":"/bogus","value":1}]`,
			pvInvalidPatch(`{"apiVersion":"v1","bogus":1,"data":{"a":"1"},"kind":"ConfigMap",`+cmMeta+`}`, `strict decoding error: unknown field "bogus"`)},
		{"a merge patch with a duplicate field", "application/merge-patch+json", `{"data":{"d":"2","d":"3"},"bogus":1}`,
			pvInvalidPatch(`{"apiVersion":"v1","bogus":1,"data":{"a":"1","d":"3"},"kind":"ConfigMap",`+cmMeta+`}`, `strict decoding error: duplicate field "data.d", unknown field "bogus"`)},
		{"a strategic merge patch", "application/strategic-merge-patch+json", `{"zzz":1,"data":{"f":"2","f":"3"},"aaa":{"q":[1.5,"s",true,null]},"metadata":{"zz":1,"aa":2}}`,
			pvInvalidPatch(`map[aaa:map[q:[1.5 s true <nil>]] data:map[f:3] metadata:map[aa:2 zz:1] zzz:1]`,
				`strict decoding error: duplicate field "data.f", unknown field "aaa", unknown field "metadata.aa", unknown field "metadata.zz", unknown field "zzz"`)},
	} {
		code, _, data := pvPatch(t, cm, "fieldValidation=Strict", c.mt, c.body)
		pvFailure(t, c.name+" (Strict)", code, data, c.want)
	}

	code, warnings, data := pvPatch(t, cm, "fieldValidation=Warn", "application/merge-patch+json", `{"data":{"g":"2","g":"3"},"bogus":1}`)
	if want := []string{`299 - "duplicate field \"data.g\""`, `299 - "unknown field \"bogus\""`}; code != http.StatusOK || !slices.Equal(warnings, want) || strings.Contains(string(data), "bogus") {
		t.Errorf("a merge patch (Warn): %d %q %s\nwant 200 %q", code, warnings, data, want)
	}
	code, warnings, data = pvPatch(t, cm, "fieldValidation=Warn", "application/json-patch+json", `[{"op":"add","path":"/data/h","value":"1","extra":1}]`)
	if want := []string{`299 - "json patch unknown field \"[0].extra\""`}; code != http.StatusOK || !slices.Equal(warnings, want) {
		t.Errorf("a JSON patch with an unknown operation field (Warn): %d %q %s\nwant 200 %q", code, warnings, data, want)
	}
	code, warnings, _ = pvPatch(t, cm, "fieldValidation=Ignore", "application/merge-patch+json", `{"bogus":1}`)
	if code != http.StatusOK || len(warnings) != 0 {
		t.Errorf("a merge patch (Ignore): %d %q", code, warnings)
	}

	// A result not of the kind's type fails in every mode.
	code, _, data = pvPatch(t, cm, "fieldValidation=Ignore", "application/strategic-merge-patch+json", `{"data":{"x":1}}`)
	pvFailure(t, "a strategic merge patch of the wrong type", code, data, pvInvalidPatch("map[data:map[x:1]]", "cannot convert int64 to string"))
	code, _, data = pvPatch(t, cm, "fieldValidation=Ignore", "application/merge-patch+json", `{"data":{"x":1}}`)
	pvShown(t, "a merge patch of the wrong type", code, data, "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
		`{"apiVersion":"v1","data":{`, `"x":1},"kind":"ConfigMap","metadata":{"name":"cm","namespace":"`)
	resp, data := htDo(t, "POST", cms+"?fieldValidation=Ignore", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"x":1}}`))
	pvFailure(t, "a create of the wrong type", resp.StatusCode, data, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string`})

	// Patches that do not decode.
	code, _, data = pvPatch(t, cm, "", "application/merge-patch+json", `{"data":`)
	pvFailure(t, "a patch that is not JSON", code, data, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "invalid JSON patch"})
	code, _, data = pvPatch(t, cm, "", "application/json-patch+json", `[{"op":1}]`)
	pvFailure(t, "a JSON patch of the wrong shape", code, data, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"})

	code, _, data = pvPatch(t, cm, "", "application/json-patch+json", `{"op":"add"}`)
	pvFailure(t, "a JSON patch that is no list", code, data, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"})
	code, _, data = pvPatch(t, cm, "fieldValidation=Ignore", "application/strategic-merge-patch+json", `["a"]`)
	pvFailure(t, "a strategic merge patch that is no object", code, data, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: "json: cannot unmarshal array into Go value of type map[string]interface {}"})
	// Patches that do not apply.
	code, _, data = pvPatch(t, cm, "", "application/json-patch+json", `[{"op":"replace","path":"/spec/x","value":1}]`)
	pvFailure(t, "a JSON patch on a missing path", code, data, metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: "the server rejected our request due to an error in our request"})
	code, _, data = pvPatch(t, cm, "", "application/strategic-merge-patch+json", `{"$patch":"frob"}`)
	pvFailure(t, "a strategic merge patch with an unknown directive", code, data, metav1.Status{Code: http.StatusInternalServerError,
		Message: "unknown patch type: frob in map: map[$patch:frob]"})

	deployments := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	htJSON(t, "POST", deployments, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "d"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "d"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "nginx", "image": "nginx"}}}}}}, http.StatusCreated, nil)
	code, _, data = pvPatch(t, deployments+"/d", "fieldValidation=Strict", "application/strategic-merge-patch+json",
		`{"spec":{"bogus":1,"template":{"spec":{"containers":[{"name":"nginx","bogus2":"x"}]}}}}`)
	pvFailure(t, "a strategic merge patch of a Deployment", code, data, pvInvalidPatch("map[spec:map[bogus:1 template:map[spec:map[containers:[map[bogus2:x name:nginx]]]]]]",
		`strict decoding error: unknown field "spec.bogus", unknown field "spec.template.spec.containers[0].bogus2"`))
	code, _, data = pvPatch(t, deployments+"/d", "fieldValidation=Strict", "application/merge-patch+json", `{"spec":{"bogus":1}}`)
	pvShown(t, "a merge patch of a Deployment", code, data, `strict decoding error: unknown field "spec.bogus"`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"`+ns+`","uid":`,
		`"spec":{"bogus":1,"progressDeadlineSeconds":600,"replicas":1,`, `"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}}`, `"status":{}}`)

	// Server-side apply.
	code, _, data = pvPatch(t, cm, "fieldManager=applier&fieldValidation=Ignore", "application/apply-patch+yaml",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"bogus":1}`)
	pvFailure(t, "an apply with an unknown field", code, data, metav1.Status{Code: http.StatusInternalServerError,
		Message: "failed to create typed patch object (/cm; /v1, Kind=ConfigMap): .bogus: field not declared in schema"})
	duplicated := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  name: applied\ndata:\n  x: y\n  x: z\n"
	code, _, data = pvPatch(t, cms+"/applied", "fieldManager=applier&fieldValidation=Strict", "application/apply-patch+yaml", duplicated)
	pvFailure(t, "an apply with duplicate fields (Strict)", code, data, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 8: key \"x\" already set in map"})
	for _, wantCode := range []int{http.StatusCreated, http.StatusOK} {
		code, warnings, data = pvPatch(t, cms+"/applied", "fieldManager=applier&fieldValidation=Warn", "application/apply-patch+yaml", duplicated)
		if want := []string{`299 - "line 5: key \"name\" already set in map"`, `299 - "line 8: key \"x\" already set in map"`}; code != wantCode || !slices.Equal(warnings, want) {
			t.Errorf("an apply with duplicate fields (Warn): %d %q %s\nwant %d %q", code, warnings, data, wantCode, want)
		}
	}
}

// dialsCRD defines dials.patchvalidation.example.net, whose schema has
// defaults (in list items too), an embedded resource and a field
// preserving unknown fields around one that does not.
const dialsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: dials.patchvalidation.example.net}
spec:
  group: patchvalidation.example.net
  scope: Namespaced
  names: {plural: dials, kind: Dial}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string, default: blue}
              items:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer, default: 80}}}
              embedded: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
              free:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  known: {type: object, properties: {a: {type: string}}}
`

// TestCustomResourcePatchValidation: patches of a custom resource report
// the fields its schema prunes as kube-apiserver does (422 about the patch
// under Strict, the object's fields sorted; warnings under Warn), and
// every write goes through its schema: a server-side apply to an existing
// object is pruned (silently, as kube-apiserver: the apply itself fails on
// any field its schema does not declare) and defaulted after the apply,
// so a defaulted field is not the applier's and comes back when an
// applier drops it; an update is pruned and defaulted too.
func TestCustomResourcePatchValidation(t *testing.T) {
	k := newKubectl(t, "patchvalidation")
	applyCRD(k, "crd.yaml", dialsCRD, "dials.patchvalidation.example.net")
	waitFor(t, "the CRD to be established", func() bool {
		out, _, _ := k.run("get", "crd", "dials.patchvalidation.example.net", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True"
	})
	dials := "/apis/patchvalidation.example.net/v1/namespaces/" + k.ns + "/dials"
	var created map[string]any
	htJSON(t, "POST", dials+"?fieldManager=test", map[string]any{"apiVersion": "patchvalidation.example.net/v1", "kind": "Dial",
		"metadata": map[string]any{"name": "d"}, "spec": map[string]any{"items": []any{map[string]any{"name": "a"}}}}, http.StatusCreated, &created)
	d := dials + "/d"
	// As kube-apiserver encodes a custom resource: every field sorted.
	shown := pvIdentity(t, d, `{"apiVersion":"patchvalidation.example.net/v1","kind":"Dial","metadata":{"creationTimestamp":"CREATED","generation":1,`+
		`"managedFields":[{"apiVersion":"patchvalidation.example.net/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:color":{},"f:items":{".":{},"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:port":{}}}}},"manager":"test","operation":"Update","time":"TIME"}],`+
		`"name":"d","namespace":"NS","resourceVersion":"RV","uid":"UID"},"spec":{"bogus":1,"color":"blue","free":{"known":{"q":1}},"items":[{"name":"a","port":80}]}}`)
	code, _, data := pvPatch(t, d, "fieldValidation=Strict", "application/merge-patch+json", `{"spec":{"bogus":1,"free":{"known":{"q":1}}}}`)
	pvFailure(t, "a merge patch (Strict)", code, data, pvInvalidPatch(shown, `strict decoding error: unknown field "spec.bogus", unknown field "spec.free.known.q"`))
	code, _, data = pvPatch(t, d, "fieldValidation=Strict", "application/json-patch+json", `[{"op":"add","path":"/spec/bogus","value":1},{"op":"add","path":"/spec/free","value":{"known":{"q":1}}}]`)
	pvFailure(t, "a JSON patch (Strict)", code, data, pvInvalidPatch(shown, `strict decoding error: unknown field "spec.bogus", unknown field "spec.free.known.q"`))

	code, warnings, data := pvPatch(t, d, "fieldValidation=Warn", "application/merge-patch+json",
		`{"metadata":{"mjunk":1},"spec":{"bogus":1,"free":{"x":1,"known":{"a":"s","z":1}},"embedded":{"apiVersion":"v1","kind":"X","metadata":{"name":"e","junk":1}}}}`)
	if want := []string{`299 - "unknown field \"metadata.mjunk\""`, `299 - "unknown field \"spec.bogus\""`, `299 - "unknown field \"spec.free.known.z\""`,
		`299 - "unknown field \"spec.embedded.metadata.junk\""`}; code != http.StatusOK || !slices.Equal(warnings, want) {
		t.Errorf("a merge patch (Warn): %d %q %s\nwant 200 %q", code, warnings, data, want)
	}

	apply := func(manager, query, spec string) (int, []string, map[string]any) {
		t.Helper()
		code, warnings, data := pvPatch(t, d, "fieldManager="+manager+"&"+query, "application/apply-patch+yaml",
			`{"apiVersion":"patchvalidation.example.net/v1","kind":"Dial","metadata":{"name":"d"},"spec":`+spec+`}`)
		var obj map[string]any
		json.Unmarshal(data, &obj)
		return code, warnings, obj
	}
	spec := func(obj map[string]any) string {
		out, _ := json.Marshal(obj["spec"])
		return string(out)
	}
	// kube-apiserver's answer: b and c pruned, without a warning; the new
	// item's port defaulted; the applier owning what it applied.
	code, warnings, obj := apply("applier", "fieldValidation=Warn", `{"items":[{"name":"a"},{"name":"b"}],"free":{"x":1,"known":{"a":"s","b":2,"c":3}}}`)
	if want := `{"color":"blue","embedded":{"apiVersion":"v1","kind":"X","metadata":{"name":"e"}},"free":{"known":{"a":"s"},"x":1},"items":[{"name":"a","port":80},{"name":"b","port":80}]}`; code != http.StatusOK || len(warnings) != 0 || spec(obj) != want {
		t.Errorf("an apply to an existing object: %d %q %s\nwant 200 %s", code, warnings, spec(obj), want)
	}
	if got, want := pvManaged(obj, "applier"), `{"f:spec":{"f:free":{"f:known":{"f:a":{},"f:b":{},"f:c":{}},"f:x":{}},"f:items":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}},"k:{\"name\":\"b\"}":{".":{},"f:name":{}}}}}`; got != want {
		t.Errorf("the applier's fields: %s\nwant %s", got, want)
	}
	if code, _, obj = apply("colorist", "force=true", `{"color":"red"}`); code != http.StatusOK || spec(obj) == "" || obj["spec"].(map[string]any)["color"] != "red" {
		t.Errorf("an apply taking color: %d %s", code, spec(obj))
	}
	if code, _, obj = apply("colorist", "", `{}`); code != http.StatusOK || obj["spec"].(map[string]any)["color"] != "blue" {
		t.Errorf("after the only applier of color dropped it: %d %s, want color blue again", code, spec(obj))
	}
	code, _, data = pvPatch(t, d, "fieldManager=applier&fieldValidation=Ignore", "application/apply-patch+yaml",
		`{"apiVersion":"patchvalidation.example.net/v1","kind":"Dial","metadata":{"name":"d"},"spec":{"bogus":1}}`)
	pvFailure(t, "an apply with an unknown field", code, data, metav1.Status{Code: http.StatusInternalServerError,
		Message: "failed to create typed patch object (/d; patchvalidation.example.net/v1, Kind=Dial): .spec.bogus: field not declared in schema"})

	// An update is pruned and defaulted as a create is.
	var current map[string]any
	htJSON(t, "GET", d, nil, http.StatusOK, &current)
	current["spec"] = map[string]any{"bogus": 1, "items": []any{map[string]any{"name": "c"}}}
	body, _ := json.Marshal(current)
	resp, data := htDo(t, "PUT", d+"?fieldValidation=Ignore", "application/json", body)
	json.Unmarshal(data, &obj)
	if want := `{"color":"blue","items":[{"name":"c","port":80}]}`; resp.StatusCode != http.StatusOK || spec(obj) != want {
		t.Errorf("an update with an unknown field (Ignore): %d %s\nwant 200 %s", resp.StatusCode, data, want)
	}

	// kubectl apply --server-side of a new object: the defaulted fields
	// (color, the first item's port) are nobody's.
	k.must("apply", "--server-side", "-f", k.file("dial.yaml", `{"apiVersion":"patchvalidation.example.net/v1","kind":"Dial","metadata":{"name":"kd"},
"spec":{"items":[{"name":"a"},{"name":"b","port":81}],"free":{"known":{"a":"x"}}}}`))
	out := k.must("get", "dials", "kd", "-o", "json", "--show-managed-fields")
	json.Unmarshal([]byte(out), &obj)
	if got, want := spec(obj)+" "+pvManaged(obj, "kubectl"), `{"color":"blue","free":{"known":{"a":"x"}},"items":[{"name":"a","port":80},{"name":"b","port":81}]} `+
		`{"f:spec":{"f:free":{"f:known":{"f:a":{}}},"f:items":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}},"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:port":{}}}}}`; got != want {
		t.Errorf("kubectl apply --server-side: %s\nwant %s", got, want)
	}
}

// pvManaged is the fieldsV1 of manager's managedFields entry in obj.
func pvManaged(obj map[string]any, manager string) string {
	meta, _ := obj["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		if entry, _ := e.(map[string]any); entry["manager"] == manager {
			out, _ := json.Marshal(entry["fieldsV1"])
			return string(out)
		}
	}
	return ""
}
