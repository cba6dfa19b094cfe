package quota

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	pods     = For(schema.GroupResource{Resource: "pods"})
	services = For(schema.GroupResource{Resource: "services"})
	claims   = For(schema.GroupResource{Resource: "persistentvolumeclaims"})
)

// decode reads a JSON object for e.
func decode(t *testing.T, e *Evaluator, doc string) Object {
	t.Helper()
	obj, err := e.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// show prints a resource list as name=quantity, sorted.
func show(l corev1.ResourceList) string { return prettyPrint(l) }

// TestUsage: what objects use, as kube's evaluators measure it.
func TestUsage(t *testing.T) {
	now := time.Now()
	past := metav1.NewTime(now.Add(-time.Minute)).Format(time.RFC3339)
	for _, c := range []struct {
		name string
		e    *Evaluator
		doc  string
		want string
	}{
		{"pod without resources", pods, `{"spec":{"containers":[{"name":"c"}]}}`, "count/pods=1,pods=1"},
		{"pod: containers summed, init containers as their max, against the sum", pods, `{"spec":{
			"containers":[{"name":"c","resources":{"requests":{"cpu":"600m","memory":"1Gi"},"limits":{"memory":"512Mi"}}},
			              {"name":"d","resources":{"requests":{"cpu":"300m"},"limits":{"cpu":"1","memory":"256Mi"}}}],
			"initContainers":[{"name":"i","resources":{"requests":{"cpu":"950m","memory":"100Mi"},"limits":{"memory":"100Mi"}}}]}}`,
			"count/pods=1,cpu=950m,limits.cpu=1,limits.memory=768Mi,memory=1Gi,pods=1,requests.cpu=950m,requests.memory=1Gi"},
		{"pod: sidecar (restartable init container) added to the containers", pods, `{"spec":{
			"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}],
			"initContainers":[{"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}}]}}`,
			"count/pods=1,cpu=1500m,pods=1,requests.cpu=1500m"},
		{"pod: ephemeral storage, hugepages, extended resources", pods, `{"spec":{"containers":[{"name":"c","resources":{
			"requests":{"ephemeral-storage":"1Gi","hugepages-2Mi":"4Mi","example.com/gpu":"2"},"limits":{"ephemeral-storage":"2Gi","hugepages-2Mi":"4Mi","example.com/gpu":"2"}}}]}}`,
			"count/pods=1,ephemeral-storage=1Gi,hugepages-2Mi=4Mi,limits.ephemeral-storage=2Gi,pods=1,requests.ephemeral-storage=1Gi,requests.example.com/gpu=2,requests.hugepages-2Mi=4Mi"},
		{"pod: overhead", pods, `{"spec":{"overhead":{"cpu":"100m"},"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}`,
			"count/pods=1,cpu=1100m,pods=1,requests.cpu=1100m"},
		{"pod Succeeded: only counted", pods, `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Succeeded"}}`, "count/pods=1"},
		{"pod Failed: only counted", pods, `{"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Failed"}}`, "count/pods=1"},
		{"pod past its deletion grace period: only counted", pods,
			`{"metadata":{"deletionTimestamp":"` + past + `","deletionGracePeriodSeconds":30},"spec":{"containers":[{"name":"c"}]}}`, "count/pods=1"},
		{"pod within its deletion grace period", pods,
			`{"metadata":{"deletionTimestamp":"` + past + `","deletionGracePeriodSeconds":300},"spec":{"containers":[{"name":"c"}]}}`, "count/pods=1,pods=1"},
		{"ClusterIP Service", services, `{"spec":{"type":"ClusterIP","ports":[{"port":80},{"port":81}]}}`,
			"count/services=1,services=1,services.loadbalancers=0,services.nodeports=0"},
		{"NodePort Service: a node port per port", services, `{"spec":{"type":"NodePort","ports":[{"port":80},{"port":81}]}}`,
			"count/services=1,services=1,services.loadbalancers=0,services.nodeports=2"},
		{"LoadBalancer Service", services, `{"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`,
			"count/services=1,services=1,services.loadbalancers=1,services.nodeports=1"},
		{"LoadBalancer without node ports: those asked for", services,
			`{"spec":{"type":"LoadBalancer","allocateLoadBalancerNodePorts":false,"ports":[{"port":80},{"port":81,"nodePort":30001}]}}`,
			"count/services=1,services=1,services.loadbalancers=1,services.nodeports=1"},
		{"claim of a class", claims, `{"spec":{"storageClassName":"gold","resources":{"requests":{"storage":"600Mi"}}}}`,
			"count/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=600Mi,persistentvolumeclaims=1,requests.storage=600Mi"},
		{"claim: the beta annotation's class first; more allocated than requested", claims,
			`{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":"old"}},"spec":{"storageClassName":"gold","resources":{"requests":{"storage":"1Gi"}}},"status":{"allocatedResources":{"storage":"2Gi"}}}`,
			"count/persistentvolumeclaims=1,old.storageclass.storage.k8s.io/persistentvolumeclaims=1,old.storageclass.storage.k8s.io/requests.storage=2Gi,persistentvolumeclaims=1,requests.storage=2Gi"},
		{"claim: storage rounded up to whole bytes", claims, `{"spec":{"resources":{"requests":{"storage":"1500m"}}}}`,
			"count/persistentvolumeclaims=1,persistentvolumeclaims=1,requests.storage=2"},
		{"configmap: count and legacy name", For(schema.GroupResource{Resource: "configmaps"}), `{}`, "configmaps=1,count/configmaps=1"},
		{"deployment: count", For(schema.GroupResource{Group: "apps", Resource: "deployments"}), `{}`, "count/deployments.apps=1"},
	} {
		if got := show(c.e.Usage(decode(t, c.e, c.doc), now)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if For(schema.GroupResource{Resource: "events"}) != nil || For(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}) != nil ||
		For(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}) != nil {
		t.Error("events and reviews must not be counted")
	}
}

// TestScopes: which pods a quota's scopes and scope selectors count.
func TestScopes(t *testing.T) {
	best := `{"spec":{"containers":[{"name":"c"}]},"status":{"qosClass":"BestEffort"}}`
	burstable := `{"spec":{"priorityClassName":"high","containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}`
	deadline := `{"spec":{"activeDeadlineSeconds":60,"containers":[{"name":"c"}]}}`
	crossNS := `{"spec":{"containers":[{"name":"c"}],"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
		{"weight":1,"podAffinityTerm":{"topologyKey":"k","namespaceSelector":{}}}]}}}}`
	sel := func(op corev1.ScopeSelectorOperator, values ...string) *corev1.ScopeSelector {
		return &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}}}
	}
	for _, c := range []struct {
		scopes []corev1.ResourceQuotaScope
		sel    *corev1.ScopeSelector
		in     []string // of best, burstable, deadline, crossNS
	}{
		{nil, nil, []string{"best", "burstable", "deadline", "crossNS"}},
		{[]corev1.ResourceQuotaScope{"BestEffort"}, nil, []string{"best", "deadline", "crossNS"}},
		{[]corev1.ResourceQuotaScope{"NotBestEffort"}, nil, []string{"burstable"}},
		{[]corev1.ResourceQuotaScope{"Terminating"}, nil, []string{"deadline"}},
		{[]corev1.ResourceQuotaScope{"NotTerminating", "BestEffort"}, nil, []string{"best", "crossNS"}},
		{[]corev1.ResourceQuotaScope{"CrossNamespacePodAffinity"}, nil, []string{"crossNS"}},
		{nil, sel(corev1.ScopeSelectorOpIn, "high", "low"), []string{"burstable"}},
		{nil, sel(corev1.ScopeSelectorOpNotIn, "high"), []string{"best", "deadline", "crossNS"}},
		{nil, sel(corev1.ScopeSelectorOpExists), []string{"burstable"}},
		{nil, sel(corev1.ScopeSelectorOpDoesNotExist), []string{"best", "deadline", "crossNS"}},
	} {
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: c.scopes, ScopeSelector: c.sel},
			Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"pods": resource.MustParse("9")}}}
		var in []string
		for _, p := range []struct{ name, doc string }{{"best", best}, {"burstable", burstable}, {"deadline", deadline}, {"crossNS", crossNS}} {
			ok, err := pods.matches(q, decode(t, pods, p.doc))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				in = append(in, p.name)
			}
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("scopes %v %v: count %v, want %v", c.scopes, c.sel, in, c.in)
		}
	}
	// A scoped quota counts no object of a kind without scopes.
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"BestEffort"}},
		Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"services": resource.MustParse("9")}}}
	if ok, _ := services.matches(q, decode(t, services, `{}`)); ok {
		t.Error("a BestEffort quota counts a Service")
	}
}

