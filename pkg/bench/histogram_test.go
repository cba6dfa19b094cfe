package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHistogramPercentiles compares the histogram's percentiles with the
// exact ones of sorted samples spread over six orders of magnitude.
func TestHistogramPercentiles(t *testing.T) {
	var a, b histogram
	var all []time.Duration
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		d := time.Duration(float64(time.Microsecond) * float64(int64(1)<<rng.IntN(20)) * (1 + rng.Float64()))
		all = append(all, d)
		if i%2 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	a.merge(&b)
	slices.Sort(all)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		exact := all[int(q*float64(len(all)))-1]
		got := a.percentile(q)
		if ratio := float64(got) / float64(exact); ratio < 0.99 || ratio > 1.01 {
			t.Errorf("p%v = %v, exact %v (off by more than 1%%)", q*100, got, exact)
		}
	}
	if a.n != 20000 {
		t.Errorf("merged count %d", a.n)
	}
	var empty histogram
	if empty.percentile(0.5) != 0 {
		t.Error("an empty histogram has a percentile")
	}
	empty.record(-time.Second)
	empty.record(time.Hour)
	if empty.percentile(0.5) != 0 || empty.percentile(1) < 14*time.Minute {
		t.Errorf("out-of-range samples: p50 %v, max %v", empty.percentile(0.5), empty.percentile(1))
	}
}
