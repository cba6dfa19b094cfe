// Driving a workload: closed loops (clients each starting the next operation
// when the last ends) and open loops (a fixed rate), and their outcome.

package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// outcome is what a measured workload did: the latency of every operation,
// how many succeeded, how long it all took and what failed.
type outcome struct {
	latency  histogram
	ops      int64
	elapsed  time.Duration
	failures int64
	firstErr error
	// opsByClient counts each client's successful operations (closedLoop).
	opsByClient []int
}

// throughput is successful operations per second over the whole workload.
func (o *outcome) throughput() float64 {
	if o.elapsed <= 0 {
		return 0
	}
	return float64(o.ops) / o.elapsed.Seconds()
}

// add records one operation.
func (o *outcome) add(d time.Duration, err error) {
	if err != nil {
		o.failures++
		if o.firstErr == nil {
			o.firstErr = err
		}
		return
	}
	o.latency.record(d)
	o.ops++
}

// merge adds another goroutine's part of the workload to o.
func (o *outcome) merge(part *outcome) {
	o.latency.merge(&part.latency)
	o.ops += part.ops
	o.failures += part.failures
	if o.firstErr == nil {
		o.firstErr = part.firstErr
	}
}

// timed runs op and returns how long it took.
func timed(op func() error) (time.Duration, error) {
	began := time.Now()
	err := op()
	return time.Since(began), err
}

// closedLoop runs op from clients goroutines, each starting its next
// operation when the previous one returns, for as long as next gives the
// client an operation number (see forDuration and forCount).
func closedLoop(ctx context.Context, clients int, next func(client int) (i int, ok bool), op func(ctx context.Context, client, i int) error) *outcome {
	parts := make([]outcome, clients)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range parts {
		wg.Go(func() {
			for i, ok := next(c); ok && ctx.Err() == nil; i, ok = next(c) {
				parts[c].add(timed(func() error { return op(ctx, c, i) }))
			}
		})
	}
	wg.Wait()
	total := &outcome{elapsed: time.Since(start)}
	for i := range parts {
		total.merge(&parts[i])
		total.opsByClient = append(total.opsByClient, int(parts[i].ops))
	}
	return total
}

// forDuration numbers each client's operations from 0 for at least d and at
// least minEach operations per client (so that slow paths are still
// sampled). Each client must call it from one goroutine.
func forDuration(clients int, d time.Duration, minEach int) func(client int) (int, bool) {
	deadline := time.Now().Add(d)
	done := make([]int, clients)
	return func(c int) (int, bool) {
		i := done[c]
		done[c]++
		return i, i < minEach || time.Now().Before(deadline)
	}
}

// forCount hands out the operation numbers 0 to n-1 to whichever client
// asks first.
func forCount(n int) func(client int) (int, bool) {
	var next atomic.Int64
	return func(int) (int, bool) {
		i := int(next.Add(1) - 1)
		return i, i < n
	}
}

// openLoop starts op at a fixed rate per second for d, whether or not
// earlier operations have returned (as independent clients would), then
// waits for all of them.
func openLoop(ctx context.Context, rate float64, d time.Duration, op func(ctx context.Context) error) *outcome {
	var mu sync.Mutex
	total := &outcome{}
	start := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for n := int(rate * d.Seconds()); n > 0 && ctx.Err() == nil; n-- {
		wg.Go(func() {
			took, err := timed(func() error { return op(ctx) })
			mu.Lock()
			defer mu.Unlock()
			total.add(took, err)
		})
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	return total
}
