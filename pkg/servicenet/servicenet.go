// Package servicenet gives Services their cluster IPs as kube-apiserver
// 1.37 does (the MultiCIDRServiceAllocator model): the ranges are those of
// the networking.k8s.io/v1 ServiceCIDRs, and an IP is taken by creating
// the IPAddress object named by it, before the Service is stored. That
// create is the lock across replicas: a taken IP is AlreadyExists, and
// another is tried. Allocate is the write pipeline's mutating stage on
// Service creates and updates (kube-apiserver's Service REST allocates in
// its BeginCreate, after mutating admission and before validation);
// Release, a Written stage, deletes the IPAddresses of a deleted Service;
// Repair (run by the controllers) deletes the IPAddresses whose Service is
// gone and recreates the missing ones.
package servicenet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// The labels kube-apiserver's allocator puts on its IPAddresses.
const (
	LabelManagedBy = "ipaddress.kubernetes.io/managed-by"
	ManagedBy      = "ipallocator.k8s.io"
	LabelIPFamily  = "ipaddress.kubernetes.io/ip-family"
)

// kube-apiserver's words for a requested IP it refuses (recorded from
// kube-apiserver 1.37, e2e/testdata/servicenet.json).
const (
	msgAllocated  = "provided IP is already allocated"
	msgNotInRange = "the provided network does not match the current range"
)

// Allocator reaches the ServiceCIDRs and IPAddresses of a registry.
type Allocator struct {
	Registry *resource.Registry
}

func (a *Allocator) res(plural string) (*resource.Resource, storage.Interface) {
	res := a.Registry.Lookup("networking.k8s.io", "v1", plural)
	return res, a.Registry.Store(res)
}

// Allocate is the mutating stage: a Service create (or an update that
// needs IPs it lacks) gets its cluster IPs.
type Allocate struct{ *Allocator }

// Release is the Written stage that deletes a deleted Service's
// IPAddresses.
type Release struct{ *Allocator }

func isService(req *pipeline.Request) bool {
	return req.Resource != nil && req.Resource.Group == "" && req.Resource.Kind == "Service" && req.Subresource == ""
}

// needsIP: a Service of spec that gets a cluster IP (not ExternalName, not
// headless).
func needsIP(spec map[string]any) bool {
	return spec["type"] != "ExternalName" && spec["clusterIP"] != "None"
}

func (s Allocate) Mutate(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	obj := req.Object
	if !isService(req) || obj == nil {
		return obj, nil
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil || spec["type"] == "ExternalName" {
		return obj, nil
	}
	ip, _ := spec["clusterIP"].(string)
	if req.OldObject != nil { // an update: the IPs stay (a change of families is not supported)
		oldSpec, _ := req.OldObject["spec"].(map[string]any)
		old, _ := oldSpec["clusterIP"].(string)
		if old != "" && old != "None" {
			if ip == "" {
				spec["clusterIP"], spec["clusterIPs"] = old, oldSpec["clusterIPs"]
				return obj, nil
			}
			if ip != old {
				return nil, invalid(req, field.NewPath("spec", "clusterIPs").Index(0), []string{ip}, "may not change once set")
			}
			return obj, nil
		}
		if !needsIP(spec) {
			return obj, nil
		}
	}
	ranges, err := s.Ranges(ctx)
	if err != nil {
		return nil, err
	}
	fams, errs := families(spec, ranges)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, req.Name, errs)
	}
	if !needsIP(spec) {
		return obj, nil
	}
	given := stringsOf(spec["clusterIPs"])
	if len(given) == 0 && ip != "" {
		given = []string{ip}
	}
	var ips []any
	for i, fam := range fams {
		var addr netip.Addr
		if i < len(given) && given[i] != "" {
			if addr, err = netip.ParseAddr(given[i]); err != nil {
				return obj, nil // validation's "must be a valid IP address"
			}
			err = s.take(ctx, req, addr, true)
		} else {
			addr, err = s.allocate(ctx, req, fam)
		}
		if err != nil {
			return nil, err // what was taken before is given back (OnAbort)
		}
		ips = append(ips, addr.String())
	}
	spec["clusterIP"], spec["clusterIPs"] = ips[0], ips
	return obj, nil
}

