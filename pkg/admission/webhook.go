// Package admission holds the admission stages of the write pipeline
// (package pipeline), as kube-apiserver's admission plugins: the built-in
// plugins that read other objects (builtin.go), MutatingAdmissionPolicy
// (mutation.go), ValidatingAdmissionPolicy (policy.go) and the admission
// webhooks; stages.go gives each phase of them as a stage.
//
// The webhooks of the stored MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations are called on writes as kube-apiserver
// does: webhooks matched by their rules,
// namespace and object selectors, sent an admission.k8s.io/v1
// AdmissionReview over HTTPS (URL or service clients, caBundle), bounded
// by timeoutSeconds, their failurePolicy deciding what a failed call
// does; mutating webhooks' JSON patches are applied in order, validating
// webhooks may refuse. Configurations are read from the watch cache on
// each write.
//
// Webhooks' matchConditions are compiled as the policies' conditions are
// (conditions.go). Not here: reinvocation, matchPolicy Equivalent,
// mutating webhooks on DELETE (validating ones are called),
// deletecollection and CONNECT.
package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	kjson "sigs.k8s.io/json"
)

// Webhooks calls the webhooks of the configurations in Registry's stores.
type Webhooks struct {
	Registry *resource.Registry

	mu         sync.Mutex
	clients    map[string]*http.Client // by caBundle
	policies   policyCache
	mutations  mutationCache
	conditions conditionCache // of the webhooks
}

// defaultTimeout is a webhook's timeoutSeconds when it gives none.
const defaultTimeout = 10 * time.Second

// mutate calls the mutating webhooks that match req in order, and returns
// the object as they changed it.
func (w *Webhooks) mutate(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	obj := req.Object
	var configs []admissionregistrationv1.MutatingWebhookConfiguration
	if err := w.list(ctx, "mutatingwebhookconfigurations", &configs, req); err != nil || len(configs) == 0 {
		return obj, err
	}
	for _, c := range configs {
		for i, hook := range c.Webhooks {
			h := webhook{hook.Name, hook.ClientConfig, hook.Rules, hook.FailurePolicy, hook.NamespaceSelector, hook.ObjectSelector,
				hook.SideEffects, hook.TimeoutSeconds, hook.AdmissionReviewVersions, w.conditions.get(&c.ObjectMeta, i, hook.MatchConditions)}
			r := *req
			r.Object = obj
			resp, err := w.call(ctx, &h, &r)
			if err != nil {
				return nil, err
			}
			if resp == nil || resp.Patch == nil {
				continue
			}
			if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				return nil, h.failed(fmt.Errorf("unsupported patch type %v", resp.PatchType))
			}
			if obj, err = applyJSONPatch(obj, resp.Patch); err != nil {
				return nil, h.failed(err)
			}
		}
	}
	return obj, nil
}

// validate calls the validating webhooks that match req (in
// kube-apiserver at once; here in order), and returns the first refusal.
func (w *Webhooks) validate(ctx context.Context, req *pipeline.Request) error {
	var configs []admissionregistrationv1.ValidatingWebhookConfiguration
	if err := w.list(ctx, "validatingwebhookconfigurations", &configs, req); err != nil {
		return err
	}
	for _, c := range configs {
		for i, hook := range c.Webhooks {
			h := webhook{hook.Name, hook.ClientConfig, hook.Rules, hook.FailurePolicy, hook.NamespaceSelector, hook.ObjectSelector,
				hook.SideEffects, hook.TimeoutSeconds, hook.AdmissionReviewVersions, w.conditions.get(&c.ObjectMeta, i, hook.MatchConditions)}
			if _, err := w.call(ctx, &h, req); err != nil {
				return err
			}
		}
	}
	return nil
}

// list reads the configurations of a resource, in name order; none for
// writes of the configurations themselves (which webhooks never see).
func (w *Webhooks) list(ctx context.Context, plural string, out any, req *pipeline.Request) error {
	if req.Resource.Group == "admissionregistration.k8s.io" {
		return nil
	}
	return listObjects(ctx, w.Registry, w.Registry.Lookup("admissionregistration.k8s.io", "v1", plural), "", out)
}

// webhook is what mutating and validating webhooks have in common.
type webhook struct {
	name                    string
	client                  admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	conditions              *webhookConditions // nil: none
}

