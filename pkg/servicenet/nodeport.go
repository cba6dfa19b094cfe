// Node ports: kube-apiserver's model, a bitmap of the range kept in one
// RangeAllocation record (kube-apiserver's /registry/ranges/servicenodeports)
// and changed only by the store's GuaranteedUpdate. That optimistic update
// is the lock across replicas: two replicas taking ports at once conflict
// on the record's revision, and the loser retries against the winner's
// bitmap. One record, not a key per port, because a Service's ports
// (requested and allocated, with its health-check port) are then taken
// all or none in one write, and repair rebuilds it in one write, as
// kube-apiserver's.

package servicenet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultNodePortRange is kube-apiserver's default of
// --service-node-port-range.
const DefaultNodePortRange = "30000-32767"

// NodePortKey is the record's key in its store, whose prefix is the
// storage prefix's "/ranges" (kube-apiserver's
// /registry/ranges/servicenodeports).
const NodePortKey = "servicenodeports"

// kube-apiserver's words for a requested node port it refuses (recorded
// from kube-apiserver 1.37, e2e/testdata/nodeport.json).
const (
	msgPortAllocated = "provided port is already allocated"
	msgPortRange     = "provided port is not in the valid range. The range of valid ports is %s"
)

// PortRange is a range of ports: Base and the Size ports after it.
type PortRange struct{ Base, Size int }

// ParsePortRange parses --service-node-port-range as kube-apiserver's
// net.ParsePortRange: "low-high", "base+offset" or one port.
func ParsePortRange(s string) (PortRange, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("invalid port range %q", s)
	if s == "" {
		return PortRange{}, bad
	}
	lo, hi := s, s
	var plus bool
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, hi = a, b
	} else if a, b, ok := strings.Cut(s, "+"); ok {
		lo, hi, plus = a, b, true
	}
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || l < 0 || h < 0 {
		return PortRange{}, bad
	}
	if plus {
		h += l
	}
	if l > h || h > 65535 {
		return PortRange{}, bad
	}
	return PortRange{Base: l, Size: h - l + 1}, nil
}

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1) }

// Contains says whether port p is in the range.
func (r PortRange) Contains(p int) bool { return p >= r.Base && p < r.Base+r.Size }

// NodePorts allocates node ports from Range, in the record NodePortKey
// of Store.
type NodePorts struct {
	Store storage.Interface
	Range PortRange
}

// bitmap is the set of taken ports of a range, as of the record's
// revision rv (0: no record yet).
type bitmap struct {
	r    PortRange
	bits *big.Int
	rv   uint64
}

func (b *bitmap) has(p int) bool { return b.r.Contains(p) && b.bits.Bit(p-b.r.Base) == 1 }
func (b *bitmap) set(p int)      { b.bits.SetBit(b.bits, p-b.r.Base, 1) }
func (b *bitmap) clear(p int)    { b.bits.SetBit(b.bits, p-b.r.Base, 0) }

// rangeRecord is the stored RangeAllocation: the range and its bitmap
// (big-endian, bit i the port range.Base+i, as kube-apiserver's).
type rangeRecord struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Range      string         `json:"range"`
	Data       string         `json:"data"`
}

// decode reads the bitmap of o (nil: none yet) over n's range: the ports
// of a record of another range (the flag changed) that are in n's stay.
func (n *NodePorts) decode(o *object.Object) (*bitmap, error) {
	b := &bitmap{r: n.Range, bits: new(big.Int)}
	if o == nil {
		return b, nil
	}
	b.rv = o.ResourceVersion()
	var rec rangeRecord
	if err := json.Unmarshal(o.JSON(), &rec); err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(rec.Data)
	if err != nil {
		return nil, err
	}
	stored, err := ParsePortRange(rec.Range)
	if err != nil {
		return b, nil
	}
	bits := new(big.Int).SetBytes(data)
	if stored == n.Range {
		b.bits = bits
		return b, nil
	}
	for i := range bits.BitLen() {
		if p := stored.Base + i; bits.Bit(i) == 1 && n.Range.Contains(p) {
			b.set(p)
		}
	}
	return b, nil
}

