package app

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// layers are the module's packages (below github.com/watchcache/watchcache)
// by their place on a request's way, bottom first: a package may import
// packages of its own layer or of those below it, never of a layer above
// (docs/design.md, "Layout").
var layers = []struct {
	name     string
	packages []string
}{
	{"values", []string{"pkg/object", "pkg/podrefs", "pkg/jsontree", "pkg/auth/user", "pkg/requestinfo", "pkg/storage/storagemetrics",
		"pkg/etcdembed", "pkg/encryption", "pkg/pki", "pkg/benchdata", "pkg/table", "pkg/storage/cacher/linearizability", "pkg/crd/crdfile",
		"pkg/protojson"}},
	{"storage", []string{"pkg/storage", "pkg/storage/etcd3", "pkg/storage/cacher", "pkg/storage/storagetest", "pkg/conversion"}},
	{"the Status writer", []string{"pkg/apistatus"}},
	{"registry", []string{"pkg/crd/crdschema", "pkg/resource", "pkg/defaults", "pkg/validation", "pkg/strategy", "pkg/apply",
		"pkg/deletion", "pkg/crd", "pkg/informer", "pkg/leaderelect", "pkg/quota"}},
	{"pipeline", []string{"pkg/pipeline", "pkg/admission", "pkg/servicenet"}},
	{"handlers", []string{"pkg/encoding", "pkg/discovery", "pkg/openapi", "pkg/openapi/internal/recordopenapi", "pkg/health", "pkg/httpapi"}},
	{"filters", []string{"pkg/auth/authorizer", "pkg/auth/authn", "pkg/auth/filters", "pkg/auth/node", "pkg/auth/rbac", "pkg/auth/rbac/bootstrap",
		"pkg/auth/review", "pkg/auth/signers", "pkg/audit", "pkg/limits", "pkg/flowcontrol"}},
	{"controllers", []string{"pkg/controller", "pkg/controller/certificates", "pkg/crd/crdcontroller"}},
	{"assembly", []string{"pkg/app", "pkg/testenv", "pkg/bench", "cmd/watchcache", "e2e", "e2e/internal/reconcilertest", "test/ha",
		"pkg/encoding/internal/recordprotobuf", "test/envtest/api/v1", "test/envtest/internal/assets", "test/envtest/internal/controller",
		"test/envtest/internal/webhook/v1", "test/envtest/internal/webhook/webhooktest", "test/envtest/internal/webhook/ontestenv"}},
}

const module = "github.com/watchcache/watchcache/"

// TestLayout: every package of the module has a layer, and no package
// imports one of a layer above its own; the module (tests included)
// depends on neither k8s.io/apiserver nor k8s.io/kubernetes, which are
// the layer this project is.
func TestLayout(t *testing.T) {
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l.packages {
			layer[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		from, ok := layer[pkg]
		if !ok {
			t.Errorf("%s has no layer: add it to layers", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if to, known := layer[dep]; ours && known && to > from {
				t.Errorf("%s (%s) imports %s (%s), a layer above it", pkg, layers[from].name, dep, layers[to].name)
			}
		}
	}
	deps, err := exec.Command("go", "list", "-deps", "-test", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, deps)
	}
	for _, dep := range strings.Fields(string(deps)) {
		if strings.HasPrefix(dep, "k8s.io/apiserver/") || strings.HasPrefix(dep, "k8s.io/kubernetes/") || dep == "k8s.io/apiserver" || dep == "k8s.io/kubernetes" {
			t.Errorf("the module depends on %s", dep)
		}
	}
}

// maxFileLines bounds the files of the packages that serve HTTP, so that
// each stays one verb family or one document's worth to read.
const maxFileLines = 500

// TestFileSizes: no non-test file of the handler, encoding, OpenAPI and
// discovery packages is over maxFileLines.
func TestFileSizes(t *testing.T) {
	for _, dir := range []string{"httpapi", "encoding", "openapi", "discovery", "health", "apistatus", "pipeline"} {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("pkg/%s: no files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(data, []byte("\n")); n > maxFileLines {
				t.Errorf("%s has %d lines, over %d: split it by what it serves", f, n, maxFileLines)
			}
		}
	}
}
