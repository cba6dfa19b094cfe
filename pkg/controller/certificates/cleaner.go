// kube-controller-manager's certificatesigningrequest-cleaner-controller:
// once an hour, requests past their time are deleted, so that requests
// made and approved by machines do not pile up.

package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/deletion"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/strategy"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kube-controller-manager's periods: how often the requests are looked
// at, and how long each kind of request is kept.
const (
	cleanInterval      = time.Hour
	approvedExpiration = time.Hour      // approved and issued, from the approval's lastUpdateTime
	deniedExpiration   = time.Hour      // denied or failed, from that condition's lastUpdateTime
	pendingExpiration  = 24 * time.Hour // no condition at all, from creation
)

// Cleaner deletes requests past their time.
type Cleaner struct {
	Registry *resource.Registry
	Log      *slog.Logger
}

// Run cleans at once and every cleanInterval until ctx ends.
func (c *Cleaner) Run(ctx context.Context) {
	for {
		if err := c.clean(ctx, time.Now()); err != nil && ctx.Err() == nil {
			c.Log.Warn("certificatesigningrequest-cleaner-controller", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(cleanInterval):
		}
	}
}

// clean deletes the requests expired at now.
func (c *Cleaner) clean(ctx context.Context, now time.Time) error {
	res := csrs(c.Registry)
	store := c.Registry.Store(res)
	list, err := store.GetList(ctx, "", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	for _, o := range list.Items {
		csr, err := decodeCSR(o)
		if err != nil || !Expired(csr, now) {
			continue
		}
		c.Log.Info("certificatesigningrequest-cleaner-controller: deleting an expired request", "csr", o.Name())
		uid := o.UID()
		_, err = deletion.Delete(ctx, res, store, o.Key(), &storage.Preconditions{UID: &uid}, strategy.Deletion{Now: now}, nil)
		if err != nil && storage.CodeOf(err) != storage.ErrNotFound && storage.CodeOf(err) != storage.ErrConflict {
			return err
		}
	}
	return nil
}

// Expired reports whether kube-controller-manager's cleaner deletes csr at
// now: issued and approved over an hour ago, denied or failed over an hour
// ago, pending (no condition) for a day, or issued a certificate that has
// expired.
func Expired(csr *certificatesv1.CertificateSigningRequest, now time.Time) bool {
	older := func(t metav1.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t.Time) > d }
	issued := len(csr.Status.Certificate) > 0
	if len(csr.Status.Conditions) == 0 && older(csr.CreationTimestamp, pendingExpiration) {
		return true
	}
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if issued && (older(c.LastUpdateTime, approvedExpiration) || certificateExpired(csr.Status.Certificate, now)) {
				return true
			}
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			if older(c.LastUpdateTime, deniedExpiration) {
				return true
			}
		}
	}
	return false
}

// certificateExpired reports whether the first certificate of a PEM
// bundle has ended by now.
func certificateExpired(data []byte, now time.Time) bool {
	block, _ := pem.Decode(data)
	if block == nil {
		return false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	return err == nil && len(certs) > 0 && now.After(certs[0].NotAfter)
}