// TestCheck: a write against quotas: refused with kube-apiserver's words,
// or the quotas with its usage added; an update charged what it adds.
func TestCheck(t *testing.T) {
	now := time.Now()
	quota := func(name, hard, used string) corev1.ResourceQuota {
		q := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}}
		parse := func(s string) corev1.ResourceList {
			if s == "-" {
				return nil
			}
			l := corev1.ResourceList{}
			for kv := range strings.SplitSeq(s, ",") {
				k, v, _ := strings.Cut(kv, "=")
				l[corev1.ResourceName(k)] = resource.MustParse(v)
			}
			return l
		}
		q.Status.Hard, q.Status.Used = parse(hard), parse(used)
		return q
	}
	pod := decode(t, pods, `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m"},"limits":{"memory":"1Gi"}}}]}}`)
	for _, c := range []struct {
		name   string
		quotas []corev1.ResourceQuota
		w      Write
		want   string // the refusal, or the quotas' used after
	}{
		{"no status yet: nothing counted", []corev1.ResourceQuota{quota("q", "-", "-")}, Write{Evaluator: pods, Obj: pod}, "q: map[]"},
		{"room", []corev1.ResourceQuota{quota("q", "pods=2,requests.cpu=1", "pods=1,requests.cpu=500m")}, Write{Evaluator: pods, Obj: pod},
			"q: pods=2,requests.cpu=1"},
		{"exceeded", []corev1.ResourceQuota{quota("a", "pods=5", "pods=0"), quota("q", "pods=2,requests.cpu=1", "pods=1,requests.cpu=600m")},
			Write{Evaluator: pods, Obj: pod}, "exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"},
		{"status unknown", []corev1.ResourceQuota{quota("q", "pods=2,requests.cpu=1", "pods=1")}, Write{Evaluator: pods, Obj: pod},
			"status unknown for quota: q, resources: pods,requests.cpu"},
		{"must specify", []corev1.ResourceQuota{quota("q", "limits.cpu=2,requests.memory=1Gi", "limits.cpu=0,requests.memory=0")}, Write{Evaluator: pods, Obj: pod},
			"failed quota: q: must specify limits.cpu for: c; requests.memory for: c"},
		{"a quota of other resources", []corev1.ResourceQuota{quota("q", "services=0", "services=0")}, Write{Evaluator: pods, Obj: pod}, "q: services=0"},
		{"update: only the node ports added", []corev1.ResourceQuota{quota("q", "services=1,services.nodeports=2", "services=1,services.nodeports=0")},
			Write{Evaluator: services, Update: true, Obj: decode(t, services, `{"spec":{"type":"NodePort","ports":[{"port":80}]}}`),
				Old: decode(t, services, `{"spec":{"type":"ClusterIP","ports":[{"port":80}]}}`)}, "q: services=1,services.nodeports=1"},
		{"update that frees nothing and adds nothing", []corev1.ResourceQuota{quota("q", "services.nodeports=0", "services.nodeports=0")},
			Write{Evaluator: services, Update: true, Obj: decode(t, services, `{"spec":{"type":"ClusterIP"}}`),
				Old: decode(t, services, `{"spec":{"type":"NodePort","ports":[{"port":80}]}}`)}, "q: services.nodeports=0"},
		{"resize of a claim", []corev1.ResourceQuota{quota("q", "requests.storage=2Gi", "requests.storage=1Gi")},
			Write{Evaluator: claims, Update: true, Obj: decode(t, claims, `{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}`),
				Old: decode(t, claims, `{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`)},
			"exceeded quota: q, requested: requests.storage=2Gi, used: requests.storage=1Gi, limited: requests.storage=2Gi"},
	} {
		before := fmt.Sprint(c.quotas)
		out, err := Check(c.quotas, c.w, now)
		var got string
		if err != nil {
			if _, ok := err.(*Refusal); !ok {
				t.Errorf("%s: %T %v, want a *Refusal", c.name, err, err)
			}
			got = err.Error()
		} else {
			got = out[len(out)-1].Name + ": " + show(out[len(out)-1].Status.Used)
			if got == c.quotas[len(out)-1].Name+": " {
				got += "map[]"
			}
		}
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if fmt.Sprint(c.quotas) != before {
			t.Errorf("%s: Check changed its input", c.name)
		}
	}
}

