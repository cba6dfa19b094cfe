package strategy

import (
	"encoding/json"
	"testing"

	"github.com/watchcache/watchcache/pkg/resource"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

var (
	deployments = &resource.Resource{Group: "apps", Kind: "Deployment", Plural: "deployments", Status: true, Generation: true, GenerationAnnotations: true, Scale: true,
		StrategicMergeType: appsv1.Deployment{}}
	namespaces = &resource.Resource{Kind: "Namespace", Plural: "namespaces", Status: true, StrategicMergeType: corev1.Namespace{}}
	widgets    = &resource.Resource{Group: "example.com", Kind: "Widget", Plural: "widgets", Status: true}
	services   = &resource.Resource{Kind: "Service", Status: true}
	rcs        = &resource.Resource{Kind: "ReplicationController", Status: true, Generation: true, Scale: true}
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func TestPrepareForCreate(t *testing.T) {
	obj := decode(t, `{"metadata":{"name":"d","generation":7},"spec":{"replicas":2},"status":{"replicas":5}}`)
	PrepareForCreate(deployments, obj)
	if got := encode(obj); got != `{"metadata":{"generation":1,"name":"d"},"spec":{"replicas":2}}` {
		t.Errorf("deployment: %s", got)
	}
	obj = decode(t, `{"metadata":{"name":"s"},"spec":{},"status":{"loadBalancer":{}}}`)
	PrepareForCreate(services, obj)
	if got := encode(obj); got != `{"metadata":{"name":"s"},"spec":{}}` {
		t.Errorf("service: %s", got)
	}
	plain := &resource.Resource{Kind: "ConfigMap"}
	obj = decode(t, `{"metadata":{"name":"c"},"status":{"x":1}}`)
	PrepareForCreate(plain, obj)
	if got := encode(obj); got != `{"metadata":{"name":"c"},"status":{"x":1}}` {
		t.Errorf("a kind without status subresource: %s", got)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	old := `{"metadata":{"name":"d","generation":3,"labels":{"a":"1"},"resourceVersion":"10"},"spec":{"replicas":2},"status":{"replicas":2}}`
	for _, tc := range []struct {
		res                  *resource.Resource
		name, sub, obj, want string
	}{
		{deployments, "spec change: status kept, generation up", "", `{"metadata":{"name":"d","generation":99},"spec":{"replicas":3},"status":{"replicas":9}}`,
			`{"metadata":{"generation":4,"name":"d"},"spec":{"replicas":3},"status":{"replicas":2}}`},
		{deployments, "metadata only: generation kept", "", `{"metadata":{"name":"d","labels":{"b":"2"}},"spec":{"replicas":2}}`,
			`{"metadata":{"generation":3,"labels":{"b":"2"},"name":"d"},"spec":{"replicas":2},"status":{"replicas":2}}`},
		{deployments, "status: a deployment's labels and spec reset", "status", `{"metadata":{"name":"d","generation":9,"labels":{"b":"2"},"annotations":{"a":"b"},"finalizers":["f/g"],"resourceVersion":"10"},"spec":{"replicas":7},"status":{"replicas":1}}`,
			`{"metadata":{"annotations":{"a":"b"},"finalizers":["f/g"],"generation":3,"labels":{"a":"1"},"name":"d","resourceVersion":"10"},"spec":{"replicas":2},"status":{"replicas":1}}`},
		{namespaces, "status: a namespace's metadata kept", "status", `{"metadata":{"name":"d","labels":{"b":"2"},"annotations":{"a":"b"}},"spec":{"replicas":7},"status":{"replicas":1}}`,
			`{"metadata":{"annotations":{"a":"b"},"generation":3,"labels":{"b":"2"},"name":"d"},"spec":{"replicas":2},"status":{"replicas":1}}`},
		{widgets, "status: a custom resource's metadata reset", "status", `{"metadata":{"name":"d","labels":{"b":"2"},"annotations":{"a":"b"},"managedFields":[]},"spec":{"replicas":7},"status":{"replicas":1}}`,
			`{"metadata":{"generation":3,"labels":{"a":"1"},"managedFields":[],"name":"d"},"spec":{"replicas":2},"status":{"replicas":1}}`},
		{deployments, "status removed through /status", "status", `{"metadata":{"name":"d"},"spec":{}}`,
			`{"metadata":{"generation":3,"labels":{"a":"1"},"name":"d"},"spec":{"replicas":2}}`},
		{deployments, "a deployment's annotations: generation up", "", `{"metadata":{"name":"d","annotations":{"a":"1"}},"spec":{"replicas":2}}`,
			`{"metadata":{"annotations":{"a":"1"},"generation":4,"name":"d"},"spec":{"replicas":2},"status":{"replicas":2}}`},
		{rcs, "another kind's annotations: generation kept", "", `{"metadata":{"name":"d","annotations":{"a":"1"}},"spec":{"replicas":2}}`,
			`{"metadata":{"annotations":{"a":"1"},"generation":3,"name":"d"},"spec":{"replicas":2},"status":{"replicas":2}}`},
	} {
		obj := decode(t, tc.obj)
		oldMap := decode(t, old)
		PrepareForUpdate(tc.res, tc.sub, obj, oldMap)
		if got := encode(obj); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if encode(oldMap) != encode(decode(t, old)) {
			t.Errorf("%s: old changed", tc.name)
		}
	}
}

func TestScale(t *testing.T) {
	s, err := ScaleOf(deployments, []byte(`{"metadata":{"name":"d","namespace":"ns","resourceVersion":"5"},"spec":{"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]}]}},"status":{"replicas":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "Scale" || s.APIVersion != "autoscaling/v1" || s.Name != "d" || s.ResourceVersion != "5" || s.Spec.Replicas != 1 ||
		s.Status.Replicas != 2 || s.Status.Selector != "app=web,tier in (a,b)" {
		t.Errorf("deployment scale: %+v", s)
	}
	s, err = ScaleOf(rcs, []byte(`{"metadata":{"name":"r"},"spec":{"replicas":4,"selector":{"app":"web"}}}`))
	if err != nil || s.Spec.Replicas != 4 || s.Status.Selector != "app=web" {
		t.Errorf("rc scale: %+v %v", s, err)
	}
	if _, err := ScaleOf(deployments, []byte(`{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}`)); err == nil {
		t.Error("a bad selector gave a scale")
	}
	obj := decode(t, `{"metadata":{"name":"d"}}`)
	SetReplicas(deployments, obj, 3)
	if got := encode(obj); got != `{"metadata":{"name":"d"},"spec":{"replicas":3}}` {
		t.Errorf("SetReplicas: %s", got)
	}

	// A custom resource's scale is at the paths its definition gives.
	custom := &resource.Resource{Group: "example.com", Version: "v1", Kind: "Pool", Plural: "pools",
		ScalePaths: &resource.ScalePaths{SpecReplicas: "spec.size", StatusReplicas: "status.ready", LabelSelector: "status.selector"}}
	s, err = ScaleOf(custom, []byte(`{"metadata":{"name":"p","resourceVersion":"7"},"spec":{"size":5},"status":{"ready":2,"selector":"app=pool"}}`))
	if err != nil || s.Spec.Replicas != 5 || s.Status.Replicas != 2 || s.Status.Selector != "app=pool" || s.ResourceVersion != "7" {
		t.Errorf("custom scale: %+v %v", s, err)
	}
	obj = decode(t, `{"metadata":{"name":"p"}}`)
	SetReplicas(custom, obj, 4)
	if got := encode(obj); got != `{"metadata":{"name":"p"},"spec":{"size":4}}` {
		t.Errorf("SetReplicas of a custom resource: %s", got)
	}
}
