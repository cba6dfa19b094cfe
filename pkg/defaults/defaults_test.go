package defaults

import (
	"reflect"
	"testing"
)

func TestImagePullPolicy(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                            "Always",
		"nginx:latest":                     "Always",
		"nginx:1.27":                       "IfNotPresent",
		"registry:5000/nginx":              "Always",
		"registry:5000/team/nginx:1.27":    "IfNotPresent",
		"nginx@sha256:0123":                "IfNotPresent",
		"nginx:latest@sha256:0123":         "Always",
		"registry:5000/nginx@sha256:01234": "IfNotPresent",
	} {
		c := map[string]any{"image": image}
		defaultImagePullPolicy(c)
		if c["imagePullPolicy"] != want {
			t.Errorf("%s: %v, want %s", image, c["imagePullPolicy"], want)
		}
	}
}

// A value rule fills only missing fields, never creates the object it
// fills, and goes into every element of a list.
func TestRules(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"containers": []any{
			map[string]any{"name": "a", "readinessProbe": map[string]any{"periodSeconds": int64(5)}},
			map[string]any{"name": "b"},
		},
	}}
	apply(obj, under("spec", under("containers[]", under("readinessProbe", probe))))
	want := map[string]any{"spec": map[string]any{
		"containers": []any{
			map[string]any{"name": "a", "readinessProbe": map[string]any{"periodSeconds": int64(5), "timeoutSeconds": int64(1),
				"successThreshold": int64(1), "failureThreshold": int64(3)}},
			map[string]any{"name": "b"},
		},
	}}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("got %v\nwant %v", obj, want)
	}
}

func TestQOSClass(t *testing.T) {
	res := func(requests, limits map[string]any) map[string]any {
		r := map[string]any{}
		if requests != nil {
			r["requests"] = requests
		}
		if limits != nil {
			r["limits"] = limits
		}
		return map[string]any{"resources": r}
	}
	both := map[string]any{"cpu": "1", "memory": "1Gi"}
	for name, tc := range map[string]struct {
		containers []any
		want       string
	}{
		"none":           {[]any{res(nil, nil)}, "BestEffort"},
		"limits equal":   {[]any{res(both, both)}, "Guaranteed"},
		"limits only":    {[]any{res(nil, both)}, "Guaranteed"},
		"requests only":  {[]any{res(both, nil)}, "Burstable"},
		"one without":    {[]any{res(both, both), res(nil, nil)}, "Burstable"},
		"requests lower": {[]any{res(map[string]any{"cpu": "500m", "memory": "1Gi"}, both)}, "Burstable"},
	} {
		pod := map[string]any{"spec": map[string]any{"containers": tc.containers}, "status": map[string]any{}}
		apply(pod, qosRules)
		if got := pod["status"].(map[string]any)["qosClass"]; got != tc.want {
			t.Errorf("%s: %v, want %s", name, got, tc.want)
		}
	}
}

// qosRules are the rules that decide a pod's QoS class: requests from
// limits, then the class.
var qosRules = []Rule{{Path: "spec.containers[]", Fn: defaultRequestsFromLimits}, {Path: "", Fn: setQOSClass}}
