// The ServiceAccount plugin: a new pod runs as a ServiceAccount that exists
// (default: "default") and gets its API credentials as a projected volume;
// mirror pods reference no ServiceAccount and no Secret.

package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/podrefs"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

const (
	// mirrorPodAnnotation marks the pods a kubelet creates for its static
	// pods.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
	// tokenMountPath is where containers find their ServiceAccount's token,
	// the cluster's CA and their namespace.
	tokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenVolumePrefix starts the name of the projected volume of
	// credentials (a random 5-character suffix follows).
	tokenVolumePrefix = "kube-api-access-"
	// defaultAttempts is how many times the default ServiceAccount is read
	// before a pod that runs as it is refused: the namespace controller
	// creates it just after its namespace, and kube-apiserver waits for it
	// 10 times 100-200 ms (another ServiceAccount is read once).
	defaultAttempts = 10
)

// admitServiceAccount is the ServiceAccount plugin's mutating phase on a
// pod's create: a pod without serviceAccountName runs as "default"; the
// ServiceAccount must exist; unless the pod or the ServiceAccount opt out
// (automountServiceAccountToken: false, the pod's choice first), every
// container and init container that mounts nothing at tokenMountPath
// mounts there, read-only, the projected volume kube-api-access-<random>
// (a token for the ServiceAccount that expires in 3607 s, kube-root-ca.crt's
// ca.crt, the namespace), added once; a pod without imagePullSecrets gets
// the ServiceAccount's. Mirror pods are not changed, only validated.
func admitServiceAccount(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	if isMirrorPod(req.Object) {
		return validateServiceAccount(ctx, b, req)
	}
	spec := jsontree.Child(req.Object, "spec")
	if name, _ := spec["serviceAccountName"].(string); name == "" {
		// serviceAccount is the field's deprecated twin, kept equal to it.
		spec["serviceAccountName"], spec["serviceAccount"] = "default", "default"
	}
	sa, err := b.serviceAccount(ctx, req, spec["serviceAccountName"].(string))
	if err != nil {
		return err
	}
	if automount(sa, spec) {
		mountToken(spec)
	}
	if secrets, _ := spec["imagePullSecrets"].([]any); len(secrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		list := make([]any, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			list[i] = map[string]any{"name": s.Name}
		}
		spec["imagePullSecrets"] = list
	}
	return nil
}

// validateServiceAccount is the ServiceAccount plugin's validating phase
// on a pod's create: a mirror pod may not reference a ServiceAccount, a
// Secret or a token projection; another pod's ServiceAccount must exist.
// (Not here: the ServiceAccount annotation
// kubernetes.io/enforce-mountable-secrets, deprecated, and the checks of
// ephemeral containers added by the ephemeralcontainers subresource.)
func validateServiceAccount(ctx context.Context, b *Builtin, req *pipeline.Request) error {
	if req.Operation != admissionv1.Create {
		return nil
	}
	if !isMirrorPod(req.Object) {
		name, _ := jsontree.Child(req.Object, "spec")["serviceAccountName"].(string)
		if name == "" {
			return forbidden(req, fmt.Errorf("no service account specified for pod %s/%s", req.Namespace, req.Name))
		}
		_, err := b.serviceAccount(ctx, req, name)
		return err
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(req.Object, &pod); err != nil {
		return err
	}
	refs := podrefs.Of(&pod)
	switch {
	case refs.ServiceAccount != "":
		return forbidden(req, fmt.Errorf("a mirror pod may not reference service accounts"))
	case len(refs.Secrets) > 0:
		return forbidden(req, fmt.Errorf("a mirror pod may not reference secrets"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return forbidden(req, fmt.Errorf("a mirror pod may not use ServiceAccountToken volume projections"))
			}
		}
	}
	return nil
}

func isMirrorPod(pod map[string]any) bool {
	annotations, _ := jsontree.Child(pod, "metadata")["annotations"].(map[string]any)
	_, ok := annotations[mirrorPodAnnotation]
	return ok
}

// serviceAccount reads the ServiceAccount name of req's namespace: from
// the watch cache, then from etcd, the default one up to defaultAttempts
// times; none is kube-apiserver's 403.
func (b *Builtin) serviceAccount(ctx context.Context, req *pipeline.Request, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == "default" {
		attempts = defaultAttempts
	}
	wait := time.Duration(100+rand.IntN(100)) * time.Millisecond
	sa := &corev1.ServiceAccount{}
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		}
		found, err := b.getIn(ctx, "", "serviceaccounts", req.Namespace, name, sa)
		if found || err != nil {
			return sa, err
		}
	}
	return nil, forbidden(req, fmt.Errorf("error looking up service account %s/%s: serviceaccount %q not found", req.Namespace, name, name))
}

// automount reports whether a pod with spec, running as sa, mounts its
// credentials: the pod's automountServiceAccountToken, else sa's, else
// true.
func automount(sa *corev1.ServiceAccount, spec map[string]any) bool {
	if v, ok := spec["automountServiceAccountToken"].(bool); ok {
		return v
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the credentials' volume in spec's containers and init
// containers, reusing a volume named kube-api-access-* if spec has one.
func mountToken(spec map[string]any) {
	volumes, _ := spec["volumes"].([]any)
	name := ""
	for _, v := range volumes {
		if n, _ := v.(map[string]any)["name"].(string); strings.HasPrefix(n, tokenVolumePrefix) {
			name = n
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = tokenVolumePrefix + utilrand.String(5)
	}
	mounted := false
	for _, kind := range []string{"initContainers", "containers"} {
		containers, _ := spec[kind].([]any)
		for _, c := range containers {
			if mountsAt(c.(map[string]any), tokenMountPath) {
				continue
			}
			c := c.(map[string]any)
			mounts, _ := c["volumeMounts"].([]any)
			c["volumeMounts"] = append(mounts, map[string]any{"name": name, "readOnly": true, "mountPath": tokenMountPath})
			mounted = true
		}
	}
	if mounted && !hasVolume {
		spec["volumes"] = append(volumes, tokenVolume(name))
	}
}

func mountsAt(container map[string]any, path string) bool {
	mounts, _ := container["volumeMounts"].([]any)
	for _, m := range mounts {
		if m.(map[string]any)["mountPath"] == path {
			return true
		}
	}
	return false
}

// tokenVolume is the projected volume of a pod's credentials, as
// kube-apiserver's plugin makes it (defaultMode set: the volume is added
// after defaulting).
func tokenVolume(name string) map[string]any {
	return map[string]any{"name": name, "projected": map[string]any{
		"defaultMode": int64(corev1.ProjectedVolumeSourceDefaultMode),
		"sources": []any{
			map[string]any{"serviceAccountToken": map[string]any{"expirationSeconds": int64(3607), "path": "token"}},
			map[string]any{"configMap": map[string]any{"name": "kube-root-ca.crt",
				"items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}},
			map[string]any{"downwardAPI": map[string]any{"items": []any{map[string]any{"path": "namespace",
				"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}}},
		},
	}}
}
