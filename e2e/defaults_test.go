package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// defaultsDifferences are the fields where the server deliberately
// answers otherwise than kube-apiserver, by sample: it allocates no
// cluster IPs or node ports (no service network here), adds no
// storage-protection finalizers (no controller would remove them) and no
// not-ready taint to new nodes (kube-apiserver's admission plugins), and a
// transition time is the time of the create. A CertificateSigningRequest
// names its requester, another user there (the reference's token user).
var defaultsDifferences = map[string][]string{
	"service":                          {"spec.clusterIP", "spec.clusterIPs"},
	"service-nodeport":                 {"spec.clusterIP", "spec.clusterIPs", "spec.ports.0.nodePort"},
	"persistentvolume":                 {"metadata.finalizers", "status.lastPhaseTransitionTime"},
	"persistentvolumeclaim":            {"metadata.finalizers"},
	"persistentvolumeclaim-datasource": {"metadata.finalizers"},
	"service-loadbalancer":             {"spec.clusterIP", "spec.clusterIPs", "spec.ports.0.nodePort"},
	"node":                             {"spec.taints"},
	"volumeattributesclass":            {"metadata.finalizers"},
	"apiservice":                       {"status.conditions.0.lastTransitionTime"},
	"devicetaintrule":                  {"spec.taint.timeAdded"},
	"certificatesigningrequest":        {"spec.username", "spec.uid", "spec.groups"},
}

// TestDefaults creates a sample of every kind (testdata/defaults) and
// compares what the server stored with what kube-apiserver answers for the
// same input (testdata/defaults-want): defaults, the zero values its
// encoding writes, and the metadata its strategies set.
func TestDefaults(t *testing.T) {
	k := newKubectl(t, "defaults")
	files, err := filepath.Glob("testdata/defaults/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("samples: %v %v", files, err)
	}
	for _, file := range files {
		sample := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(sample, func(t *testing.T) {
			input, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			path := k.file(sample+".yaml", strings.ReplaceAll(string(input), "NAMESPACE", k.ns))
			var got map[string]any
			if err := json.Unmarshal([]byte(k.must("create", "-f", path, "-o", "json")), &got); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { k.run("delete", "-f", path, "--wait=false") }) // cluster-scoped samples outlive the namespace
			wantJSON, err := os.ReadFile("testdata/defaults-want/" + sample + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(wantJSON, &want); err != nil {
				t.Fatal(err)
			}
			normalizeSample(got, k.ns)
			for _, path := range defaultsDifferences[sample] {
				deletePath(got, path)
				deletePath(want, path)
			}
			for _, d := range jsonDiff("", want, got) {
				t.Error(d)
			}
		})
	}
}

// normalizeSample makes a stored sample comparable with a recorded one:
// no uid, times or resourceVersion; the object's uid (a Job's labels hold
// it) is "UID" and its namespace "NAMESPACE".
func normalizeSample(obj map[string]any, ns string) {
	meta, _ := obj["metadata"].(map[string]any)
	uid, _ := meta["uid"].(string)
	for _, f := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields"} {
		delete(meta, f)
	}
	data, _ := json.Marshal(obj)
	s := strings.ReplaceAll(string(data), `"`+ns+`"`, `"NAMESPACE"`)
	if uid != "" {
		s = strings.ReplaceAll(s, uid, "UID")
	}
	clear(obj)
	json.Unmarshal([]byte(s), &obj)
}

// deletePath removes the value at a dotted path (list indexes as numbers).
func deletePath(obj any, path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		switch v := obj.(type) {
		case map[string]any:
			obj = v[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(v) {
				return
			}
			obj = v[i]
		}
	}
	if m, ok := obj.(map[string]any); ok {
		delete(m, parts[len(parts)-1])
	}
}

// jsonDiff lists the differences between two decoded JSON values.
func jsonDiff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		var out []string
		for k, w := range wm {
			if g, ok := gm[k]; ok {
				out = append(out, jsonDiff(path+"."+k, w, g)...)
			} else {
				out = append(out, path+"."+k+": missing, want "+jsonText(w))
			}
		}
		for k, g := range gm {
			if _, ok := wm[k]; !ok {
				out = append(out, path+"."+k+": unexpected "+jsonText(g))
			}
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{path + ": " + jsonText(got) + ", want " + jsonText(want)}
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
