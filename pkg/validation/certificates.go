// The validation of certificates.k8s.io's kinds, kube-apiserver 1.37's. A
// CertificateSigningRequest's: the request, usages, signer name and
// duration; the conditions (Approved, Denied and Failed are only ever
// True, never duplicated, never removed, Approved and Denied not both);
// the certificate (PEM CERTIFICATE blocks, set once); and what each way of
// writing may change (Approved and Denied only through /approval). A
// ClusterTrustBundle's name, signer and anchors. The messages are
// recorded from kube-apiserver in pkg/app's certificates_test.go.

package validation

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// csrChecks are a CertificateSigningRequest's checks as an object and as
// an update through the object or /status; csrApprovalChecks through
// /approval, which may add and change Approved and Denied conditions.
var (
	csrChecks         = []Check{{Object: csrObject}, {Update: csrUpdate(false)}, {Object: csrApprovedOrDenied}}
	csrApprovalChecks = []Check{{Object: csrObject}, {Update: csrUpdate(true)}, {Object: csrApprovedOrDenied}}
)

// ctbChecks are a ClusterTrustBundle's checks: its name (the signer's
// prefix), its signer and its trust anchors.
var ctbChecks = []Check{{Object: ctbObject}}

// subresourceKinds are the checks of writes through a subresource, by
// "group/Kind/subresource"; a subresource not here is not validated.
var subresourceKinds = map[string][]Check{
	"certificates.k8s.io/CertificateSigningRequest/status":   csrChecks,
	"certificates.k8s.io/CertificateSigningRequest/approval": csrApprovalChecks,
}

// HasSubresource reports whether writes of kind group/kind through
// subresource are validated.
func HasSubresource(group, kind, subresource string) bool {
	return len(subresourceKinds[group+"/"+kind+"/"+subresource]) > 0
}

// ValidateSubresourceUpdate checks obj, the new state of old written
// through subresource (HasSubresource).
func ValidateSubresourceUpdate(group, kind, subresource string, obj, old map[string]any) field.ErrorList {
	return run(subresourceKinds[group+"/"+kind+"/"+subresource], obj, old)
}

// The condition types a signer and an approver set, True only.
const (
	csrApproved = "Approved"
	csrDenied   = "Denied"
	csrFailed   = "Failed"
)

// legacyUnknownSigner is v1beta1's default signer, refused by v1.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

