package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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

// readCRDFile reads the CustomResourceDefinitions of a --resources file:
// YAML or JSON documents, each a CustomResourceDefinition (as users keep
// them for kubectl apply).
func readCRDFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
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

// applyCRDs creates or updates definitions through the server's API, as
// the administrator, and waits until each is established.
func (a *App) applyCRDs(ctx context.Context, defs []*unstructured.Unstructured) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		return err
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
	for _, def := range defs {
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
			cur, err := crds.Get(ctx, def.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return established(cur) == "True", nil
		})
		if err != nil {
			return fmt.Errorf("custom resource definition %s is not established: %w", def.GetName(), err)
		}
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
