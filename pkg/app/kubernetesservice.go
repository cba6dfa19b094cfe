// The kubernetes Service: the default ServiceCIDR, the Service in
// default with the first IP of --service-cluster-ip-range, and its
// Endpoints and EndpointSlice listing the live replicas, kept by
// kube-apiserver's lease endpoint reconciler.

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/servicenet"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// DefaultServiceClusterIPRange is kube-apiserver's default of
// --service-cluster-ip-range.
const DefaultServiceClusterIPRange = "10.0.0.0/24"

// DefaultServiceNodePortRange is kube-apiserver's default of
// --service-node-port-range.
const DefaultServiceNodePortRange = servicenet.DefaultNodePortRange

// masterLeaseTTL and endpointInterval are kube-apiserver's lease
// reconciler's: each replica's lease lives 15 s and is renewed every 10 s.
const (
	masterLeaseTTL   = 15
	endpointInterval = 10 * time.Second
)

// serviceCIDRs parses --service-cluster-ip-range: one CIDR, or two of
// different families (dual-stack), the first the primary.
func serviceCIDRs(flag string) ([]netip.Prefix, error) {
	if flag == "" {
		flag = DefaultServiceClusterIPRange
	}
	var out []netip.Prefix
	for _, s := range strings.Split(flag, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--service-cluster-ip-range: %w", err)
		}
		out = append(out, p.Masked())
	}
	if len(out) > 2 || len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4() {
		return nil, fmt.Errorf("--service-cluster-ip-range: at most one CIDR of each IP family, got %q", flag)
	}
	return out, nil
}

// advertiseAddress is --advertise-address or, unset, kube-apiserver's
// default: the bind address unless it is unspecified (0.0.0.0, ::), then
// the first non-loopback address of the host. A server bound to loopback
// (watchcache's default) advertises its loopback address, which
// kube-apiserver's Endpoints validation refuses: it then has no Endpoints
// and no EndpointSlice, as kube-apiserver 1.37 with
// --advertise-address=127.0.0.1 has none.
func advertiseAddress(cfg Config) (netip.Addr, error) {
	if cfg.AdvertiseAddress != "" {
		a, err := netip.ParseAddr(cfg.AdvertiseAddress)
		if err != nil {
			return a, fmt.Errorf("--advertise-address: %w", err)
		}
		return a, nil
	}
	bind, err := netip.ParseAddr(cfg.BindAddress)
	if err != nil || !bind.IsUnspecified() {
		return bind, nil
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() == bind.Is4() {
				return ip.Unmap(), nil
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
}

// ensureKubernetesService creates what kube-apiserver creates at start
// when it is missing: the ServiceCIDR "kubernetes" of the flag's ranges
// (Ready), the IPAddress of the ranges' first IP and the Service
// default/kubernetes holding it, port 443 (https) → port.
func ensureKubernetesService(ctx context.Context, registry *resource.Registry, cidrs []netip.Prefix, port int) error {
	now := metav1.Now().UTC().Format(time.RFC3339)
	var ranges []any
	for _, p := range cidrs {
		ranges = append(ranges, p.String())
	}
	cidr := map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
		"metadata": map[string]any{"name": "kubernetes", "uid": string(uuid.NewUUID()), "creationTimestamp": now},
		"spec":     map[string]any{"cidrs": ranges},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "",
			"message": "Kubernetes default Service CIDR is ready", "lastTransitionTime": now}}},
	}
	if err := createIfMissing(ctx, registry, "networking.k8s.io", "servicecidrs", "", cidr); err != nil {
		return err
	}
	ip := cidrs[0].Addr().Next()
	alloc := &servicenet.Allocator{Registry: registry}
	if err := alloc.Create(ctx, ip, "default", "kubernetes"); err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
		return err
	}
	svc := map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "kubernetes", "namespace": "default", "uid": string(uuid.NewUUID()), "creationTimestamp": now,
			"labels": map[string]any{"component": "apiserver", "provider": "kubernetes"}},
		"spec": map[string]any{
			"clusterIP": ip.String(), "clusterIPs": []any{ip.String()}, "internalTrafficPolicy": "Cluster",
			"ipFamilies": []any{familyName(ip)}, "ipFamilyPolicy": "SingleStack",
			"ports":           []any{map[string]any{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}},
			"sessionAffinity": "None", "type": "ClusterIP",
		},
		"status": map[string]any{"loadBalancer": map[string]any{}},
	}
	return createIfMissing(ctx, registry, "", "services", "default", svc)
}

func familyName(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func createIfMissing(ctx context.Context, registry *resource.Registry, group, plural, ns string, obj map[string]any) error {
	res := registry.Lookup(group, "v1", plural)
	data, err := res.Encode(obj)
	if err != nil {
		return err
	}
	name := obj["metadata"].(map[string]any)["name"].(string)
	if _, err := registry.Store(res).Create(ctx, res.Key(ns, name), data); err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
		return fmt.Errorf("%s %s: %w", plural, name, err)
	}
	return nil
}

// endpointReconciler is kube-apiserver's lease endpoint reconciler: each
// replica keeps a key <prefix>/masterleases/<ip> under an etcd lease of
// masterLeaseTTL seconds, and sets the Endpoints and EndpointSlice
// default/kubernetes to the IPs of the live keys. A replica that stops
// deletes its key; one that dies drops out when its lease expires.
type endpointReconciler struct {
	client   *clientv3.Client
	prefix   string
	registry *resource.Registry
	ip       netip.Addr
	port     int
}

func (r *endpointReconciler) key(ip string) string {
	return strings.TrimSuffix(r.prefix, "/") + "/masterleases/" + ip
}

