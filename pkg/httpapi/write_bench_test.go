package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/defaults"
	"github.com/watchcache/watchcache/pkg/openapi"
	"github.com/watchcache/watchcache/pkg/resource"
	kjson "sigs.k8s.io/json"
)

// BenchmarkPodWritePreparation measures what a pod create costs before
// storage: decoding the body, then either encoding it back as it is
// (plain) or defaulting, validating and encoding it through its Go type as
// stored (kube), and recording its managedFields too.
func BenchmarkPodWritePreparation(b *testing.B) {
	var pods *resource.Resource
	for _, r := range resource.Builtins() {
		if r.Group == "" && r.Plural == "pods" {
			pods = r
		}
	}
	body := benchdata.Pod(1, 10, 10)
	decode := func() map[string]any {
		var obj map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &obj); err != nil {
			b.Fatal(err)
		}
		return obj
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(decode()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kube", func(b *testing.B) {
		for b.Loop() {
			obj := decode()
			defaults.Apply(pods.Group, pods.Kind, obj)
			if _, _, err := encodeValid(pods, "p", "", obj, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	reg, err := resource.NewRegistry(pods)
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{openapi: openapi.New(reg)}
	req := &request{verb: "create", res: pods, namespace: "ns-001", manager: "bench"}
	if _, err := s.trackUpdate(req, nil, decode()); err != nil { // builds the field managers
		b.Fatal(err)
	}
	b.Run("kube+managedFields", func(b *testing.B) {
		for b.Loop() {
			obj := decode()
			defaults.Apply(pods.Group, pods.Kind, obj)
			obj, err := s.trackUpdate(req, nil, obj)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := encodeValid(pods, "p", "", obj, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