// call sends req to h if h matches it and returns h's response (nil if
// it does not match, or failed and is ignored); a refusal or a failure
// that fails the request is the error. Its matchConditions are evaluated
// after its rules and selectors; one that fails to evaluate refuses the
// request (Forbidden, with the conditions' errors) unless the webhook's
// failurePolicy is Ignore, which skips it.
func (w *Webhooks) call(ctx context.Context, h *webhook, req *pipeline.Request) (*admissionv1.AdmissionResponse, error) {
	matched, err := w.matches(ctx, h, req)
	if err != nil || !matched {
		return nil, err
	}
	if h.conditions != nil {
		matched, err := h.conditions.match(req)
		if err != nil {
			if h.ignoresFailure() {
				return nil, nil
			}
			return nil, apierrors.NewForbidden(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Plural}, req.Name, err)
		}
		if !matched {
			return nil, nil
		}
	}
	if req.DryRun && h.sideEffects != nil && *h.sideEffects != admissionregistrationv1.SideEffectClassNone &&
		*h.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.name))
	}
	resp, err := w.send(ctx, h, req)
	if err != nil {
		if h.ignoresFailure() {
			return nil, nil
		}
		return nil, h.failed(err)
	}
	if !resp.Allowed {
		status := metav1.Status{Code: http.StatusBadRequest}
		if resp.Result != nil {
			status = *resp.Result
			if status.Code == 0 {
				status.Code = http.StatusBadRequest
			}
		}
		status.Status = metav1.StatusFailure
		status.Message = fmt.Sprintf("admission webhook %q denied the request: %s", h.name, status.Message)
		if status.Reason == "" {
			status.Reason = metav1.StatusReasonBadRequest
		}
		return nil, &apierrors.StatusError{ErrStatus: status}
	}
	return resp, nil
}

// ignoresFailure says whether h's failurePolicy is Ignore.
func (h *webhook) ignoresFailure() bool {
	return h.failurePolicy != nil && *h.failurePolicy == admissionregistrationv1.Ignore
}

// failed is the error of a webhook that could not be called (failure
// policy Fail), as kube-apiserver words it.
func (h *webhook) failed(err error) error {
	return apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: %w", h.name, err))
}

// matches says whether h's rules and selectors select req.
func (w *Webhooks) matches(ctx context.Context, h *webhook, req *pipeline.Request) (bool, error) {
	if !slices.ContainsFunc(h.rules, func(r admissionregistrationv1.RuleWithOperations) bool { return ruleMatches(r, req) }) {
		return false, nil
	}
	if !selects(h.objectSelector, req.Object) && !selects(h.objectSelector, req.OldObject) {
		return false, nil
	}
	if h.namespaceSelector == nil || req.Namespace == "" && !isNamespace(req.Resource) {
		return true, nil
	}
	var nsLabels labels.Set
	if isNamespace(req.Resource) {
		nsLabels = objectLabels(req.Object)
	} else {
		nsRes := w.Registry.Lookup("", "v1", "namespaces")
		ns, err := w.Registry.Store(nsRes).Get(ctx, req.Namespace, storage.GetOptions{ResourceVersion: "0"})
		if err != nil && storage.CodeOf(err) != storage.ErrNotFound {
			return false, err
		}
		if err == nil {
			nsLabels = ns.Labels().Map()
		}
	}
	return selectsLabels(h.namespaceSelector, nsLabels), nil
}

func isNamespace(res *resource.Resource) bool { return res.Group == "" && res.Plural == "namespaces" }

// ruleMatches says whether a rule selects req's operation, group, version,
// resource (and subresource) and scope.
func ruleMatches(r admissionregistrationv1.RuleWithOperations, req *pipeline.Request) bool {
	anyOf := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	ops := make([]string, len(r.Operations))
	for i, op := range r.Operations {
		ops[i] = string(op)
	}
	if !anyOf(ops, string(req.Operation)) || !anyOf(r.APIGroups, req.Resource.Group) || !anyOf(r.APIVersions, req.Resource.Version) {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.ClusterScope:
			if req.Resource.Namespaced {
				return false
			}
		case admissionregistrationv1.NamespacedScope:
			if !req.Resource.Namespaced {
				return false
			}
		}
	}
	for _, res := range r.Resources {
		name, sub, _ := strings.Cut(res, "/")
		if (name == "*" || name == req.Resource.Plural) && (sub == req.Subresource || sub == "*") {
			return true
		}
	}
	return false
}