// TestUsed: the controller's usage of a quota: its hard resources that an
// evaluator measures, over the objects in its scopes.
func TestUsed(t *testing.T) {
	objs := map[schema.GroupResource][]string{
		{Resource: "pods"}: {`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}`,
			`{"spec":{"containers":[{"name":"c"}]},"status":{"qosClass":"BestEffort"}}`,
			`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]},"status":{"phase":"Succeeded"}}`},
		{Resource: "configmaps"}:                 {`{}`, `{}`},
		{Group: "apps", Resource: "deployments"}: {`{}`},
	}
	schema0, err := object.NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	list := func(gr schema.GroupResource) ([]*object.Object, error) {
		var out []*object.Object
		for i, doc := range objs[gr] {
			meta := fmt.Sprintf(`{"metadata":{"name":"o%d","namespace":"ns"}`, i)
			if doc != "{}" {
				meta += ","
			}
			o, _, err := object.Decode(schema0, fmt.Sprint("ns/o", i), []byte(meta+doc[1:]), 1)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	}
	evaluators := []*Evaluator{pods, services, claims, For(schema.GroupResource{Resource: "configmaps"}), For(schema.GroupResource{Group: "apps", Resource: "deployments"})}
	for _, c := range []struct {
		hard   string
		scopes []corev1.ResourceQuotaScope
		want   string
	}{
		{"pods,count/pods,requests.cpu,configmaps,count/deployments.apps,services,foo", nil,
			"configmaps=2,count/deployments.apps=1,count/pods=3,pods=2,requests.cpu=1,services=0"},
		{"pods,count/configmaps", []corev1.ResourceQuotaScope{"NotBestEffort"}, "count/configmaps=0,pods=1"},
	} {
		hard := corev1.ResourceList{}
		for n := range strings.SplitSeq(c.hard, ",") {
			hard[corev1.ResourceName(n)] = resource.MustParse("10")
		}
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: c.scopes}}
		used, err := Used(q, evaluators, list, time.Now())
		if err != nil || show(used) != c.want {
			t.Errorf("%s %v: used %s, %v; want %s", c.hard, c.scopes, show(used), err, c.want)
		}
	}
}

// TestCountedResource: count/<resource>.<group> names its resource.
func TestCountedResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]string{"count/pods": "pods", "count/deployments.apps": "deployments.apps",
		"count/widgets.example.com": "widgets.example.com", "pods": "-", "count/": "-"} {
		gr, ok := CountedResource(name)
		got := "-"
		if ok {
			got = gr.String()
			if CountName(gr) != name {
				t.Errorf("CountName(%v) = %s", gr, CountName(gr))
			}
		}
		if got != want {
			t.Errorf("CountedResource(%s) = %s, want %s", name, got, want)
		}
	}
}
