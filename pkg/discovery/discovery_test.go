package discovery

import (
	"os"
	"regexp"
	"testing"
)

// The hashes are kube-apiserver 1.37's, read off its discovery.
func TestStorageVersionHash(t *testing.T) {
	for _, tc := range []struct{ group, version, kind, want string }{
		{"", "v1", "ConfigMap", "qFsyl6wFWjQ="},
		{"apps", "v1", "Deployment", "8aSe+NMegvE="},
		{"apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition", "jfWCUB31mvA="},
	} {
		if got := storageVersionHash(tc.group, tc.version, tc.kind); got != tc.want {
			t.Errorf("%s/%s/%s: %s, want %s", tc.group, tc.version, tc.kind, got, tc.want)
		}
	}
}

// TestVersionIsTheAPIModules: /version names the Kubernetes release whose
// API machinery (k8s.io/apimachinery v0.X.Y, Kubernetes 1.X.Y, in go.mod)
// the server is built with, so that a dependency update cannot leave it
// behind.
func TestVersionIsTheAPIModules(t *testing.T) {
	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/apimachinery v0\.(\d+)\.(\d+)\b`).FindStringSubmatch(string(goMod))
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/apimachinery v0.X.Y")
	}
	if want := "v1." + m[1] + "." + m[2] + "+watchcache"; Version.GitVersion != want || Version.Major != "1" || Version.Minor != m[1] {
		t.Errorf("/version says %s (%s.%s); go.mod's k8s.io/apimachinery is v0.%s.%s: want %s", Version.GitVersion, Version.Major, Version.Minor, m[1], m[2], want)
	}
}