// run keeps this replica's lease until ctx ends, then removes it.
func (r *endpointReconciler) run(ctx context.Context, log func(msg string, args ...any)) {
	for {
		if err := r.renew(ctx); err != nil && ctx.Err() == nil {
			log("kubernetes endpoints", "err", err)
		}
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := r.client.Delete(stop, r.key(r.ip.String())); err == nil {
				r.reconcile(stop)
			}
			return
		case <-time.After(endpointInterval):
		}
	}
}

func (r *endpointReconciler) renew(ctx context.Context) error {
	lease, err := r.client.Grant(ctx, masterLeaseTTL)
	if err != nil {
		return err
	}
	ip := r.ip.String()
	// kube-apiserver's lease: an Endpoints without metadata, its one
	// address the IP, stored as endpoints are (protobuf).
	value, _ := json.Marshal(map[string]any{"kind": "Endpoints", "apiVersion": "v1", "metadata": map[string]any{},
		"subsets": []any{map[string]any{"addresses": []any{map[string]any{"ip": ip}}}}})
	if value, err = r.registry.Lookup("", "v1", "endpoints").StorageCodec().Encode(value); err != nil {
		return err
	}
	if _, err := r.client.Put(ctx, r.key(ip), string(value), clientv3.WithLease(lease.ID)); err != nil {
		return err
	}
	return r.reconcile(ctx)
}

// reconcile sets the Endpoints and the EndpointSlice to the live IPs.
func (r *endpointReconciler) reconcile(ctx context.Context) error {
	resp, err := r.client.Get(ctx, r.key(""), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	var ips []string
	for _, kv := range resp.Kvs {
		ips = append(ips, strings.TrimPrefix(string(kv.Key), r.key("")))
	}
	slices.Sort(ips)
	ports := []any{map[string]any{"name": "https", "port": r.port, "protocol": "TCP"}}
	var addresses, endpoints []any
	for _, ip := range ips {
		addresses = append(addresses, map[string]any{"ip": ip})
		endpoints = append(endpoints, map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}})
	}
	var subsets []any
	if len(ips) > 0 {
		subsets = []any{map[string]any{"addresses": addresses, "ports": ports}}
	}
	addressType := "IPv4"
	if r.ip.Is6() {
		addressType = "IPv6"
	}
	err = r.set(ctx, "", "endpoints", map[string]any{"apiVersion": "v1", "kind": "Endpoints",
		"metadata": map[string]any{"labels": map[string]any{"endpointslice.kubernetes.io/skip-mirror": "true"}},
	}, map[string]any{"subsets": subsets})
	if err != nil {
		return err
	}
	return r.set(ctx, "discovery.k8s.io", "endpointslices", map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{"labels": map[string]any{"kubernetes.io/service-name": "kubernetes"}},
	}, map[string]any{"addressType": addressType, "endpoints": endpoints, "ports": ports})
}

// set creates default/kubernetes of plural as base with fields, or sets
// fields on the stored one when they differ.
func (r *endpointReconciler) set(ctx context.Context, group, plural string, base, fields map[string]any) error {
	return setFields(ctx, r.registry, group, plural, "default", "kubernetes", base, fields)
}

// setFields creates the object ns/name of plural (version v1) as base with
// fields, as the system, or sets fields on the stored one when they differ.
func setFields(ctx context.Context, registry *resource.Registry, group, plural, ns, name string, base, fields map[string]any) error {
	res := registry.Lookup(group, "v1", plural)
	store, key := registry.Store(res), res.Key(ns, name)
	want, _ := json.Marshal(fields)
	cur, err := store.Get(ctx, key, storage.GetOptions{})
	if storage.CodeOf(err) == storage.ErrNotFound {
		meta := base["metadata"].(map[string]any)
		meta["name"], meta["namespace"], meta["uid"] = name, ns, string(uuid.NewUUID())
		meta["creationTimestamp"] = metav1.Now().UTC().Format(time.RFC3339)
		for k, v := range fields {
			base[k] = v
		}
		data, err := res.Encode(base)
		if err != nil {
			return err
		}
		if _, err := store.Create(ctx, key, data); err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if same(cur, fields, want) {
		return nil
	}
	_, err = store.GuaranteedUpdate(ctx, key, nil, func(cur *object.Object) ([]byte, error) {
		var obj map[string]any
		if err := json.Unmarshal(cur.JSON(), &obj); err != nil {
			return nil, err
		}
		for k, v := range fields {
			obj[k] = v
		}
		return res.Encode(obj)
	}, cur)
	return err
}

// same says whether cur's fields are already want.
func same(cur *object.Object, fields map[string]any, want []byte) bool {
	var obj map[string]any
	if json.Unmarshal(cur.JSON(), &obj) != nil {
		return false
	}
	have := map[string]any{}
	for k := range fields {
		if v, ok := obj[k]; ok {
			have[k] = v
		}
	}
	got, _ := json.Marshal(have)
	var w map[string]any
	json.Unmarshal(want, &w)
	norm, _ := json.Marshal(w)
	return string(got) == string(norm)
}

// nodePortAllocator allocates Service node ports of r in the record
// <prefix>/ranges/servicenodeports (kube-apiserver's key and encoding: a
// core/v1 RangeAllocation in protobuf).
func nodePortAllocator(client *clientv3.Client, prefix string, r servicenet.PortRange) *servicenet.NodePorts {
	schema, _ := object.NewSchema()
	store := etcd3.New(etcd3.Config{Client: client, Prefix: strings.TrimSuffix(prefix, "/") + "/ranges",
		Schema: schema.WithClusterScope(), Codec: resource.RangeAllocationCodec, Resource: "rangeallocations"})
	return &servicenet.NodePorts{Store: store, Range: r}
}
