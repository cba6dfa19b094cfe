package encryption

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	key32 = "dGhpcyBpcyBrZXkgb25lLCB0aGlydHktdHdvIGJ5dGU=" // 32 bytes
	key16 = "c2l4dGVlbiBieXRlIGtleQ=="                     // 16 bytes
)

func load(t *testing.T, resources string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	os.WriteFile(path, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"+resources), 0o600)
	return Load(path)
}

func mustLoad(t *testing.T, resources string) *Config {
	t.Helper()
	cfg, err := load(t, resources)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestProvidersRoundTrip(t *testing.T) {
	for name, provider := range map[string]string{
		"aesgcm":    "aesgcm: {keys: [{name: k, secret: " + key16 + "}]}",
		"aescbc":    "aescbc: {keys: [{name: k, secret: " + key32 + "}]}",
		"secretbox": "secretbox: {keys: [{name: k, secret: " + key32 + "}]}",
		"identity":  "identity: {}",
	} {
		tr := mustLoad(t, "- resources: [secrets]\n  providers:\n  - "+provider+"\n").For("", "secrets")
		for _, plain := range [][]byte{{}, []byte("x"), []byte(strings.Repeat("sixteen bytes!!!", 4)), []byte(`{"data":{"password":"hunter2"}}`)} {
			stored, err := tr.ToStorage(plain, "/registry/secrets/ns/s")
			if err != nil {
				t.Fatal(name, err)
			}
			wantPrefix := "k8s:enc:" + name + ":v1:k:"
			if name == "identity" {
				wantPrefix = ""
			}
			if !bytes.HasPrefix(stored, []byte(wantPrefix)) || name != "identity" && len(plain) >= 8 && bytes.Contains(stored, plain) {
				t.Errorf("%s: stored %q", name, stored)
			}
			got, stale, err := tr.FromStorage(stored, "/registry/secrets/ns/s")
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Errorf("%s: read back %q %v %v", name, got, stale, err)
			}
			if name != "identity" && len(stored) > len(wantPrefix)+1 {
				tampered := bytes.Clone(stored)
				tampered[len(tampered)-1] ^= 1
				if got, _, err := tr.FromStorage(tampered, "/registry/secrets/ns/s"); err == nil && bytes.Equal(got, plain) && name != "aescbc" {
					t.Errorf("%s: a tampered value read back", name)
				}
			}
		}
	}
}

func TestRotation(t *testing.T) {
	old := mustLoad(t, "- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: k1, secret: "+key32+"}]}\n").For("", "secrets")
	rotated := mustLoad(t, "- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k2, secret: "+key16+"}]}\n  - aescbc: {keys: [{name: k1, secret: "+key32+"}]}\n  - identity: {}\n").For("", "secrets")
	before, _ := old.ToStorage([]byte("old"), "k")
	if got, stale, err := rotated.FromStorage(before, "k"); err != nil || !stale || string(got) != "old" {
		t.Errorf("old value after rotation: %q %v %v", got, stale, err)
	}
	after, _ := rotated.ToStorage([]byte("new"), "k")
	if !bytes.HasPrefix(after, []byte("k8s:enc:aesgcm:v1:k2:")) {
		t.Errorf("new value: %q", after)
	}
	if _, _, err := old.FromStorage(after, "k"); err == nil || !strings.Contains(err.Error(), "aesgcm") {
		t.Errorf("old configuration reading a new value: %v", err)
	}
	if got, stale, err := rotated.FromStorage([]byte("plain"), "k"); err != nil || !stale || string(got) != "plain" {
		t.Errorf("plaintext through identity: %q %v %v", got, stale, err)
	}
	if _, _, err := old.FromStorage([]byte("plain"), "k"); err == nil {
		t.Error("plaintext read without an identity provider")
	}
}

func TestFor(t *testing.T) {
	cfg := mustLoad(t, "- resources: [secrets, widgets.example.com]\n  providers: [{identity: {}}]\n- resources: ['*.apps']\n  providers: [{secretbox: {keys: [{name: a, secret: "+key32+"}]}}]\n- resources: ['*.']\n  providers: [{aescbc: {keys: [{name: b, secret: "+key32+"}]}}]\n- resources: ['*.*']\n  providers: [{aesgcm: {keys: [{name: c, secret: "+key32+"}]}}]\n")
	for _, tc := range []struct{ group, plural, prefix string }{
		{"", "secrets", ""}, {"example.com", "widgets", ""}, {"apps", "deployments", "k8s:enc:secretbox"},
		{"", "configmaps", "k8s:enc:aescbc"}, {"rbac.authorization.k8s.io", "roles", "k8s:enc:aesgcm"},
	} {
		tr := cfg.For(tc.group, tc.plural)
		out, _ := tr.ToStorage([]byte("x"), "k")
		if !strings.HasPrefix(string(out), tc.prefix) || tc.prefix == "" && string(out) != "x" {
			t.Errorf("%s.%s: %q, want prefix %q", tc.plural, tc.group, out, tc.prefix)
		}
	}
	if mustLoad(t, "- resources: [secrets]\n  providers: [{identity: {}}]\n").For("", "configmaps") != nil {
		t.Error("an unlisted resource has a transformer")
	}
	var none *Config
	if none.For("", "secrets") != nil {
		t.Error("no configuration has a transformer")
	}
}

// TestEntriesAccumulate: a resource named by two entries has the first
// entry's providers, then the second's, as upstream.
func TestEntriesAccumulate(t *testing.T) {
	both := mustLoad(t, "- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k2, secret: "+key16+"}]}}]\n- resources: [secrets, configmaps]\n  providers: [{aescbc: {keys: [{name: k1, secret: "+key32+"}]}}]\n")
	old := mustLoad(t, "- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: k1, secret: "+key32+"}]}}]\n").For("", "secrets")
	stored, _ := old.ToStorage([]byte("old"), "k")
	if got, stale, err := both.For("", "secrets").FromStorage(stored, "k"); err != nil || !stale || string(got) != "old" {
		t.Errorf("a value of the second entry's key: %q %v %v", got, stale, err)
	}
	if out, _ := both.For("", "secrets").ToStorage([]byte("new"), "k"); !bytes.HasPrefix(out, []byte("k8s:enc:aesgcm:v1:k2:")) {
		t.Errorf("written as %q", out)
	}
	if out, _ := both.For("", "configmaps").ToStorage([]byte("new"), "k"); !bytes.HasPrefix(out, []byte("k8s:enc:aescbc:v1:k1:")) {
		t.Errorf("config map written as %q", out)
	}
}

func TestLoadErrors(t *testing.T) {
	for resources, want := range map[string]string{
		"- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}}]\n":                                        "resources[0].providers[0]: aesgcm.keys[0].secret: Invalid value: REDACTED: secret is not of the expected length, got 5",
		"- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k, secret: '!!'}]}}]\n":                                            "secrets must be base64 encoded",
		"- resources: [secrets]\n  providers: [{aesgcm: {keys: []}}]\n":                                                                   "aesgcm.keys: Required value",
		"- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: k, secret: " + key32 + "}, {name: k, secret: " + key32 + "}]}}]\n": "aescbc.keys[1].name: Duplicate value",
		"- resources: [secrets]\n  providers: [{identity: {}, aesgcm: {keys: [{name: k, secret: " + key32 + "}]}}]\n":                     "exactly one of",
		"- resources: [secrets]\n  providers: [{kms: {name: x}}]\n":                                                                       "KMS providers are not supported",
		"- resources: [secrets]\n  providers: []\n":                                                                                       "resources[0].providers: Required value",
		"- resources: [Secrets]\n  providers: [{identity: {}}]\n":                                                                         "must be a lowercase resource",
		"- resources: [secrets]\n  providers: [{identity: {}}]\n  colour: red\n":                                                          "unknown field",
		"- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k}]}}]\n":                                                          "aesgcm.keys[0].secret: Required value",
		"- resources: [secrets, '*']\n  providers: [{identity: {}}]\n":                                                                    "resources[0].resources[1]: Invalid value: \"*\": use '*.'",
		"- resources: [secrets.*]\n  providers: [{identity: {}}]\n":                                                                       "across groups is not supported",
		"- resources: [events.events.k8s.io]\n  providers: [{identity: {}}]\n":                                                            "Use 'events' instead",
		"- resources: [secrets, secrets]\n  providers: [{identity: {}}]\n":                                                                "the same resource cannot be specified multiple times",
		"- resources: [secrets, '*.']\n  providers: [{identity: {}}]\n":                                                                   "using overlapping resources",
		"- resources: [deployments.apps, '*.*']\n  providers: [{identity: {}}]\n":                                                         "using overlapping resources",
		"- resources: ['*.']\n  providers: [{identity: {}}]\n- resources: [secrets]\n  providers: [{identity: {}}]\n":                     "resources[1].resources[0]: resource \"secrets\" is masked by earlier rule \"*.\"",
		"- resources: ['*.*']\n  providers: [{identity: {}}]\n- resources: ['*.apps']\n  providers: [{identity: {}}]\n":                   "resource \"*.apps\" is masked by earlier rule \"*.*\"",
	} {
		_, err := load(t, resources)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "enc.yaml") {
			t.Errorf("%q: %v, want %q naming the file", resources, err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "wrong-kind.yaml")
	os.WriteFile(path, []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "want EncryptionConfiguration") {
		t.Errorf("wrong kind: %v", err)
	}
}
