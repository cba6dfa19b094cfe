// Command recordopenapi records pkg/openapi/facts.json from a
// running kube-apiserver: for each schema of its OpenAPI v3 documents of
// the group versions watchcache serves, the facts (see factKeys) whose
// values differ from the schema watchcache reflects from the Go types, and
// likewise for the schema's properties and their items and
// additionalProperties. Run it from the repository's root against the
// kube-apiserver release watchcache matches:
//
//	go run ./pkg/openapi/internal/recordopenapi -kubeconfig <kube-apiserver's kubeconfig>
//
// Tests do not run it; they read the recorded file.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/openapi"
	"github.com/watchcache/watchcache/pkg/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// factKeys are the schema keys recorded: what only the types' comments'
// markers give.
var factKeys = []string{
	"default", "description", "enum", "required",
	"x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-unions",
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the kube-apiserver to record from")
	out := flag.String("out", "pkg/openapi/facts.json", "file to write")
	flag.Parse()
	if *kubeconfig == "" {
		log.Fatal("-kubeconfig is required")
	}
	if err := record(*kubeconfig, *out); err != nil {
		log.Fatal(err)
	}
}

func record(kubeconfig, out string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	paths, err := client.OpenAPIV3().Paths()
	if err != nil {
		return err
	}
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		return err
	}
	ours, err := openapi.ReflectedSchemas(reg)
	if err != nil {
		return err
	}
	facts := map[string]map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(ours)) {
		gv, ok := paths[key]
		if !ok {
			return fmt.Errorf("kube-apiserver has no OpenAPI document %s", key)
		}
		body, err := gv.Schema(runtime.ContentTypeJSON)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		var doc struct {
			Components struct{ Schemas map[string]map[string]any }
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		for name, theirs := range doc.Components.Schemas {
			if schema, ok := ours[key][name]; ok {
				f := diffFacts(schema, theirs)
				if prev, seen := facts[name]; seen && !reflect.DeepEqual(prev, f) {
					return fmt.Errorf("%s differs between kube-apiserver's documents", name)
				}
				facts[name] = f
			}
		}
	}
	maps.DeleteFunc(facts, func(_ string, f map[string]any) bool { return f == nil })
	data, err := encodeFacts(facts)
	if err != nil {
		return err
	}
	log.Printf("%d schemas, %d bytes", len(facts), len(data))
	return os.WriteFile(out, data, 0o644)
}

// diffFacts returns the facts that turn the schema ours into
// kube-apiserver's theirs: the factKeys whose values differ (null where
// theirs has none) and those of the properties, items and
// additionalProperties both have; nil if none.
func diffFacts(ours, theirs map[string]any) map[string]any {
	facts := map[string]any{}
	for _, key := range factKeys {
		if !reflect.DeepEqual(ours[key], theirs[key]) {
			facts[key] = theirs[key]
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		o, _ := ours[key].(map[string]any)
		t, _ := theirs[key].(map[string]any)
		if o == nil || t == nil {
			continue
		}
		if f := diffFacts(o, t); f != nil {
			facts[key] = f
		}
	}
	oursProps, _ := ours["properties"].(map[string]any)
	theirProps, _ := theirs["properties"].(map[string]any)
	props := map[string]any{}
	for name, t := range theirProps {
		o, ok := oursProps[name].(map[string]any)
		if !ok {
			continue
		}
		t, _ := t.(map[string]any)
		if f := diffFacts(o, t); f != nil {
			props[name] = f
		}
	}
	if len(props) > 0 {
		facts["properties"] = props
	}
	if len(facts) == 0 {
		return nil
	}
	return facts
}

// encodeFacts encodes facts by schema name as one JSON object of a schema
// a line, in order, HTML characters unescaped: small and diffable.
func encodeFacts(facts map[string]map[string]any) ([]byte, error) {
	var b strings.Builder
	b.WriteString("{")
	for i, name := range slices.Sorted(maps.Keys(facts)) {
		var line strings.Builder
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{name: facts[name]}); err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString(",")
		}
		entry := strings.TrimSpace(line.String())
		b.WriteString("\n" + entry[1:len(entry)-1]) // without its braces
	}
	b.WriteString("\n}\n")
	return []byte(b.String()), nil
}
