// Package signers is authorization on certificates.k8s.io's signers: who
// may approve requests for a signer, sign them, or attest a trust bundle
// for it (the verbs approve, sign and attest on resource "signers", named
// by the signer or its domain's wildcard), and kube-apiserver's admission
// plugins that ask: CertificateApproval, CertificateSigning,
// ClusterTrustBundleAttest and CertificateSubjectRestriction.
package signers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/validation"
	admissionv1 "k8s.io/api/admission/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// group is the API group of signers and of the objects naming them.
const group = "certificates.k8s.io"

// Authorized reports whether u may verb (approve, sign, attest) signer:
// the signer by name, or every signer of its domain ("<domain>/*").
func Authorized(ctx context.Context, z authorizer.Authorizer, u *user.Info, verb, signer string) bool {
	domain, _, _ := strings.Cut(signer, "/")
	for _, name := range []string{signer, domain + "/*"} {
		d, _, err := z.Authorize(ctx, authorizer.Attributes{User: u, Verb: verb, ResourceRequest: true,
			APIGroup: group, APIVersion: "*", Resource: "signers", Name: name})
		if err == nil && d == authorizer.Allow {
			return true
		}
	}
	return false
}

// Admission is the validating stage of kube-apiserver's certificate
// plugins, in its order:
//   - CertificateApproval: an update of a CertificateSigningRequest's
//     /approval needs approve on its signer;
//   - CertificateSigning: an update of its /status that changes
//     status.certificate needs sign on its signer;
//   - ClusterTrustBundleAttest: a create or update of a ClusterTrustBundle
//     naming a signer needs attest on it (an update changing only what the
//     garbage collector changes does not);
//   - CertificateSubjectRestriction: a request for a client certificate of
//     the API (kubernetes.io/kube-apiserver-client) may not be for group
//     system:masters.
type Admission struct {
	Authorizer authorizer.Authorizer
}

// Validate refuses req if a plugin does.
func (a Admission) Validate(ctx context.Context, req *pipeline.Request) error {
	if req.Resource.Group != group || req.Operation == admissionv1.Delete {
		return nil
	}
	switch {
	case req.Resource.Plural == "certificatesigningrequests" && req.Subresource == "approval" && req.Operation == admissionv1.Update:
		return a.need(ctx, req, "approve", signerOf(req.Object), "user not permitted to approve requests with signerName %q")
	case req.Resource.Plural == "certificatesigningrequests" && req.Subresource == "status" && req.Operation == admissionv1.Update:
		if certificateOf(req.Object) == certificateOf(req.OldObject) {
			return nil
		}
		return a.need(ctx, req, "sign", signerOf(req.OldObject), "user not permitted to sign requests with signerName %q")
	case req.Resource.Plural == "clustertrustbundles" && req.Subresource == "":
		signer := signerOf(req.Object)
		if signer == "" || req.Operation == admissionv1.Update && onlyGCFieldsChanged(req.Object, req.OldObject) {
			return nil
		}
		return a.need(ctx, req, "attest", signer, "user not permitted to attest for signerName %q")
	case req.Resource.Plural == "certificatesigningrequests" && req.Subresource == "" && req.Operation == admissionv1.Create:
		return subjectRestriction(req)
	}
	return nil
}

// need refuses req unless its user may verb signer, with message (%q the
// signer).
func (a Admission) need(ctx context.Context, req *pipeline.Request, verb, signer, message string) error {
	if Authorized(ctx, a.Authorizer, req.User, verb, signer) {
		return nil
	}
	return forbidden(req, fmt.Errorf(message, signer))
}

// subjectRestriction refuses a request for a client certificate of the API
// in group system:masters.
func subjectRestriction(req *pipeline.Request) error {
	signer := signerOf(req.Object)
	if signer != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	spec, _ := req.Object["spec"].(map[string]any)
	csr, err := validation.ParseCSR(spec["request"])
	if err != nil {
		return forbidden(req, fmt.Errorf("failed to parse CSR: %v", err))
	}
	if slices.Contains(csr.Subject.Organization, user.SystemPrivilegedGroup) {
		return forbidden(req, fmt.Errorf("use of %s signer with %s group is not allowed", signer, user.SystemPrivilegedGroup))
	}
	return nil
}

// forbidden is a plugin's refusal: 403, "<resource> "<name>" is forbidden:
// <err>".
func forbidden(req *pipeline.Request, err error) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Plural}, req.Name, err)
}

// signerOf is an object's spec.signerName.
func signerOf(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	s, _ := spec["signerName"].(string)
	return s
}

// certificateOf is a CertificateSigningRequest's status.certificate.
func certificateOf(obj map[string]any) any {
	status, _ := obj["status"].(map[string]any)
	return status["certificate"]
}

// onlyGCFieldsChanged reports whether obj differs from old only in what
// the garbage collector changes (owner references, finalizers), or in what
// the server keeps (resourceVersion, managedFields).
func onlyGCFieldsChanged(obj, old map[string]any) bool {
	strip := func(o map[string]any) map[string]any {
		c := jsontree.DeepCopy(o).(map[string]any)
		meta := jsontree.Child(c, "metadata")
		for _, f := range []string{"ownerReferences", "finalizers", "resourceVersion", "managedFields"} {
			delete(meta, f)
		}
		return c
	}
	return reflect.DeepEqual(strip(obj), strip(old))
}
