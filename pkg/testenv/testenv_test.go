package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// writeCRDs writes n definitions (kinds Thing0, Thing1, ...) into a
// directory, two per file.
func writeCRDs(t testing.TB, n int) string {
	dir := t.TempDir()
	for i := 0; i < n; i += 2 {
		var body string
		for j := i; j < min(i+2, n); j++ {
			body += fmt.Sprintf(`---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: thing%[1]ds.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: thing%[1]ds, kind: Thing%[1]d}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer, default: 1}}}
`, j)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("crds-%d.yaml", i)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a definition"), 0o600)
	return dir
}

// An Environment serves the definitions of its directories at once and
// leaves nothing behind.
func TestEnvironment(t *testing.T) {
	env := &Environment{CRDDirectoryPaths: []string{writeCRDs(t, 3), "missing"}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	dir := env.dir
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	things := client.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "thing2s"}).Namespace("default")
	created, err := things.Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing2", "metadata": map[string]any{"name": "t"}, "spec": map[string]any{}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(created.Object, "spec", "size"); size != 1 {
		t.Errorf("created %v: the schema's default is missing", created.Object)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the environment's directory is left: %v", err)
	}

	strict := &Environment{CRDDirectoryPaths: []string{"missing"}, ErrorIfCRDPathMissing: true}
	if _, err := strict.Start(); err == nil {
		strict.Stop()
		t.Error("a missing CRD path was accepted with ErrorIfCRDPathMissing")
	}
}

// BenchmarkStart measures a start to a usable *rest.Config with 10
// definitions served, and reports the median of the starts: of this
// package, and of controller-runtime's envtest with the kube-apiserver and
// etcd binaries of each folder KUBEBUILDER_ASSETS names (several separated
// by the path list separator, ':', to compare them in one run: kube-apiserver's
// and etcd's own, and watchcache's under their names).
func BenchmarkStart(b *testing.B) {
	dir := writeCRDs(b, 10)
	b.Run("testenv", func(b *testing.B) {
		benchmarkStarts(b, func() (func() error, error) {
			env := &Environment{CRDDirectoryPaths: []string{dir}}
			_, err := env.Start()
			return env.Stop, err
		})
	})
	folders := filepath.SplitList(os.Getenv("KUBEBUILDER_ASSETS"))
	if len(folders) == 0 {
		b.Run("envtest", func(b *testing.B) {
			b.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd binaries to compare with")
		})
	}
	for _, assets := range folders {
		b.Run("envtest/"+filepath.Base(assets), func(b *testing.B) {
			b.Setenv("KUBEBUILDER_ASSETS", assets) // envtest prefers it to BinaryAssetsDirectory
			benchmarkStarts(b, func() (func() error, error) {
				env := &envtest.Environment{CRDDirectoryPaths: []string{dir}}
				_, err := env.Start()
				return env.Stop, err
			})
		})
	}
}

// benchmarkStarts times start (which returns its stop) b.N times and
// reports the median.
func benchmarkStarts(b *testing.B, start func() (stop func() error, err error)) {
	var took []time.Duration
	for b.Loop() {
		begin := time.Now()
		stop, err := start()
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(begin))
		b.StopTimer()
		if err := stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "median-ms/start")
}
