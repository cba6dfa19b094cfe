// Package certificates runs kube-controller-manager's certificate and
// node bootstrap controllers inside the server: the signer of approved
// CertificateSigningRequests (certificatesigningrequest-signing-controller,
// signer.go), the approver of node client certificates
// (certificatesigningrequest-approving-controller, approver.go), the
// cleaner of old requests (certificatesigningrequest-cleaner-controller,
// cleaner.go) and the cleaner of expired bootstrap tokens
// (token-cleaner-controller, tokencleaner.go). Like package controller's,
// they read the watch cache through package informer and write to the
// stores directly, as the system itself; the server runs them on its
// controllers' leader only.
package certificates

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/informer"
	"github.com/watchcache/watchcache/pkg/jsontree"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// csrs is the CertificateSigningRequests' resource in reg.
func csrs(reg *resource.Registry) *resource.Resource {
	return reg.Lookup("certificates.k8s.io", "v1", "certificatesigningrequests")
}

// watchCSRs queues the name of every CertificateSigningRequest the
// informer sees, at start and on every change, until ctx ends.
func watchCSRs(ctx context.Context, reg *resource.Registry, q controller.Queue[string], name string, log *slog.Logger) {
	go informer.Run(ctx, reg.Store(csrs(reg)), informer.Handler{
		Replace: func(items []*object.Object, _ uint64) {
			for _, o := range items {
				q.Add(o.Name())
			}
		},
		Apply: func(ev storage.Event) {
			if ev.Type == storage.EventAdded || ev.Type == storage.EventModified {
				q.Add(ev.Object.Name())
			}
		},
	}, name, log)
}

// getCSR reads CertificateSigningRequest name from the watch cache; nil if
// there is none.
func getCSR(ctx context.Context, reg *resource.Registry, name string) (*object.Object, *certificatesv1.CertificateSigningRequest, error) {
	res := csrs(reg)
	o, err := reg.Store(res).Get(ctx, res.Key("", name), storage.GetOptions{ResourceVersion: "0"})
	if storage.CodeOf(err) == storage.ErrNotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	csr, err := decodeCSR(o)
	return o, csr, err
}

func decodeCSR(o *object.Object) (*certificatesv1.CertificateSigningRequest, error) {
	var csr certificatesv1.CertificateSigningRequest
	err := json.Unmarshal(o.JSON(), &csr)
	return &csr, err
}

// updateCSR changes the stored request o (if it is still the same object)
// with change, which sees it typed (to decide) and as a JSON tree (to
// change) and returns false when there is nothing to do, as the request
// is by now. A request gone or replaced is no error.
func updateCSR(ctx context.Context, reg *resource.Registry, o *object.Object,
	change func(csr *certificatesv1.CertificateSigningRequest, obj map[string]any) bool) error {
	res := csrs(reg)
	uid := o.UID()
	_, err := reg.Store(res).GuaranteedUpdate(ctx, o.Key(), &storage.Preconditions{UID: &uid}, func(cur *object.Object) ([]byte, error) {
		csr, err := decodeCSR(cur)
		if err != nil {
			return nil, err
		}
		obj, err := controller.Decode(cur)
		if err != nil {
			return nil, err
		}
		if !change(csr, obj) {
			return nil, controller.ErrUnchanged
		}
		delete(jsontree.Child(obj, "metadata"), "resourceVersion")
		return res.Encode(obj)
	}, o)
	if err == controller.ErrUnchanged || storage.CodeOf(err) == storage.ErrNotFound || storage.CodeOf(err) == storage.ErrConflict {
		return nil
	}
	return err
}

// addCondition appends a True condition to a request's status, stamped
// now, as its /approval and /status strategies stamp them.
func addCondition(obj map[string]any, typ certificatesv1.RequestConditionType, reason, message string, now time.Time) {
	status := jsontree.Child(obj, "status")
	conditions, _ := status["conditions"].([]any)
	stamp := now.UTC().Format(time.RFC3339)
	c := map[string]any{"type": string(typ), "status": string(corev1.ConditionTrue), "reason": reason,
		"lastUpdateTime": stamp, "lastTransitionTime": stamp}
	if message != "" {
		c["message"] = message
	}
	status["conditions"] = append(conditions, c)
}

// hasCondition reports whether csr has a True condition of type t.
func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
