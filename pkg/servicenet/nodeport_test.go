package servicenet

import (
	"math/big"
	"testing"
)

func TestNodePortRange(t *testing.T) {
	for in, want := range map[string]PortRange{"30000-32767": {30000, 2768}, "30000+10": {30000, 11}, "8080": {8080, 1}} {
		if got, err := ParsePortRange(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a-b", "10-5", "1-70000"} {
		if _, err := ParsePortRange(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
	if b := (PortRange{30000, 2768}).staticBand(); b != 86 {
		t.Errorf("static band %d, want 86", b)
	}
	// Every port of a small range is given once, then none.
	b := &bitmap{r: PortRange{100, 20}, bits: new(big.Int)}
	seen := map[int]bool{}
	for range 20 {
		p, ok := b.next()
		if !ok || seen[p] || p < 100 || p >= 120 {
			t.Fatalf("next: %d %v", p, ok)
		}
		seen[p] = true
	}
	if _, ok := b.next(); ok {
		t.Error("a full range gave a port")
	}
}
