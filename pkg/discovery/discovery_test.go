package discovery

import "testing"

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