func stringsOf(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// families settles a created Service's ipFamilyPolicy and ipFamilies (in
// spec) against the cluster's ranges, as kube-apiserver's Service REST
// does, and returns the families to allocate in; the errors are
// kube-apiserver's (recorded from kube-apiserver 1.37, single- and
// dual-stack, in testdata/dualstack.txt of package app).
func families(spec map[string]any, ranges []netip.Prefix) ([]string, field.ErrorList) {
	var cluster []string // the cluster's families, the primary first
	for _, p := range ranges {
		if f := familyOf(p.Addr()); !slices.Contains(cluster, f) {
			cluster = append(cluster, f)
		}
	}
	if len(cluster) == 0 {
		cluster = []string{"IPv4"}
	}
	policyPath, famPath, ipsPath := field.NewPath("spec", "ipFamilyPolicy"), field.NewPath("spec", "ipFamilies"), field.NewPath("spec", "clusterIPs")
	policy, _ := spec["ipFamilyPolicy"].(string)
	if policy == "" {
		policy = "SingleStack"
	}
	var errs field.ErrorList
	if !slices.Contains([]string{"PreferDualStack", "RequireDualStack", "SingleStack"}, policy) {
		errs = append(errs, field.NotSupported(policyPath, policy, []string{"PreferDualStack", "RequireDualStack", "SingleStack"}))
	}
	fams := stringsOf(spec["ipFamilies"])
	for i, f := range fams {
		if f != "IPv4" && f != "IPv6" {
			errs = append(errs, field.NotSupported(famPath.Index(i), f, []string{"IPv4", "IPv6"}))
		} else if slices.Index(fams, f) < i {
			errs = append(errs, field.Duplicate(famPath.Index(i), f))
		}
	}
	ips := stringsOf(spec["clusterIPs"])
	if len(ips) == 0 {
		if ip, _ := spec["clusterIP"].(string); ip != "" {
			ips = []string{ip}
		}
	}
	headless := len(ips) > 0 && ips[0] == "None"
	if policy == "SingleStack" {
		if len(fams) > 1 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		} else if len(ips) > 1 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if headless && spec["selector"] == nil {
		// A headless Service without selector is of both families,
		// whatever the cluster's (as kube-apiserver gives it).
		policy = "RequireDualStack"
		if len(fams) == 0 {
			fams = []string{cluster[0]}
		}
		fams = append(fams[:1], other(fams[0]))
		spec["ipFamilyPolicy"], spec["ipFamilies"] = policy, anys(fams)
		return nil, nil
	}
	if len(fams) == 0 {
		fams = []string{cluster[0]}
		if !headless && len(ips) > 0 {
			if a, err := netip.ParseAddr(ips[0]); err == nil {
				fams[0] = familyOf(a)
			}
		}
	}
	for i, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil && i < len(fams) && familyOf(a) != fams[i] {
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", fams[i], i)))
		}
	}
	for i, f := range fams {
		if !slices.Contains(cluster, f) {
			errs = append(errs, field.Invalid(famPath.Index(i), f, "not configured on this cluster"))
		}
	}
	if policy == "RequireDualStack" && len(cluster) < 2 {
		errs = append(errs, field.Invalid(policyPath, policy, "this cluster is not configured for dual-stack services"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if policy != "SingleStack" && len(fams) == 1 && len(cluster) == 2 {
		fams = append(fams, other(fams[0]))
	}
	spec["ipFamilyPolicy"], spec["ipFamilies"] = policy, anys(fams)
	return fams, nil
}

func other(fam string) string {
	if fam == "IPv4" {
		return "IPv6"
	}
	return "IPv4"
}

func anys(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func familyOf(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func invalid(req *pipeline.Request, p *field.Path, value any, msg string) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, req.Name, field.ErrorList{field.Invalid(p, value, msg)})
}

func allocFailed(req *pipeline.Request, ip, why string) error {
	return invalid(req, field.NewPath("spec", "clusterIPs"), []string{ip}, fmt.Sprintf("failed to allocate IP %s: %s", ip, why))
}

// Ranges are the prefixes of the ServiceCIDRs (not being deleted).
func (a *Allocator) Ranges(ctx context.Context) ([]netip.Prefix, error) {
	res, store := a.res("servicecidrs")
	list, err := store.GetList(ctx, res.Scope(""), storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, o := range list.Items {
		var cidr struct {
			Metadata struct {
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
			Spec struct {
				CIDRs []string `json:"cidrs"`
			} `json:"spec"`
		}
		if json.Unmarshal(o.JSON(), &cidr) != nil || cidr.Metadata.DeletionTimestamp != nil {
			continue
		}
		for _, c := range cidr.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	return out, nil
}

// usable says whether a is in one of ranges and neither its network
// address nor (IPv4) its broadcast address.
func usable(a netip.Addr, ranges []netip.Prefix) bool {
	for _, p := range ranges {
		if !p.Contains(a) || a == p.Addr() {
			continue
		}
		if a.Is4() && a == last(p) {
			continue
		}
		return true
	}
	return false
}

func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 7; j >= 0; j-- {
			if i*8+(7-j) >= bits {
				b[i] |= 1 << j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// take creates the IPAddress of addr for req's Service (not in a dry
// run, where it only checks): requested says the user asked for it.
func (s Allocate) take(ctx context.Context, req *pipeline.Request, addr netip.Addr, requested bool) error {
	ranges, err := s.Ranges(ctx)
	if err != nil {
		return err
	}
	if !usable(addr, ranges) {
		return allocFailed(req, addr.String(), msgNotInRange)
	}
	res, store := s.res("ipaddresses")
	if req.DryRun {
		if _, err := store.Get(ctx, res.Key("", addr.String()), storage.GetOptions{}); err == nil {
			return allocFailed(req, addr.String(), msgAllocated)
		}
		return nil
	}
	if err := s.Create(ctx, addr, req.Namespace, req.Name); err != nil {
		if storage.CodeOf(err) == storage.ErrAlreadyExists {
			return allocFailed(req, addr.String(), msgAllocated)
		}
		return err
	}
	s.releaseOnAbort(req, addr)
	return nil
}

// releaseOnAbort gives addr, just taken for req, back if req's write is
// not stored (kube-apiserver's Service REST releases it in its
// transaction's rollback).
func (s Allocate) releaseOnAbort(req *pipeline.Request, addr netip.Addr) {
	ns, name := req.Namespace, req.Name
	req.OnAbort(func(ctx context.Context) { s.ReleaseIP(ctx, addr.String(), ns, name) })
}

// Create stores the IPAddress of addr with its parentRef to the Service
// namespace/name.
func (a *Allocator) Create(ctx context.Context, addr netip.Addr, namespace, name string) error {
	res, store := a.res("ipaddresses")
	obj := map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
		"metadata": map[string]any{
			"name": addr.String(), "uid": string(uuid.NewUUID()),
			"creationTimestamp": metav1.Now().UTC().Format(time.RFC3339),
			"labels":            map[string]any{LabelIPFamily: familyOf(addr), LabelManagedBy: ManagedBy},
		},
		"spec": map[string]any{"parentRef": map[string]any{"resource": "services", "namespace": namespace, "name": name}},
	}
	data, err := res.Encode(obj)
	if err != nil {
		return err
	}
	_, err = store.Create(ctx, res.Key("", addr.String()), data)
	return err
}

// allocate takes a free IP of family fam at random, as kube-apiserver
// does: the upper band of each range first (the lower band, 1/16 of the
// range between 16 and 256 addresses, is kept for requested IPs), then
// the lower.
func (s Allocate) allocate(ctx context.Context, req *pipeline.Request, fam string) (netip.Addr, error) {
	ranges, err := s.Ranges(ctx)
	if err != nil {
		return netip.Addr{}, err
	}
	res, store := s.res("ipaddresses")
	list, err := store.GetList(ctx, res.Scope(""), storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return netip.Addr{}, err
	}
	taken := map[netip.Addr]bool{}
	for _, o := range list.Items {
		if a, err := netip.ParseAddr(o.Name()); err == nil {
			taken[a] = true
		}
	}
	for _, p := range ranges {
		if familyOf(p.Addr()) != fam {
			continue
		}
		size := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
		n := int64(1 << 20) // addresses looked at in one range
		if size.IsInt64() && size.Int64() < n {
			n = size.Int64()
		}
		if p.Addr().Is4() {
			n-- // broadcast
		}
		if n < 2 {
			continue
		}
		band := min(max(int64(16), n/16), 256)
		if band >= n-1 {
			band = 0
		}
		for _, b := range [][2]int64{{band + 1, n}, {1, band + 1}} { // offsets [lo, hi)
			lo, hi := b[0], b[1]
			if hi <= lo {
				continue
			}
			start := lo + rand.Int64N(hi-lo)
			for i := int64(0); i < hi-lo; i++ {
				off := lo + (start-lo+i)%(hi-lo)
				addr := add(p.Addr(), off)
				if taken[addr] || !usable(addr, ranges) {
					continue
				}
				if req.DryRun {
					return addr, nil
				}
				err := s.Create(ctx, addr, req.Namespace, req.Name)
				if err == nil {
					s.releaseOnAbort(req, addr)
					return addr, nil
				}
				if storage.CodeOf(err) != storage.ErrAlreadyExists {
					return netip.Addr{}, err
				}
				taken[addr] = true // another replica took it: the next
			}
		}
	}
	return netip.Addr{}, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
}

func add(a netip.Addr, off int64) netip.Addr {
	n := new(big.Int).SetBytes(a.AsSlice())
	n.Add(n, big.NewInt(off))
	b := n.FillBytes(make([]byte, len(a.AsSlice())))
	r, _ := netip.AddrFromSlice(b)
	return r
}

// Written deletes the IPAddresses of a Service that is gone (one that
// finalizers still hold keeps them), and those an update from a Service
// with IPs to an ExternalName or headless one left.
func (s Release) Written(ctx context.Context, req *pipeline.Request, o *object.Object) {
	if !isService(req) || o == nil {
		return
	}
	var svc struct {
		Metadata struct {
			Namespace  string   `json:"namespace"`
			Name       string   `json:"name"`
			Finalizers []string `json:"finalizers"`
		} `json:"metadata"`
		Spec struct {
			ClusterIPs []string `json:"clusterIPs"`
		} `json:"spec"`
	}
	if kjson.UnmarshalCaseSensitivePreserveInts(o.JSON(), &svc) != nil {
		return
	}
	ips := svc.Spec.ClusterIPs
	switch req.Operation {
	case "DELETE":
		if len(svc.Metadata.Finalizers) > 0 {
			return
		}
	case "UPDATE":
		oldSpec, _ := req.OldObject["spec"].(map[string]any)
		newSpec, _ := req.Object["spec"].(map[string]any)
		if oldSpec == nil || newSpec == nil || needsIP(newSpec) || !needsIP(oldSpec) {
			return
		}
		ips = nil
		old, _ := oldSpec["clusterIPs"].([]any)
		for _, ip := range old {
			if s, ok := ip.(string); ok {
				ips = append(ips, s)
			}
		}
	default:
		return
	}
	for _, ip := range ips {
		s.ReleaseIP(ctx, ip, svc.Metadata.Namespace, svc.Metadata.Name)
	}
}

// ReleaseIP deletes the IPAddress ip if its parent is the Service
// namespace/name.
func (a *Allocator) ReleaseIP(ctx context.Context, ip, namespace, name string) {
	res, store := a.res("ipaddresses")
	key := res.Key("", ip)
	cur, err := store.Get(ctx, key, storage.GetOptions{})
	if err != nil {
		return
	}
	if ns, n, _ := Parent(cur); ns != namespace || n != name {
		return
	}
	store.Delete(ctx, key, &storage.Preconditions{UID: ptr(cur.UID())}, nil)
}

func ptr[T any](v T) *T { return &v }

// Parent is an IPAddress's Service, and whether kube-apiserver's
// allocator manages it.
func Parent(o *object.Object) (namespace, name string, managed bool) {
	var ipa struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			ParentRef struct {
				Group     string `json:"group"`
				Resource  string `json:"resource"`
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"parentRef"`
		} `json:"spec"`
	}
	if json.Unmarshal(o.JSON(), &ipa) != nil || ipa.Spec.ParentRef.Resource != "services" || ipa.Spec.ParentRef.Group != "" {
		return "", "", false
	}
	return ipa.Spec.ParentRef.Namespace, ipa.Spec.ParentRef.Name, ipa.Metadata.Labels[LabelManagedBy] == ManagedBy
}

// repairGrace is how old an IPAddress without its Service must be before
// Repair deletes it: the IPAddress of a create in flight is stored before
// its Service.
const repairGrace = 10 * time.Second

// Repair is kube-apiserver's repair of cluster IPs: the IPAddress of
// every IP a Service holds exists, and an IPAddress of the allocator whose
// Service is gone or no longer holds it is deleted (after repairGrace).
//
// The IPAddresses are listed before the Services: an IP released after
// the Services' list (its Service deleted) is then not created again.
func (a *Allocator) Repair(ctx context.Context) error {
	ipRes, ipStore := a.res("ipaddresses")
	addrs, err := ipStore.GetList(ctx, ipRes.Scope(""), storage.ListOptions{})
	if err != nil {
		return err
	}
	svcRes := a.Registry.Lookup("", "v1", "services")
	services, err := a.Registry.Store(svcRes).GetList(ctx, svcRes.Scope(""), storage.ListOptions{})
	if err != nil {
		return err
	}
	held := map[string]string{} // ip → namespace/name
	for _, o := range services.Items {
		var svc struct {
			Spec struct {
				Type       string   `json:"type"`
				ClusterIPs []string `json:"clusterIPs"`
			} `json:"spec"`
		}
		if json.Unmarshal(o.JSON(), &svc) != nil || svc.Spec.Type == "ExternalName" {
			continue
		}
		for _, ip := range svc.Spec.ClusterIPs {
			if _, err := netip.ParseAddr(ip); err == nil {
				held[ip] = o.Namespace() + "/" + o.Name()
			}
		}
	}
	present := map[string]bool{}
	for _, o := range addrs.Items {
		present[o.Name()] = true
		ns, name, managed := Parent(o)
		if !managed || held[o.Name()] == ns+"/"+name {
			continue
		}
		var meta struct {
			Metadata struct {
				CreationTimestamp time.Time `json:"creationTimestamp"`
			} `json:"metadata"`
		}
		if json.Unmarshal(o.JSON(), &meta) != nil || time.Since(meta.Metadata.CreationTimestamp) < repairGrace {
			continue
		}
		ipStore.Delete(ctx, ipRes.Key("", o.Name()), &storage.Preconditions{UID: ptr(o.UID())}, nil)
	}
	for ip, svc := range held {
		if present[ip] {
			continue
		}
		ns, name, _ := strings.Cut(svc, "/")
		addr, _ := netip.ParseAddr(ip)
		if err := a.Create(ctx, addr, ns, name); err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
			return err
		}
	}
	return nil
}
