// kube-controller-manager's certificatesigningrequest-approving-controller
// (csrapproving): a kubelet's request for its client certificate is
// approved when its requester may create certificatesigningrequests/
// nodeclient (a first certificate, asked with a bootstrap token) or
// selfnodeclient (a renewal by the node itself), as the authorizer says
// (kube-controller-manager asks by SubjectAccessReview).

package certificates

import (
	"context"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/validation"
	certificatesv1 "k8s.io/api/certificates/v1"
)

// unapprovedRetry is how soon a recognized request whose requester may
// not have it approved is looked at again (the permission may be granted
// later). Deliberate difference: kube-controller-manager retries with a
// backoff growing to about 17 minutes.
const unapprovedRetry = 30 * time.Second

// Approver approves kubelets' client certificate requests.
type Approver struct {
	Registry   *resource.Registry
	Authorizer authorizer.Authorizer
	Log        *slog.Logger
}

// recognizers are the requests approved and the permission each needs,
// in kube-controller-manager's order: a node renewing its own certificate,
// then any node client certificate.
var recognizers = []struct {
	subresource string
	recognize   func(csr *certificatesv1.CertificateSigningRequest, commonName string) bool
	message     string
}{
	{"selfnodeclient", func(csr *certificatesv1.CertificateSigningRequest, cn string) bool { return csr.Spec.Username == cn },
		"Auto approving self kubelet client certificate after SubjectAccessReview."},
	{"nodeclient", func(*certificatesv1.CertificateSigningRequest, string) bool { return true },
		"Auto approving kubelet client certificate after SubjectAccessReview."},
}

// Run approves requests until ctx ends.
func (a *Approver) Run(ctx context.Context) {
	q := controller.NewQueue[string](ctx, "csrapproving")
	watchCSRs(ctx, a.Registry, q, "certificatesigningrequests for approval", a.Log)
	controller.Work(ctx, q, a.sync, a.Log)
}

// sync approves request name if it is a pending node client request whose
// requester may have it approved.
func (a *Approver) sync(ctx context.Context, name string) (controller.Result, error) {
	o, csr, err := getCSR(ctx, a.Registry, name)
	if o == nil || err != nil || !pending(csr) || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return controller.Result{}, err
	}
	req, err := validation.ParseCSRPEM(csr.Spec.Request)
	if err != nil || kubeletClient(req, usageStrings(csr)) != nil {
		return controller.Result{}, nil // not a node client request: left to people
	}
	requester := &user.Info{Name: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups}
	if len(csr.Spec.Extra) > 0 {
		requester.Extra = map[string][]string{}
		for k, v := range csr.Spec.Extra {
			requester.Extra[k] = v
		}
	}
	for _, r := range recognizers {
		if !r.recognize(csr, req.Subject.CommonName) {
			continue
		}
		d, _, err := a.Authorizer.Authorize(ctx, authorizer.Attributes{User: requester, Verb: "create", ResourceRequest: true,
			APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: r.subresource})
		if err != nil {
			return controller.Result{}, err
		}
		if d == authorizer.Allow {
			return controller.Result{}, updateCSR(ctx, a.Registry, o, func(cur *certificatesv1.CertificateSigningRequest, obj map[string]any) bool {
				if !pending(cur) {
					return false
				}
				addCondition(obj, certificatesv1.CertificateApproved, "AutoApproved", r.message, time.Now())
				return true
			})
		}
	}
	return controller.Result{RequeueAfter: unapprovedRetry}, nil
}

// pending: neither approved nor denied, without a certificate.
func pending(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) == 0 && !hasCondition(csr, certificatesv1.CertificateApproved) &&
		!hasCondition(csr, certificatesv1.CertificateDenied)
}

// usageStrings are a request's usages as strings.
func usageStrings(csr *certificatesv1.CertificateSigningRequest) []string {
	out := make([]string, len(csr.Spec.Usages))
	for i, u := range csr.Spec.Usages {
		out[i] = string(u)
	}
	return out
}
