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

	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// transformers by the resources entries' names: a resource
	// ("secrets"), every resource of a group ("*.apps", "*." for the
	// core group) or of every group ("*.*").
	transformers map[schema.GroupResource]*Transformer
}

// anyResource is "*.*".
var anyResource = schema.GroupResource{Group: "*", Resource: "*"}

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

// parse checks f as kube-apiserver does and builds its transformers. As
// upstream, a resource named by several entries gets their providers one
// after the other, and a resource named after a wildcard entry that
// covers it is an error (the wildcard would mask it).
func parse(f *file) (*Config, error) {
	if f.Kind != "EncryptionConfiguration" || f.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("kind %q, apiVersion %q: want EncryptionConfiguration, apiserver.config.k8s.io/v1", f.Kind, f.APIVersion)
	}
	if len(f.Resources) == 0 {
		return nil, fmt.Errorf("resources: Required value: at least one resources entry")
	}
	providers := map[schema.GroupResource][]provider{}
	for i, rc := range f.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		if err := checkResources(rc.Resources); err != nil {
			return nil, fmt.Errorf("%s.resources%w", at, err)
		}
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("%s.providers: Required value: at least one provider", at)
		}
		var ps []provider
		for j, pc := range rc.Providers {
			p, err := newProviders(pc)
			if err != nil {
				return nil, fmt.Errorf("%s.providers[%d]: %w", at, j, err)
			}
			ps = append(ps, p...)
		}
		for j, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			for _, wildcard := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, anyResource} {
				if _, masked := providers[wildcard]; masked {
					return nil, fmt.Errorf("%s.resources[%d]: resource %q is masked by earlier rule %q", at, j, r, yamlName(wildcard))
				}
			}
			providers[gr] = append(providers[gr], ps...)
		}
	}
	cfg := &Config{transformers: map[schema.GroupResource]*Transformer{}}
	for gr, ps := range providers {
		cfg.transformers[gr] = &Transformer{providers: ps}
	}
	return cfg, nil
}

// checkResources checks one entry's resources as upstream; an error
// starts with the index at fault (or none for the whole list).
func checkResources(resources []string) error {
	if len(resources) == 0 {
		return fmt.Errorf(": Required value: at least one resource")
	}
	grs := make([]schema.GroupResource, len(resources))
	for j, r := range resources {
		grs[j] = schema.ParseGroupResource(r)
		var problem string
		switch gr := grs[j]; {
		case r == "" || r != strings.ToLower(r):
			problem = "must be a lowercase resource (plural.group)"
		case r == "*":
			problem = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
		case r == "apiserveripinfo" || r == "serviceipallocations" || r == "servicenodeportallocations":
			problem = "resources which do not have REST API/s cannot be encrypted"
		case gr.Group == "events.k8s.io":
			problem = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
		case gr.Group == "extensions":
			problem = "'extensions' group has been removed and cannot be used for encryption"
		case gr.Group == "*" && gr.Resource != "*":
			problem = "encrypting the same resource across groups is not supported"
		default:
			continue
		}
		return fmt.Errorf("[%d]: Invalid value: %q: %s", j, r, problem)
	}
	for j, a := range grs {
		for _, b := range grs[:j] {
			switch {
			case a == b:
				return fmt.Errorf(": Invalid value: %q: the same resource cannot be specified multiple times", resources)
			case a == anyResource || b == anyResource || a.Group == b.Group && (a.Resource == "*" || b.Resource == "*"):
				return fmt.Errorf(": Invalid value: %q: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked", resources)
			}
		}
	}
	return nil
}

// yamlName is how the configuration names gr ("*." for the core group's
// wildcard).
func yamlName(gr schema.GroupResource) string {
	if gr.Group == "" && gr.Resource == "*" {
		return "*."
	}
	return gr.String()
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
		if k.Secret == "" {
			return nil, fmt.Errorf("%s.secret: Required value: secret is a mandatory field for a key", at)
		}
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
// group), nil when no entry covers it (values stored as they are). As
// upstream, the resource's own name wins over its group's wildcard
// ("*.apps", "*." for the core group), which wins over "*.*" (Load
// refuses a name after a wildcard that covers it).
func (c *Config) For(group, plural string) *Transformer {
	if c == nil {
		return nil
	}
	for _, gr := range []schema.GroupResource{{Group: group, Resource: plural}, {Group: group, Resource: "*"}, anyResource} {
		if t := c.transformers[gr]; t != nil {
			return t
		}
	}
	return nil
}
