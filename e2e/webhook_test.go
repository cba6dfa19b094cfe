package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionWebhooks: a test serves a mutating and a validating
// webhook over HTTPS; the server calls them on writes they select (rules,
// object selector), applies the mutating one's JSON patch, honors the
// validating one's refusal, and follows each webhook's failurePolicy when
// it cannot be called.
func TestAdmissionWebhooks(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "webhooks")
	var mu sync.Mutex
	var calls []string
	hooks := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		json.NewDecoder(r.Body).Decode(&review)
		req := review.Request
		mu.Lock()
		calls = append(calls, r.URL.Path+" "+string(req.Operation)+" "+req.Name+" "+req.UserInfo.Username)
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		var cm corev1.ConfigMap
		json.Unmarshal(req.Object.Raw, &cm)
		switch r.URL.Path {
		case "/mutate":
			patch := `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(patch), &pt
		case "/validate":
			if req.Operation == admissionv1.Delete {
				json.Unmarshal(req.OldObject.Raw, &cm)
			}
			if _, bad := cm.Data["forbidden"]; bad || req.Operation == admissionv1.Delete && cm.Data["keep"] == "yes" {
				resp.Allowed = false
				resp.Result = &metav1.Status{Message: "forbidden is forbidden", Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden}
			}
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	defer hooks.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hooks.Certificate().Raw})
	url := func(path string) *string { u := hooks.URL + path; return &u }
	none := admissionregistrationv1.SideEffectClassNone
	ignore, fail := admissionregistrationv1.Ignore, admissionregistrationv1.Fail
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
	selector := func(value string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": value}}
	}
	cs := clientset(t, cgConfig(nil))
	reg := cs.AdmissionregistrationV1()
	mutating, err := reg.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com", Rules: rules, ObjectSelector: selector(ns),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/mutate"), CABundle: caBundle},
			SideEffects:  &none, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.MutatingWebhookConfigurations().Delete(ctx, mutating.Name, metav1.DeleteOptions{})
	if mutating.Webhooks[0].TimeoutSeconds == nil || *mutating.Webhooks[0].TimeoutSeconds != 10 || *mutating.Webhooks[0].FailurePolicy != fail {
		t.Errorf("webhook defaults: %+v", mutating.Webhooks[0])
	}
	validating, err := reg.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "validate.example.com", Rules: rules, ObjectSelector: selector(ns), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/validate"), CABundle: caBundle}},
			{Name: "unreachable-ignored.example.com", Rules: rules, ObjectSelector: selector(ns), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				FailurePolicy: &ignore, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: strPtr("https://127.0.0.1:1/x"), CABundle: caBundle}},
			{Name: "unreachable.example.com", Rules: rules, ObjectSelector: selector(ns + "-failing"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				FailurePolicy: &fail, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: strPtr("https://127.0.0.1:1/x"), CABundle: caBundle}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.ValidatingWebhookConfigurations().Delete(ctx, validating.Name, metav1.DeleteOptions{})

	cms := cs.CoreV1().ConfigMaps(ns)
	labeled := func(name, value string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"webhook-test": value}}, Data: data}
	}
	cm, err := cms.Create(ctx, labeled("selected", ns, map[string]string{"a": "b"}), metav1.CreateOptions{})
	if err != nil || cm.Labels["mutated"] != "yes" {
		t.Fatalf("create through the webhooks: %+v, %v", cm, err)
	}
	mu.Lock()
	got := slices.Clone(calls)
	mu.Unlock()
	if len(got) != 2 || got[0] != "/mutate CREATE selected kubernetes-admin" || got[1] != "/validate CREATE selected kubernetes-admin" {
		t.Errorf("webhook calls: %q", got)
	}
	_, err = cms.Create(ctx, labeled("refused", ns, map[string]string{"forbidden": "x"}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "validate.example.com" denied the request: forbidden is forbidden`) {
		t.Errorf("a create the validating webhook refuses: %v", err)
	}
	cm.Data["forbidden"] = "x"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("an update the validating webhook refuses: %v", err)
	}
	if _, err := cms.Create(ctx, labeled("unselected", "other", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a create no webhook selects: %v", err)
	}
	_, err = cms.Create(ctx, labeled("failing", ns+"-failing", nil), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "unreachable.example.com"`) {
		t.Errorf("a create whose webhook (failurePolicy Fail) cannot be called: %v", err)
	}
	// A delete is asked about with the object as oldObject.
	if _, err := cms.Create(ctx, labeled("kept", ns, map[string]string{"keep": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "kept", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a delete the validating webhook refuses: %v", err)
	}
	if err := cms.Delete(ctx, "selected", metav1.DeleteOptions{}); err != nil {
		t.Errorf("a delete the validating webhook allows: %v", err)
	}
	if _, err := cms.Get(ctx, "refused", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused object was stored: %v", err)
	}
}

func strPtr(s string) *string { return &s }

// TestAdmissionWebhookMatchConditions: a webhook is called only for the
// writes its matchConditions (CEL over object, oldObject and request) all
// accept; a condition failing to evaluate refuses the write as
// kube-apiserver does (403, the conditions' errors) under failurePolicy
// Fail and skips the webhook under Ignore; a changed condition takes
// effect.
func TestAdmissionWebhookMatchConditions(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "hookconditions")
	var mu sync.Mutex
	var calls []string
	hooks := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		json.NewDecoder(r.Body).Decode(&review)
		mu.Lock()
		calls = append(calls, r.URL.Path+" "+review.Request.Name)
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if r.URL.Path == "/mutate" {
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(`[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`), &pt
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	defer hooks.Close()
	called := func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := calls
		calls = nil
		return got
	}
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hooks.Certificate().Raw})
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := hooks.URL + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
	}
	none := admissionregistrationv1.SideEffectClassNone
	ignore, fail := admissionregistrationv1.Ignore, admissionregistrationv1.Fail
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
	conditions := func(exprs ...string) []admissionregistrationv1.MatchCondition {
		var out []admissionregistrationv1.MatchCondition
		for i, e := range exprs {
			out = append(out, admissionregistrationv1.MatchCondition{Name: fmt.Sprintf("c%d", i), Expression: e})
		}
		return out
	}
	inNamespace := "request.namespace == '" + ns + "'"
	selector := func(value string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"conditions": value}}
	}
	cs := clientset(t, cgConfig(nil))
	reg := cs.AdmissionregistrationV1()
	mutating, err := reg.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "conditions-"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com", Rules: rules, ClientConfig: client("/mutate"),
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, ObjectSelector: selector("yes"),
			MatchConditions: conditions(inNamespace, "request.operation == 'CREATE'", "object.metadata.name.startsWith('hook-')")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.MutatingWebhookConfigurations().Delete(ctx, mutating.Name, metav1.DeleteOptions{})
	validating, err := reg.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "conditions-"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "validate.example.com", Rules: rules, ClientConfig: client("/validate"), SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"}, ObjectSelector: selector("yes"),
				MatchConditions: conditions(inNamespace, "oldObject == null || oldObject.data.v != object.data.v")},
			// Its condition errors on objects without data: it is skipped.
			{Name: "erring-ignored.example.com", Rules: rules, ClientConfig: client("/ignored"), SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"}, ObjectSelector: selector("yes"), FailurePolicy: &ignore,
				MatchConditions: conditions(inNamespace, "object.data.v == 'x'")},
			// Its conditions error before it would be called (unreachable).
			{Name: "erring.example.com", Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: strPtr("https://127.0.0.1:1/x"), CABundle: caBundle},
				ObjectSelector: selector("failing"), FailurePolicy: &fail,
				MatchConditions: conditions(inNamespace, "object.data.v == 'x'", "object.metadata.labels.missing == 'x'")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.ValidatingWebhookConfigurations().Delete(ctx, validating.Name, metav1.DeleteOptions{})
	// Admission reads the configurations from the cache, as this does.
	cached := func(generation int64) func() bool {
		return func() bool {
			m, err := reg.MutatingWebhookConfigurations().Get(ctx, mutating.Name, metav1.GetOptions{ResourceVersion: "0"})
			v, verr := reg.ValidatingWebhookConfigurations().Get(ctx, validating.Name, metav1.GetOptions{ResourceVersion: "0"})
			return err == nil && verr == nil && m.Generation == mutating.Generation && v.Generation == generation
		}
	}
	waitFor(t, "the cache to hold the configurations", cached(validating.Generation))

	cms := cs.CoreV1().ConfigMaps(ns)
	configMap := func(name, selected string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"conditions": selected}}, Data: data}
	}
	other, err := cms.Create(ctx, configMap("other", "yes", map[string]string{"v": "1"}), metav1.CreateOptions{})
	if err != nil || other.Labels["mutated"] != "" {
		t.Errorf("a create the mutating webhook's conditions exclude: %+v, %v", other, err)
	}
	if got := called(); !slices.Equal(got, []string{"/validate other"}) {
		t.Errorf("webhooks called on creating other: %q", got)
	}
	hook, err := cms.Create(ctx, configMap("hook-a", "yes", nil), metav1.CreateOptions{})
	if err != nil || hook.Labels["mutated"] != "yes" {
		t.Errorf("a create the mutating webhook's conditions select: %+v, %v", hook, err)
	}
	if got := called(); !slices.Equal(got, []string{"/mutate hook-a", "/validate hook-a"}) {
		t.Errorf("webhooks called on creating hook-a: %q", got)
	}
	// An update keeping data.v: the validating webhook's oldObject
	// condition is false; the mutating one's operation condition too.
	other.Labels["touched"] = "yes"
	if other, err = cms.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := called(); len(got) != 0 {
		t.Errorf("webhooks called on an update keeping data.v: %q", got)
	}

	_, err = cms.Create(ctx, configMap("failing", "failing", nil), metav1.CreateOptions{})
	want := `configmaps "failing" is forbidden: [expression 'object.data.v == 'x'' resulted in error: no such key: data, ` +
		`expression 'object.metadata.labels.missing == 'x'' resulted in error: no such key: missing]`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("a create whose webhook's conditions fail to evaluate (failurePolicy Fail):\n got %v\nwant %s", err, want)
	}
	// A false condition wins over one failing to evaluate.
	if _, err := cms.Create(ctx, configMap("failing", "failing", map[string]string{"v": "y"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("a create with a false condition and an erring one: %v", err)
	}
	if got := called(); len(got) != 0 {
		t.Errorf("webhooks called: %q", got)
	}

	// A changed condition takes effect.
	validating.Webhooks[0].MatchConditions = conditions(inNamespace, "object.metadata.name == 'other'")
	updated, err := reg.ValidatingWebhookConfigurations().Update(ctx, validating, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache to hold the changed configuration", cached(updated.Generation))
	if _, err := cms.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// (An update retried on a conflict is admitted again.)
	if got := slices.Compact(called()); !slices.Equal(got, []string{"/validate other"}) {
		t.Errorf("webhooks called after the condition changed: %q", got)
	}
}
