// Package crdfile applies the CustomResourceDefinitions of the server's
// --resources file (YAML or JSON documents, as users keep them for kubectl
// apply) through the server's API once it serves, and waits until each is
// established, as kubectl apply followed by kubectl wait
// --for=condition=Established would against kube-apiserver (whose
// apiextensions-apiserver has no such file). Package testenv reads its
// definition files with Read too.
package crdfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// crdsResource is the resource of CustomResourceDefinitions.
var crdsResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdEstablishTimeout bounds the wait for the --resources file's
// definitions to be served.
const crdEstablishTimeout = 30 * time.Second

// ReadFile reads the CustomResourceDefinitions of a --resources file:
// YAML or JSON documents, each a CustomResourceDefinition (as users keep
// them for kubectl apply).
func ReadFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads CustomResourceDefinitions from YAML or JSON documents; name
// names the input in errors.
func Read(r io.Reader, name string) ([]*unstructured.Unstructured, error) {
	path := name
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if obj == nil {
			continue // an empty document
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() != "apiextensions.k8s.io/v1" || u.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: %s %q is not an apiextensions.k8s.io/v1 CustomResourceDefinition", path, u.GetKind(), u.GetName())
		}
		out = append(out, u)
	}
}

// Apply creates or updates definitions through the server's API, as the
// administrator (whose kubeconfig file is kubeconfig), and waits until each
// is established. servingCert, if not empty, is the serving certificate
// file (not signed by the generated CA, so not in the kubeconfig): the
// client trusts it.
func Apply(ctx context.Context, kubeconfig string, defs []*unstructured.Unstructured, servingCert string) error {
	if len(defs) == 0 {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	if servingCert != "" {
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = servingCert, nil
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.Resource(crdsResource)
	for _, def := range defs {
		_, err := crds.Create(ctx, def, metav1.CreateOptions{FieldValidation: "Strict"})
		if apierrors.IsAlreadyExists(err) {
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := crds.Get(ctx, def.GetName(), metav1.GetOptions{})
				if err != nil {
					return err
				}
				def.SetResourceVersion(cur.GetResourceVersion())
				_, err = crds.Update(ctx, def, metav1.UpdateOptions{FieldValidation: "Strict"})
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("custom resource definition %s: %w", def.GetName(), err)
		}
	}
	// Reads at any resourceVersion: served from the watch cache without
	// waiting for it to be fresh; the conditions come soon after.
	pending := map[string]bool{}
	for _, def := range defs {
		pending[def.GetName()] = true
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := crds.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, cur := range list.Items {
			if established(&cur) == "True" {
				delete(pending, cur.GetName())
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("custom resource definitions %v are not established: %w", slices.Sorted(maps.Keys(pending)), err)
	}
	return nil
}

// established is a definition's Established condition's status.
func established(def *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(def.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == "Established" {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
