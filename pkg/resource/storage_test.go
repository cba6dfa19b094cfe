package resource

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/storage"
)

// referenceKV is a key and value kube-apiserver 1.37.2 wrote in its etcd
// (testdata/reference-etcd.jsonl, recorded with the objects of
// testdata/reference-objects.yaml and an EncryptionConfiguration that
// encrypts Secrets with aescbc and ConfigMaps with aesgcm).
type referenceKV struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// referenceServed is what kube-apiserver served for a key's object
// (testdata/reference-served.jsonl): the GET at path.
type referenceServed struct {
	Key    string         `json:"key"`
	Path   string         `json:"path"`
	Object map[string]any `json:"object"`
}

func readJSONLines[T any](t *testing.T, file string) []T {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// referenceData returns the recorded reference key/values by key and what
// was served for them.
func referenceData(t *testing.T) (map[string][]byte, []referenceServed) {
	values := map[string][]byte{}
	for _, kv := range readJSONLines[referenceKV](t, "testdata/reference-etcd.jsonl") {
		values[kv.Key] = kv.Value
	}
	return values, readJSONLines[referenceServed](t, "testdata/reference-served.jsonl")
}

// lookupPath finds the resource of a GET path and the object's namespace
// and name.
func lookupPath(t *testing.T, reg *Registry, path string) (*Resource, string, string) {
	t.Helper()
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group, version string
	if parts[0] == "api" {
		version, parts = parts[1], parts[2:]
	} else {
		group, version, parts = parts[1], parts[2], parts[3:]
	}
	ns := ""
	if parts[0] == "namespaces" && len(parts) == 4 {
		ns, parts = parts[1], parts[2:]
	}
	res := reg.Lookup(group, version, parts[0])
	if res == nil {
		t.Fatalf("no resource serves %s", path)
	}
	return res, ns, parts[1]
}

// readDefaults are the fields kube-apiserver's defaulters add to the
// recorded objects when it reads them from etcd, which watchcache (setting
// defaults on writes only) does not serve: a Job's labels copied from its
// pod template (set there by its strategy after the defaulters ran on the
// create), a PersistentVolumeClaim's status.phase (reset by its strategy).
func readDefaults(t *testing.T) map[string][]string {
	var m map[string][]string
	data, err := os.ReadFile("testdata/reference-read-defaults.json")
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// unset deletes the dotted path from obj.
func unset(obj map[string]any, path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		obj, _ = obj[p].(map[string]any)
	}
	delete(obj, parts[len(parts)-1])
}

// referenceRegistry is the built-in kinds and the custom resource widgets
// of the reference recording.
func referenceRegistry(t *testing.T) *Registry {
	t.Helper()
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	widgets := &Resource{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}
	if err := reg.Add(map[*Resource]storage.Interface{widgets: nil}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// Every recorded object's key is where EtcdPrefix and Key put it; its
// value, unless encrypted, decodes to what kube-apiserver served (less the
// resourceVersion, which the key's revision gives) and, for built-in
// kinds, encodes back to the very bytes kube-apiserver stored.
func TestStorageLayoutMatchesReference(t *testing.T) {
	reg := referenceRegistry(t)
	values, served := referenceData(t)
	defaulted := readDefaults(t)
	encoded := 0
	for _, s := range served {
		res, ns, name := lookupPath(t, reg, s.Path)
		if s := reg.StorageOf(res); s != nil {
			res = s
		}
		if got := res.EtcdPrefix("/registry") + "/" + res.Key(ns, name); got != s.Key {
			t.Errorf("%s: key %q, kube-apiserver's %q", s.Path, got, s.Key)
			continue
		}
		value := values[s.Key]
		if bytes.HasPrefix(value, []byte("k8s:enc:")) {
			continue // TestEncryptedReference
		}
		codec := res.StorageCodec()
		stored, err := codec.Decode(value)
		if err != nil {
			t.Errorf("%s: %v", s.Key, err)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(stored, &got); err != nil {
			t.Fatalf("%s: %v", s.Key, err)
		}
		want := s.Object
		delete(want["metadata"].(map[string]any), "resourceVersion")
		for _, p := range defaulted[s.Key] {
			unset(want, p)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded unlike kube-apiserver's: %s", s.Key, strings.Join(differences("", got, want), "; "))
			continue
		}
		again, err := codec.Encode(stored)
		if err != nil {
			t.Errorf("%s: %v", s.Key, err)
		} else if !bytes.Equal(again, value) {
			t.Errorf("%s: encoded\n%q\nkube-apiserver stored\n%q", s.Key, again, value)
		}
		encoded++
	}
	if encoded < 50 {
		t.Errorf("%d objects compared, of %d recorded", encoded, len(served))
	}
}

// differences lists the paths where got and want differ, with both values.
func differences(path string, got, want any) []string {
	g, gok := got.(map[string]any)
	w, wok := want.(map[string]any)
	if gok && wok {
		var out []string
		for k := range g {
			out = append(out, differences(path+"."+k, g[k], w[k])...)
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				out = append(out, differences(path+"."+k, nil, w[k])...)
			}
		}
		return out
	}
	if gl, ok := got.([]any); ok {
		if wl, ok := want.([]any); ok && len(gl) == len(wl) {
			var out []string
			for i := range gl {
				out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), gl[i], wl[i])...)
			}
			return out
		}
	}
	if reflect.DeepEqual(got, want) {
		return nil
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	return []string{fmt.Sprintf("%s: %s, want %s", path, gj, wj)}
}

// BenchmarkStorageCodec measures a pod's value in etcd (benchdata's pod,
// about 2.5 KB of JSON with managedFields-free metadata) as watchcache
// stored it before issue 29 (JSON) and as kube-apiserver stores it
// (protobuf): bytes per pod, and the time to encode and decode one.
func BenchmarkStorageCodec(b *testing.B) {
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		b.Fatal(err)
	}
	pods := reg.Lookup("", "v1", "pods")
	var obj map[string]any
	if err := json.Unmarshal(benchdata.Pod(1, 100, 1000), &obj); err != nil {
		b.Fatal(err)
	}
	stored, err := pods.Encode(obj)
	if err != nil {
		b.Fatal(err)
	}
	codec := pods.StorageCodec()
	value, err := codec.Encode(stored)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Encode", func(b *testing.B) {
		for b.Loop() {
			codec.Encode(stored)
		}
		b.ReportMetric(float64(len(stored)), "json-bytes/pod")
		b.ReportMetric(float64(len(value)), "stored-bytes/pod")
	})
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			codec.Decode(value)
		}
	})
}
