// The API server identity Lease (kube-apiserver's APIServerIdentity, on by
// default): each replica keeps a Lease in kube-system named after its host,
// so that `kubectl get leases -n kube-system -l
// apiserver.kubernetes.io/identity=kube-apiserver` lists the API servers,
// and deletes the ones of replicas gone for longer than a Lease's duration.

package app

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"golang.org/x/crypto/cryptobyte"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// kube-apiserver's identity Lease settings (1.37).
const (
	identityLabel         = "apiserver.kubernetes.io/identity"
	identityComponent     = "kube-apiserver"
	identityLeaseDuration = time.Hour
	identityRenewInterval = 10 * time.Second
	identityGCInterval    = time.Hour
)

// apiServerID is kube-apiserver's identity of a server on hostname:
// "apiserver-" and the base32 of the first 16 bytes of the SHA-256 of the
// hostname and the component, each length-prefixed. Replicas on one host
// share it (and its Lease), as kube-apiserver's do.
func apiServerID(hostname string) string {
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(hostname)) })
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(identityComponent)) })
	hash := sha256.Sum256(b.BytesOrPanic())
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(hash[:16]))
}

// identityLease keeps this replica's identity Lease and collects expired
// ones. kube-apiserver also annotates its Lease with the address peers
// proxy to (kubernetes.io/peer-advertise-address); watchcache has no peer
// proxy and leaves it out.
type identityLease struct {
	registry *resource.Registry
	hostname string
	// name is the Lease's; holder its holderIdentity, new at every start.
	name, holder string
}

func newIdentityLease(registry *resource.Registry) (*identityLease, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	name := apiServerID(hostname)
	return &identityLease{registry: registry, hostname: hostname, name: name, holder: name + "_" + string(uuid.NewUUID())}, nil
}

// run renews the Lease every identityRenewInterval and collects expired
// Leases every identityGCInterval until ctx ends; the Lease itself stays
// (it expires), as kube-apiserver's does.
func (l *identityLease) run(ctx context.Context, log func(msg string, args ...any)) {
	renew := time.NewTicker(identityRenewInterval)
	defer renew.Stop()
	collect := time.NewTicker(identityGCInterval)
	defer collect.Stop()
	for collectNow := true; ; { // the first round, and each hour
		if err := l.renew(ctx); err != nil && ctx.Err() == nil {
			log("identity lease", "err", err)
		}
		if collectNow {
			if err := l.collect(ctx, time.Now()); err != nil && ctx.Err() == nil {
				log("identity lease garbage collection", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			collectNow = false
		case <-collect.C:
			collectNow = true
		}
	}
}

// renew writes this replica's holder and the time into its Lease.
func (l *identityLease) renew(ctx context.Context) error {
	base := map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]any{"labels": map[string]any{identityLabel: identityComponent, "kubernetes.io/hostname": l.hostname}}}
	spec := map[string]any{"holderIdentity": l.holder, "leaseDurationSeconds": int64(identityLeaseDuration / time.Second),
		"renewTime": time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")}
	return setFields(ctx, l.registry, "coordination.k8s.io", "leases", "kube-system", l.name, base, map[string]any{"spec": spec})
}

// collect deletes the identity Leases in kube-system not renewed within
// their duration before now (another replica's, gone).
func (l *identityLease) collect(ctx context.Context, now time.Time) error {
	res := l.registry.Lookup("coordination.k8s.io", "v1", "leases")
	store := l.registry.Store(res)
	list, err := store.GetList(ctx, res.Scope("kube-system"), storage.ListOptions{ResourceVersion: "0",
		Labels: labels.SelectorFromSet(labels.Set{identityLabel: identityComponent})})
	if err != nil {
		return err
	}
	return list.Each(func(obj *object.Object) error {
		var lease struct {
			Spec struct {
				RenewTime            time.Time `json:"renewTime"`
				LeaseDurationSeconds int64     `json:"leaseDurationSeconds"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(obj.JSON(), &lease); err != nil || lease.Spec.RenewTime.IsZero() {
			return nil // not one of ours to judge
		}
		if lease.Spec.RenewTime.Add(time.Duration(lease.Spec.LeaseDurationSeconds) * time.Second).After(now) {
			return nil
		}
		rv := strconv.FormatUint(obj.ResourceVersion(), 10)
		_, err := store.Delete(ctx, obj.Key(), &storage.Preconditions{ResourceVersion: &rv}, obj)
		if code := storage.CodeOf(err); code == storage.ErrNotFound || code == storage.ErrConflict {
			return nil // renewed or deleted meanwhile
		}
		return err
	})
}
