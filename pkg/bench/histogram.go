// A latency histogram in logarithmic buckets 1% wide, and its percentiles.

package bench

import (
	"math"
	"time"
)

// histogram records latencies in logarithmic buckets 1% wide, so that
// percentiles are exact to within 1% however many samples there are (a watch
// fan-out records ten million). It is not safe for concurrent use: give each
// goroutine its own and merge them.
type histogram struct {
	counts [histogramBuckets]int64
	n      int64
}

const (
	// histogramGrowth is the ratio between consecutive bucket bounds.
	histogramGrowth = 1.01
	// histogramBuckets covers 1 ns to about 20 minutes.
	histogramBuckets = 2800
)

var logGrowth = math.Log(histogramGrowth)

// record adds one latency; negative ones count as zero.
func (h *histogram) record(d time.Duration) {
	i := 0
	if d > 1 {
		i = min(int(math.Log(float64(d))/logGrowth), histogramBuckets-1)
	}
	h.counts[i]++
	h.n++
}

// merge adds other's samples to h.
func (h *histogram) merge(other *histogram) {
	for i, c := range other.counts {
		h.counts[i] += c
	}
	h.n += other.n
}

// percentile returns the latency below which a fraction q (0 < q ≤ 1) of
// the samples fall: the geometric middle of the bucket holding that rank.
// It is 0 without samples.
func (h *histogram) percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == 0 {
				return 0
			}
			return time.Duration(math.Pow(histogramGrowth, float64(i)+0.5))
		}
	}
	panic("unreachable: rank beyond the count of samples")
}
