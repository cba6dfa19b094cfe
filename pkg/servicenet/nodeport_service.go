// Node ports of Services: the write pipeline's stages (allocation after
// the cluster IPs, release after storage) and the repair pass.

package servicenet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pipeline"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// AllocateNodePorts is the mutating stage giving a NodePort or
// LoadBalancer Service its node ports (and, for a LoadBalancer with
// externalTrafficPolicy Local, its health-check node port), as
// kube-apiserver's Service REST does after the cluster IPs. An update
// keeps the ports it had, and drops them with a type that has none.
type AllocateNodePorts struct{ *NodePorts }

// ReleaseNodePorts is the Written stage freeing the node ports of a
// deleted Service and those an update let go.
type ReleaseNodePorts struct{ *NodePorts }

func needsNodePorts(spec map[string]any) bool {
	return spec != nil && (spec["type"] == "NodePort" || spec["type"] == "LoadBalancer")
}

func needsHealthCheck(spec map[string]any) bool {
	return spec != nil && spec["type"] == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
}

func toInt(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case float64:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}

func portMaps(spec map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := spec["ports"].([]any)
	for _, p := range list {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// heldPorts are the node ports a Service's spec holds.
func heldPorts(spec map[string]any) []int {
	if spec == nil {
		return nil
	}
	var out []int
	for _, m := range portMaps(spec) {
		if np := toInt(m["nodePort"]); np > 0 {
			out = append(out, np)
		}
	}
	if hc := toInt(spec["healthCheckNodePort"]); hc > 0 {
		out = append(out, hc)
	}
	return out
}

func specOf(obj map[string]any) map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	return spec
}

// dropTypeDependent clears what an update to a type without them leaves
// of the old spec's node ports, health-check port, traffic policy and
// allocateLoadBalancerNodePorts (kube-apiserver's dropTypeDependentFields:
// only values the update did not change).
func dropTypeDependent(oldSpec, spec map[string]any) {
	if needsNodePorts(oldSpec) && !needsNodePorts(spec) {
		old := map[int]bool{}
		for _, p := range heldPorts(oldSpec) {
			old[p] = true
		}
		for _, m := range portMaps(spec) {
			if np := toInt(m["nodePort"]); np != 0 && old[np] {
				delete(m, "nodePort")
			}
		}
		if etp, ok := spec["externalTrafficPolicy"]; ok && etp == oldSpec["externalTrafficPolicy"] {
			delete(spec, "externalTrafficPolicy")
		}
	}
	if needsHealthCheck(oldSpec) && !needsHealthCheck(spec) {
		if hc := toInt(spec["healthCheckNodePort"]); hc != 0 && hc == toInt(oldSpec["healthCheckNodePort"]) {
			delete(spec, "healthCheckNodePort")
		}
	}
	if oldSpec["type"] == "LoadBalancer" && spec["type"] != "LoadBalancer" {
		if a, ok := spec["allocateLoadBalancerNodePorts"]; ok && a == oldSpec["allocateLoadBalancerNodePorts"] {
			delete(spec, "allocateLoadBalancerNodePorts")
		}
	}
}

// oldNodePort is the node port the old spec gave the port matching m
// (same port and protocol).
func oldNodePort(oldSpec map[string]any, m map[string]any) int {
	proto := func(m map[string]any) any {
		if p, ok := m["protocol"]; ok {
			return p
		}
		return "TCP"
	}
	for _, o := range portMaps(oldSpec) {
		if toInt(o["port"]) == toInt(m["port"]) && proto(o) == proto(m) {
			return toInt(o["nodePort"])
		}
	}
	return 0
}

func (s AllocateNodePorts) Mutate(ctx context.Context, req *pipeline.Request) (map[string]any, error) {
	obj := req.Object
	if !isService(req) || obj == nil || s.NodePorts == nil {
		return obj, nil
	}
	spec := specOf(obj)
	if spec == nil {
		return obj, nil
	}
	var oldSpec map[string]any
	if req.OldObject != nil {
		oldSpec = specOf(req.OldObject)
		dropTypeDependent(oldSpec, spec)
	}
	if !needsNodePorts(spec) {
		return obj, nil
	}
	old := map[int]bool{}
	for _, p := range heldPorts(oldSpec) {
		old[p] = true
	}
	rangeMsg := fmt.Sprintf(msgPortRange, s.Range)
	ports := portMaps(spec)
	type want struct{ idx, port int }
	var requested []want
	byPort := map[int]int{} // service port → its node port
	seen := map[int]int{}   // node port → its service port
	for i, m := range ports {
		np := toInt(m["nodePort"])
		if np == 0 && needsNodePorts(oldSpec) {
			if np = oldNodePort(oldSpec, m); np != 0 {
				m["nodePort"] = int64(np)
			}
		}
		if np == 0 {
			continue
		}
		sp := toInt(m["port"])
		p := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if other, ok := seen[np]; ok {
			if other == sp {
				continue
			}
			return nil, invalid(req, p, np, msgPortAllocated)
		}
		seen[np] = sp
		if _, ok := byPort[sp]; !ok {
			byPort[sp] = np
		}
		if old[np] {
			continue
		}
		if !s.Range.Contains(np) {
			return nil, invalid(req, p, np, rangeMsg)
		}
		requested = append(requested, want{i, np})
	}
	allocate := spec["type"] == "NodePort" || spec["allocateLoadBalancerNodePorts"] != false
	var fresh []int // service ports wanting a node port
	for _, m := range ports {
		sp := toInt(m["port"])
		if _, ok := byPort[sp]; !ok && allocate && toInt(m["nodePort"]) == 0 {
			byPort[sp] = 0
			fresh = append(fresh, sp)
		}
	}
	hc, hcRequested, hcFresh := 0, false, false
	if needsHealthCheck(spec) {
		hc = toInt(spec["healthCheckNodePort"])
		if hc == 0 && needsHealthCheck(oldSpec) {
			hc = toInt(oldSpec["healthCheckNodePort"])
		}
		switch {
		case hc == 0:
			hcFresh = true
		case !old[hc]:
			if !s.Range.Contains(hc) {
				return nil, hcFailed(hc, rangeMsg)
			}
			hcRequested = true
		}
	}
	if len(requested) == 0 && len(fresh) == 0 && !hcRequested && !hcFresh {
		if hc != 0 {
			spec["healthCheckNodePort"] = int64(hc)
		}
		return obj, nil
	}
	var got map[int]int
	err := s.update(ctx, req.DryRun, func(b *bitmap) error {
		got = map[int]int{}
		for _, w := range requested {
			if b.has(w.port) {
				return invalid(req, field.NewPath("spec", "ports").Index(w.idx).Child("nodePort"), w.port, msgPortAllocated)
			}
			b.set(w.port)
		}
		if hcRequested {
			if b.has(hc) {
				return hcFailed(hc, msgPortAllocated)
			}
			b.set(hc)
		}
		for _, sp := range fresh {
			np, ok := b.next()
			if !ok {
				return errFull()
			}
			got[sp] = np
		}
		if hcFresh {
			np, ok := b.next()
			if !ok {
				return errFull()
			}
			got[-1] = np
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !req.DryRun { // give back what was taken if the write is not stored
		var taken []int
		for _, w := range requested {
			taken = append(taken, w.port)
		}
		if hcRequested {
			taken = append(taken, hc)
		}
		for _, np := range got {
			taken = append(taken, np)
		}
		req.OnAbort(func(ctx context.Context) { s.Release(ctx, taken) })
	}
	for _, m := range ports {
		if np, ok := got[toInt(m["port"])]; ok && toInt(m["nodePort"]) == 0 {
			m["nodePort"] = int64(np)
		}
	}
	if hcFresh {
		hc = got[-1]
	}
	if hc != 0 {
		spec["healthCheckNodePort"] = int64(hc)
	}
	return obj, nil
}

// hcFailed is kube-apiserver's error for a requested health-check node
// port it refuses: a 500, as recorded.
func hcFailed(port int, why string) error {
	return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %d: %s", port, why))
}

// Written frees the node ports of a deleted Service (not one finalizers
// hold) and those the old object of an update held and the new does not.
func (s ReleaseNodePorts) Written(ctx context.Context, req *pipeline.Request, o *object.Object) {
	if !isService(req) || o == nil || s.NodePorts == nil {
		return
	}
	var stored map[string]any
	if kjson.UnmarshalCaseSensitivePreserveInts(o.JSON(), &stored) != nil {
		return
	}
	var free []int
	switch req.Operation {
	case "DELETE":
		meta, _ := stored["metadata"].(map[string]any)
		if f, _ := meta["finalizers"].([]any); len(f) > 0 {
			return
		}
		free = heldPorts(specOf(stored))
	case "UPDATE":
		keep := map[int]bool{}
		for _, p := range heldPorts(specOf(stored)) {
			keep[p] = true
		}
		for _, p := range heldPorts(specOf(req.OldObject)) {
			if !keep[p] {
				free = append(free, p)
			}
		}
	}
	s.Release(ctx, free)
}

// leakPasses is how many repair passes in a row find a port taken that
// no Service holds before it is freed (kube-apiserver's
// numRepairsBeforeLeakCleanup): the port of a create in flight is taken
// before its Service is stored.
const leakPasses = 3

// NodePortRepair is kube-apiserver's repair of node ports: the bitmap is
// rebuilt from the Services, a port no Service holds freed once
// leakPasses passes found it so. Make one per run of the controllers.
type NodePortRepair struct {
	*NodePorts
	Registry *resource.Registry
	Log      *slog.Logger
	leaks    map[int]int
}

// errRecordChanged ends a repair pass whose record changed after its
// Services were listed.
var errRecordChanged = errors.New("node port repair: the record changed during the pass; the next pass repairs")

// Repair runs one pass. Like kube-apiserver's, it reads the record before
// it lists the Services and writes only if the record is still the one
// it read: a port freed after the list (a Service deleted) must not be
// set again from the list.
func (r *NodePortRepair) Repair(ctx context.Context) error {
	before, err := r.Store.Get(ctx, NodePortKey, storage.GetOptions{})
	if storage.IsNotFound(err) {
		return nil // nothing allocated yet
	}
	if err != nil {
		return err
	}
	res := r.Registry.Lookup("", "v1", "services")
	services, err := r.Registry.Store(res).GetList(ctx, res.Scope(""), storage.ListOptions{})
	if err != nil {
		return err
	}
	held := map[int]string{}
	for _, o := range services.Items {
		var svc map[string]any
		if kjson.UnmarshalCaseSensitivePreserveInts(o.JSON(), &svc) != nil {
			continue
		}
		who := o.Namespace() + "/" + o.Name()
		for _, p := range heldPorts(specOf(svc)) {
			if !r.Range.Contains(p) {
				r.log().Warn("node port repair: a Service's node port is out of the range", "service", who, "port", p, "range", r.Range)
				continue
			}
			if other, ok := held[p]; ok && other != who {
				r.log().Warn("node port repair: a node port is held twice", "port", p, "services", other+" "+who)
			}
			held[p] = who
		}
	}
	var leaks map[int]int
	err = r.update(ctx, false, func(b *bitmap) error {
		if b.rv != before.ResourceVersion() {
			return errRecordChanged
		}
		leaks = map[int]int{}
		next := &bitmap{r: r.Range, bits: new(big.Int)}
		for p := range held {
			next.set(p)
		}
		for i := range r.Range.Size {
			p := r.Range.Base + i
			if b.has(p) && !next.has(p) {
				if n := r.leaks[p] + 1; n < leakPasses {
					leaks[p] = n
					next.set(p)
				}
			}
		}
		b.bits = next.bits
		return nil
	})
	if err == nil {
		r.leaks = leaks
	}
	if errors.Is(err, errRecordChanged) {
		return nil
	}
	return err
}

func (r *NodePortRepair) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}