// csrObject is kube-apiserver's validateCertificateSigningRequest, in its
// order. Deliberate difference: it does not relax a rule for an update of
// an object that already broke it (kube-apiserver does, for objects
// stored before a rule existed); the spec cannot change after creation.
func csrObject(_ *field.Path, obj map[string]any) field.ErrorList {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if err := checkCSRRequest(spec["request"]); err != nil {
		errs = append(errs, field.Invalid(specPath.Child("request"), spec["request"], err.Error()))
	}
	usages, _ := spec["usages"].([]any)
	if len(usages) == 0 {
		errs = append(errs, field.Required(specPath.Child("usages"), ""))
	}
	for i, u := range usages {
		if s, _ := u.(string); !slices.Contains(keyUsages, s) {
			errs = append(errs, field.NotSupported(specPath.Child("usages").Index(i), u, keyUsages))
		}
	}
	for i, u := range usages {
		if slices.Contains(usages[:i], u) {
			errs = append(errs, field.Duplicate(specPath.Child("usages").Index(i), u))
		}
	}
	signer, _ := spec["signerName"].(string)
	if signer == legacyUnknownSigner {
		errs = append(errs, field.Invalid(specPath.Child("signerName"), signer, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, SignerName(specPath.Child("signerName"), signer)...)
	}
	if n, ok := spec["expirationSeconds"].(int64); ok && n < 600 {
		errs = append(errs, field.Invalid(specPath.Child("expirationSeconds"), n, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, csrConditions(status)...)
	if err := checkCertificate(status["certificate"]); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
	}
	return errs
}

// checkCSRRequest: spec.request (base64 in JSON) is a PEM CERTIFICATE
// REQUEST with a valid signature.
func checkCSRRequest(v any) error {
	_, err := ParseCSR(v)
	return err
}

// ParseCSR parses a CertificateSigningRequest's spec.request as JSON
// holds it (base64 of PEM), checking its signature.
func ParseCSR(v any) (*x509.CertificateRequest, error) {
	data, _ := pemBytes(v)
	return ParseCSRPEM(data)
}

// ParseCSRPEM parses a PEM CERTIFICATE REQUEST, checking its signature.
func ParseCSRPEM(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	return csr, csr.CheckSignature()
}

// pemBytes decodes a []byte field as JSON holds it (base64).
func pemBytes(v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	data, err := base64.StdEncoding.DecodeString(s)
	return data, err == nil
}

// checkCertificate: status.certificate, if set, is one or more PEM
// CERTIFICATE blocks without headers.
func checkCertificate(v any) error {
	if v == nil || v == "" {
		return nil
	}
	data, _ := pemBytes(v)
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		switch {
		case block.Type != "CERTIFICATE":
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		case len(block.Headers) != 0:
			return errors.New("no PEM block headers are permitted")
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// csrConditions: every condition has a type; Approved, Denied and Failed
// are True, others True, False or Unknown; no type twice.
func csrConditions(status map[string]any) field.ErrorList {
	p := field.NewPath("status", "conditions")
	conditions, _ := status["conditions"].([]any)
	var errs field.ErrorList
	var seen []string
	for i, c := range conditions {
		cond, _ := c.(map[string]any)
		typ, _ := cond["type"].(string)
		st, _ := cond["status"].(string)
		if typ == "" {
			errs = append(errs, field.Required(p.Index(i).Child("type"), ""))
		}
		allowed := []string{"True"}
		if typ != csrApproved && typ != csrDenied && typ != csrFailed {
			allowed = []string{"False", "True", "Unknown"}
		}
		if !slices.Contains(allowed, st) {
			errs = append(errs, field.NotSupported(p.Index(i).Child("status"), st, allowed))
		}
		if slices.Contains(seen, typ) {
			errs = append(errs, field.Duplicate(p.Index(i).Child("type"), typ))
		}
		seen = append(seen, typ)
	}
	return errs
}

// csrApprovedOrDenied is kube-apiserver's declarative union of the
// Approved and Denied conditions, checked after the rest.
func csrApprovedOrDenied(_ *field.Path, obj map[string]any) field.ErrorList {
	status, _ := obj["status"].(map[string]any)
	if len(csrConditionsOf(status, csrApproved)) == 0 || len(csrConditionsOf(status, csrDenied)) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("status", "conditions"),
		`{conditions[{"type": "Approved"}], conditions[{"type": "Denied"}]}`,
		"must specify at most one of: `conditions[{\"type\": \"Approved\"}]`, `conditions[{\"type\": \"Denied\"}]`")}
}

// csrUpdate is the update rules: Approved, Denied and Failed conditions
// are never removed; Approved and Denied are added or changed only
// through /approval (approval); a certificate, once set, stays.
func csrUpdate(approval bool) func(*field.Path, any, any) field.ErrorList {
	return func(_ *field.Path, value, old any) field.ErrorList {
		obj, _ := value.(map[string]any)
		prev, _ := old.(map[string]any)
		status, _ := obj["status"].(map[string]any)
		oldStatus, _ := prev["status"].(map[string]any)
		p := field.NewPath("status", "conditions")
		var errs field.ErrorList
		for _, t := range []string{csrApproved, csrDenied, csrFailed} {
			if len(csrConditionsOf(status, t)) < len(csrConditionsOf(oldStatus, t)) {
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not remove a condition of type %q", t)))
			}
		}
		for _, t := range []string{csrApproved, csrDenied} {
			if approval {
				break
			}
			cur, was := csrConditionsOf(status, t), csrConditionsOf(oldStatus, t)
			switch {
			case len(cur) > len(was):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case len(cur) == len(was) && !reflect.DeepEqual(cur, was):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
		cert, oldCert := status["certificate"], oldStatus["certificate"]
		if cert != oldCert && oldCert != nil && oldCert != "" {
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
		return errs
	}
}

// csrConditionsOf are the conditions of type t in status.
func csrConditionsOf(status map[string]any, t string) []any {
	conditions, _ := status["conditions"].([]any)
	var out []any
	for _, c := range conditions {
		if cond, _ := c.(map[string]any); cond["type"] == t {
			out = append(out, c)
		}
	}
	return out
}

// ctbObject checks a ClusterTrustBundle: named "<signer, / as :>:<DNS
// subdomain>" when it names a signer, else a DNS subdomain without ":";
// a valid signer name; at least one PEM certificate. Deliberate
// difference: the anchors are not checked further (CA, block types).
func ctbObject(_ *field.Path, obj map[string]any) field.ErrorList {
	spec, _ := obj["spec"].(map[string]any)
	signer, _ := spec["signerName"].(string)
	var errs field.ErrorList
	if signer != "" {
		errs = append(errs, SignerName(field.NewPath("spec", "signerName"), signer)...)
	}
	bundle, _ := spec["trustBundle"].(string)
	if !hasCertificate([]byte(bundle)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trustBundle"), "<value omitted>", "at least one trust anchor must be provided"))
	}
	return errs
}

// hasCertificate reports whether a PEM bundle holds a certificate that
// parses.
func hasCertificate(data []byte) bool {
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			return false
		}
		if _, err := x509.ParseCertificate(block.Bytes); block.Type == "CERTIFICATE" && err == nil {
			return true
		}
		data = rest
	}
}

// SignerName checks a signer name as kube-apiserver does: a domain of at
// least two DNS labels, a slash, and a path that is a DNS subdomain.
func SignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(path, "/") {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(domain) > utilvalidation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, domain, utilvalidation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := utilvalidation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, domain, fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(p, domain, "should be a domain with at least two segments separated by dots"))
	}
	if max := utilvalidation.DNS1123SubdomainMaxLength - len(domain) - 1; len(path) > max {
		errs = append(errs, field.TooLong(p, path, max))
	}
	for _, m := range utilvalidation.IsDNS1123Subdomain(path) {
		errs = append(errs, field.Invalid(p, path, fmt.Sprintf("validating label %q: %s", path, m)))
	}
	return errs
}