// encode is the record of b; created is its creationTimestamp, if it has
// one (kube-apiserver's record has none).
func (n *NodePorts) encode(b *bitmap, created string) ([]byte, error) {
	meta := map[string]any{"name": NodePortKey}
	if created != "" {
		meta["creationTimestamp"] = created
	}
	return json.Marshal(rangeRecord{APIVersion: "v1", Kind: "RangeAllocation", Metadata: meta,
		Range: n.Range.String(), Data: base64.StdEncoding.EncodeToString(b.bits.Bytes())})
}

// update changes the bitmap by fn in one optimistic update (creating the
// record the first time); dryRun runs fn on the bitmap as it is and
// writes nothing.
func (n *NodePorts) update(ctx context.Context, dryRun bool, fn func(b *bitmap) error) error {
	cur, err := n.Store.Get(ctx, NodePortKey, storage.GetOptions{})
	if storage.IsNotFound(err) {
		cur, err = nil, nil
		if !dryRun {
			data, _ := n.encode(&bitmap{r: n.Range, bits: new(big.Int)}, metav1.Now().UTC().Format(time.RFC3339))
			if _, err = n.Store.Create(ctx, NodePortKey, data); storage.CodeOf(err) == storage.ErrAlreadyExists {
				err = nil
			}
		}
	}
	if err != nil {
		return err
	}
	if dryRun {
		b, err := n.decode(cur)
		if err != nil {
			return err
		}
		return fn(b)
	}
	_, err = n.Store.GuaranteedUpdate(ctx, NodePortKey, nil, func(o *object.Object) ([]byte, error) {
		b, err := n.decode(o)
		if err != nil {
			return nil, err
		}
		if err := fn(b); err != nil {
			return nil, err
		}
		var meta struct {
			Metadata struct {
				CreationTimestamp string `json:"creationTimestamp"`
			} `json:"metadata"`
		}
		json.Unmarshal(o.JSON(), &meta)
		return n.encode(b, meta.Metadata.CreationTimestamp)
	}, nil)
	return err
}

// staticBand is the size of the range's lower band, kept for requested
// ports (kube-apiserver's ServiceNodePortStaticSubrange: size/32, between
// 16 and 128; none for a range under 16).
func (r PortRange) staticBand() int {
	if r.Size < 16 {
		return 0
	}
	return min(max(r.Size/32, 16), 128)
}

// next takes a free port at random: the upper band first, then the lower.
func (b *bitmap) next() (int, bool) {
	band := b.r.staticBand()
	for _, span := range [][2]int{{band, b.r.Size}, {0, band}} {
		lo, hi := span[0], span[1]
		if hi <= lo {
			continue
		}
		start := rand.IntN(hi - lo)
		for i := range hi - lo {
			p := b.r.Base + lo + (start+i)%(hi-lo)
			if !b.has(p) {
				b.set(p)
				return p, true
			}
		}
	}
	return 0, false
}

// Release frees ports (those out of the range are ignored).
func (n *NodePorts) Release(ctx context.Context, ports []int) error {
	if len(ports) == 0 {
		return nil
	}
	return n.update(ctx, false, func(b *bitmap) error {
		for _, p := range ports {
			if n.Range.Contains(p) {
				b.clear(p)
			}
		}
		return nil
	})
}

// Taken are the ports the record holds taken, in order.
func (n *NodePorts) Taken(ctx context.Context) ([]int, error) {
	var out []int
	err := n.update(ctx, true, func(b *bitmap) error {
		for p := n.Range.Base; p < n.Range.Base+n.Range.Size; p++ {
			if b.has(p) {
				out = append(out, p)
			}
		}
		return nil
	})
	return out, err
}

// errFull is kube-apiserver's error for a full range (not recorded).
func errFull() error {
	return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
}