// selects says whether a label selector (nil: everything) selects an
// object's labels; no object is not selected.
func selects(s *metav1.LabelSelector, obj map[string]any) bool {
	if obj == nil {
		return false
	}
	return selectsLabels(s, objectLabels(obj))
}

func selectsLabels(s *metav1.LabelSelector, set labels.Set) bool {
	if s == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	return err == nil && sel.Matches(set)
}

// objectLabels reads an object's labels.
func objectLabels(obj map[string]any) labels.Set {
	meta, _ := obj["metadata"].(map[string]any)
	m, _ := meta["labels"].(map[string]any)
	set := labels.Set{}
	for k, v := range m {
		set[k], _ = v.(string)
	}
	return set
}

// send posts the AdmissionReview of req to h and returns its response.
func (w *Webhooks) send(ctx context.Context, h *webhook, req *pipeline.Request) (*admissionv1.AdmissionResponse, error) {
	if !slices.Contains(h.admissionReviewVersions, "v1") {
		return nil, fmt.Errorf("webhook does not accept admission.k8s.io/v1 AdmissionReviews (admissionReviewVersions %v)", h.admissionReviewVersions)
	}
	url, err := h.url()
	if err != nil {
		return nil, err
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: review(req)}
	body, err := json.Marshal(&review)
	if err != nil {
		return nil, err
	}
	timeout := defaultTimeout
	if h.timeoutSeconds != nil {
		timeout = time.Duration(*h.timeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Content-Type", "application/json")
	client, err := w.client(h.client.CABundle)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 3<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("webhook answered %s", resp.Status)
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &answer); err != nil || answer.Response == nil {
		return nil, fmt.Errorf("the webhook's answer is not an AdmissionReview with a response: %v", err)
	}
	if answer.Response.UID != review.Request.UID {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", review.Request.UID, answer.Response.UID)
	}
	return answer.Response, nil
}

// url is where h is called: its URL, or its service's name in the cluster
// (which resolves only where such names do).
func (h *webhook) url() (string, error) {
	switch {
	case h.client.URL != nil:
		return *h.client.URL, nil
	case h.client.Service != nil:
		s := h.client.Service
		port := int32(443)
		if s.Port != nil {
			port = *s.Port
		}
		path := ""
		if s.Path != nil {
			path = *s.Path
		}
		return fmt.Sprintf("https://%s.%s.svc:%d%s", s.Name, s.Namespace, port, path), nil
	}
	return "", fmt.Errorf("the webhook has neither a url nor a service")
}

// client is an HTTPS client trusting caBundle (the system's roots when
// empty), shared by the webhooks with that bundle.
func (w *Webhooks) client(caBundle []byte) (*http.Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.clients[string(caBundle)]; c != nil {
		return c, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, fmt.Errorf("the caBundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if w.clients == nil {
		w.clients = map[string]*http.Client{}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	w.clients[string(caBundle)] = c
	return c, nil
}

// review is req as an AdmissionRequest.
func review(req *pipeline.Request) *admissionv1.AdmissionRequest {
	gvk := metav1.GroupVersionKind{Group: req.Resource.Group, Version: req.Resource.Version, Kind: req.Resource.Kind}
	gvr := metav1.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Plural}
	raw := func(obj map[string]any) runtime.RawExtension {
		if obj == nil {
			return runtime.RawExtension{}
		}
		data, _ := json.Marshal(obj)
		return runtime.RawExtension{Raw: data}
	}
	dryRun := req.DryRun
	out := &admissionv1.AdmissionRequest{UID: uuid.NewUUID(), Kind: gvk, Resource: gvr, SubResource: req.Subresource,
		RequestKind: &gvk, RequestResource: &gvr, RequestSubResource: req.Subresource, Name: req.Name, Namespace: req.Namespace,
		Operation: req.Operation, Object: raw(req.Object), OldObject: raw(req.OldObject), DryRun: &dryRun}
	if req.User != nil {
		out.UserInfo = req.User.APIUserInfo()
	}
	return out
}

// applyJSONPatch applies a mutating webhook's JSON patch to obj.
func applyJSONPatch(obj map[string]any, patch []byte) (map[string]any, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("the webhook's patch is malformed: %w", err)
	}
	doc, _ := json.Marshal(obj)
	patched, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("the webhook's patch does not apply: %w", err)
	}
	var out map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(patched, &out); err != nil {
		return nil, err
	}
	return out, nil
}
