// Package encryption is encryption at rest as kube-apiserver's
// --encryption-provider-config configures it: an EncryptionConfiguration
// (apiserver.config.k8s.io/v1) lists, per resource, providers in order;
// the first encrypts what is written, every one can read. Values carry
// upstream's prefix, k8s:enc:<provider>:v1:<key name>:, and upstream's
// layouts (aesgcm: nonce|sealed with the etcd key as additional data;
// aescbc: iv|PKCS#7-padded ciphertext; secretbox: nonce|box). (Values do
// not move to kube-apiserver's etcd as they are: its keys are laid out
// differently, and aesgcm binds a value to its key.) The identity provider
// stores values as they are.
//
// KMS providers are refused: they need a plugin this server does not run.
package encryption

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// file is the EncryptionConfiguration's layout.
type file struct {
	Kind       string           `json:"kind"`
	APIVersion string           `json:"apiVersion"`
	Resources  []resourceConfig `json:"resources"`
}

type resourceConfig struct {
	Resources []string         `json:"resources"`
	Providers []providerConfig `json:"providers"`
}

type providerConfig struct {
	AESGCM    *keysConfig `json:"aesgcm,omitempty"`
	AESCBC    *keysConfig `json:"aescbc,omitempty"`
	Secretbox *keysConfig `json:"secretbox,omitempty"`
	Identity  *struct{}   `json:"identity,omitempty"`
	KMS       any         `json:"kms,omitempty"`
}

type keysConfig struct {
	Keys []keyConfig `json:"keys"`
}

type keyConfig struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Config is a loaded EncryptionConfiguration.
type Config struct {
	rules []rule
}

// rule is one resources entry: the resources it covers and their
// transformer.
type rule struct {
	resources   []string
	transformer *Transformer
}

// Load reads and checks an EncryptionConfiguration; errors name the file
// and the entry at fault.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := parse(&f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func parse(f *file) (*Config, error) {
	if f.Kind != "EncryptionConfiguration" || f.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("kind %q, apiVersion %q: want EncryptionConfiguration, apiserver.config.k8s.io/v1", f.Kind, f.APIVersion)
	}
	if len(f.Resources) == 0 {
		return nil, fmt.Errorf("resources: Required value: at least one resources entry")
	}
	cfg := &Config{}
	for i, rc := range f.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("%s.resources: Required value: at least one resource", at)
		}
		for j, r := range rc.Resources {
			if r == "" || r != strings.ToLower(r) {
				return nil, fmt.Errorf("%s.resources[%d]: Invalid value: %q: must be a lowercase resource (plural.group)", at, j, r)
			}
		}
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("%s.providers: Required value: at least one provider", at)
		}
		t := &Transformer{}
		for j, pc := range rc.Providers {
			ps, err := newProviders(pc)
			if err != nil {
				return nil, fmt.Errorf("%s.providers[%d]: %w", at, j, err)
			}
			t.providers = append(t.providers, ps...)
		}
		cfg.rules = append(cfg.rules, rule{resources: rc.Resources, transformer: t})
	}
	return cfg, nil
}

// newProviders returns a provider per key of pc, in order.
func newProviders(pc providerConfig) ([]provider, error) {
	set := 0
	for _, p := range []bool{pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil, pc.KMS != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("Invalid value: exactly one of aesgcm, aescbc, secretbox, identity must be given, found %d", set)
	}
	switch {
	case pc.Identity != nil:
		return []provider{identity{}}, nil
	case pc.KMS != nil:
		return nil, fmt.Errorf("kms: Unsupported value: KMS providers are not supported by this server")
	case pc.AESGCM != nil:
		return keyedProviders("aesgcm", pc.AESGCM, []int{16, 24, 32}, newAESGCM)
	case pc.AESCBC != nil:
		return keyedProviders("aescbc", pc.AESCBC, []int{16, 24, 32}, newAESCBC)
	default:
		return keyedProviders("secretbox", pc.Secretbox, []int{32}, newSecretbox)
	}
}

// keyedProviders decodes and checks a provider's keys and makes one
// provider per key.
func keyedProviders(kind string, kc *keysConfig, sizes []int, build func(prefix string, key []byte) (provider, error)) ([]provider, error) {
	if len(kc.Keys) == 0 {
		return nil, fmt.Errorf("%s.keys: Required value: at least one key", kind)
	}
	seen := map[string]bool{}
	var out []provider
	for i, k := range kc.Keys {
		at := fmt.Sprintf("%s.keys[%d]", kind, i)
		if k.Name == "" {
			return nil, fmt.Errorf("%s.name: Required value", at)
		}
		if strings.Contains(k.Name, ":") {
			return nil, fmt.Errorf("%s.name: Invalid value: %q: may not contain ':'", at, k.Name)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("%s.name: Duplicate value: %q", at, k.Name)
		}
		seen[k.Name] = true
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s.secret: Invalid value: REDACTED: secrets must be base64 encoded", at)
		}
		if !containsInt(sizes, len(secret)) {
			return nil, fmt.Errorf("%s.secret: Invalid value: REDACTED: secret is not of the expected length, got %d, expected one of %v", at, len(secret), sizes)
		}
		p, err := build("k8s:enc:"+kind+":v1:"+k.Name+":", secret)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// For returns the transformer of a resource (group "" for the core
// group), nil when no entry covers it (values stored as they are). The
// first entry that names it, or a wildcard of its group ("*.apps", "*."
// for the core group) or "*.*", wins, as upstream.
func (c *Config) For(group, plural string) *Transformer {
	if c == nil {
		return nil
	}
	name := plural
	if group != "" {
		name = plural + "." + group
	}
	for _, r := range c.rules {
		for _, pattern := range r.resources {
			if pattern == name || pattern == "*."+group || pattern == "*.*" {
				return r.transformer
			}
		}
	}
	return nil
}
