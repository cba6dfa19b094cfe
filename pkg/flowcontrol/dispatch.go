// Dispatching: the priority levels' seats, their fair queues and the
// seats they lend and borrow.

package flowcontrol

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Why a request was refused (the reason label of
// apiserver_flowcontrol_rejected_requests_total, kube-apiserver's values).
const (
	reasonQueueFull        = "queue-full"
	reasonTimeout          = "time-out"
	reasonConcurrencyLimit = "concurrency-limit"
	reasonCancelled        = "cancelled"
)

// level is a priority level: its limits in seats and its queues.
type level struct {
	name   string
	uid    types.UID
	exempt bool
	// nominal is the level's nominal concurrency limit in seats; guaranteed
	// is what it keeps of it (nominal less its lendable seats); lendable goes
	// to the dispatcher's pool.
	nominal, guaranteed, lendable int
	// borrowLimit bounds the seats it may borrow beyond nominal (-1: no
	// bound but the pool).
	borrowLimit int
	// queues are nil for a level that rejects what it cannot serve at once.
	queues                     []*queue
	handSize, queueLengthLimit int
	// vt is the level's virtual time: the tag of the request dispatched
	// last. A queue that was idle starts its next request at vt, so that a
	// flow gains nothing by having been quiet and loses nothing to the
	// flows that were not.
	vt uint64
	// inUse are the seats of its executing requests; waiting its queued
	// requests.
	inUse, waiting int
	// gone: the level was removed from the configuration; what it queued
	// is dispatched, what it executes finishes.
	gone bool
}

// queue is one of a level's fair queues: its requests in order, and the
// tag its next request starts at.
type queue struct {
	reqs  []*request
	next  uint64
	inUse int // seats of its requests executing
}

// request is one request's place in the dispatcher.
type request struct {
	level  *level
	queue  *queue
	schema string // for metrics
	seats  int
	flow   uint64 // the flow's hash
	tag    uint64
	// dispatched is closed when the request may execute.
	dispatched chan struct{}
	executing  bool
	arrived    time.Time
}

// dispatcher holds every level; one lock guards them all, since a seat
// freed in one level may go to another.
type dispatcher struct {
	mu     sync.Mutex
	levels map[string]*level
	// order is the levels in a fixed order, for dispatching.
	order []*level
	// pool is the seats the levels lend; borrowed those in use beyond
	// their levels' guaranteed seats.
	pool, borrowed int
	metrics        *metrics
}

func newDispatcher(m *metrics) *dispatcher {
	return &dispatcher{levels: map[string]*level{}, metrics: m}
}

// levelSpec is a level's configuration, computed from its object.
type levelSpec struct {
	name                                   string
	uid                                    types.UID
	exempt                                 bool
	nominal, lendable, borrowLimit         int
	queues, handSize, queueLengthLimit     int
	nominalShares, lendPct, borrowLimitPct int32
}

// levelSpecs computes the levels' limits from their objects: each level's
// nominal limit is its share (nominalConcurrencyShares over all levels'
// sum) of serverLimit, rounded up, as kube-apiserver computes it.
func levelSpecs(pls []*flowcontrolv1.PriorityLevelConfiguration, serverLimit int) []levelSpec {
	specs := make([]levelSpec, 0, len(pls))
	sum := 0.0
	for _, pl := range pls {
		s := levelSpec{name: pl.Name, uid: pl.UID, nominalShares: 30, borrowLimitPct: -1}
		switch {
		case pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt:
			s.exempt = true
			s.nominalShares = 0
			if e := pl.Spec.Exempt; e != nil {
				s.nominalShares = deref(e.NominalConcurrencyShares, 0)
				s.lendPct = deref(e.LendablePercent, 0)
			}
		case pl.Spec.Limited != nil:
			l := pl.Spec.Limited
			s.nominalShares = deref(l.NominalConcurrencyShares, 30)
			s.lendPct = deref(l.LendablePercent, 0)
			s.borrowLimitPct = deref(l.BorrowingLimitPercent, -1)
			if q := l.LimitResponse.Queuing; l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue && q != nil {
				s.queues, s.handSize, s.queueLengthLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
			}
		}
		sum += float64(s.nominalShares)
		specs = append(specs, s)
	}
	for i := range specs {
		s := &specs[i]
		if sum > 0 {
			s.nominal = int(math.Ceil(float64(serverLimit) * float64(s.nominalShares) / sum))
		}
		s.lendable = int(math.Round(float64(s.nominal) * float64(s.lendPct) / 100))
		s.borrowLimit = -1
		if s.borrowLimitPct >= 0 {
			s.borrowLimit = int(math.Round(float64(s.nominal) * float64(s.borrowLimitPct) / 100))
		}
	}
	return specs
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// apply replaces the levels' configuration. A level that stays keeps its
// executing requests and its queued ones (re-queued if its queues
// changed); a level that goes dispatches what it queued.
func (d *dispatcher) apply(specs []levelSpec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[string]bool{}
	d.order = d.order[:0]
	d.pool = 0
	for _, s := range specs {
		seen[s.name] = true
		l := d.levels[s.name]
		if l == nil {
			l = &level{name: s.name}
			d.levels[s.name] = l
		}
		l.uid, l.exempt, l.nominal, l.lendable, l.borrowLimit = s.uid, s.exempt, s.nominal, s.lendable, s.borrowLimit
		l.guaranteed = s.nominal - s.lendable
		l.handSize, l.queueLengthLimit = s.handSize, s.queueLengthLimit
		if s.exempt {
			s.queues = 0
		}
		if len(l.queues) != s.queues {
			var waiting []*request
			for _, q := range l.queues {
				waiting = append(waiting, q.reqs...)
			}
			slices.SortFunc(waiting, func(a, b *request) int { return cmp.Compare(a.tag, b.tag) })
			l.queues = make([]*queue, s.queues)
			for i := range l.queues {
				l.queues[i] = &queue{}
			}
			l.waiting = 0
			for _, r := range waiting {
				if len(l.queues) == 0 { // the level no longer queues
					d.metrics.inQueue(r, -1)
					d.dispatchLocked(r)
					continue
				}
				d.enqueueLocked(r, true)
			}
		}
		d.pool += s.lendable
		d.order = append(d.order, l)
		d.metrics.nominalLimit(l.name, l.nominal)
	}
	for name, l := range d.levels {
		if !seen[name] {
			l.gone = true
			for _, q := range l.queues {
				for _, r := range q.reqs {
					l.waiting--
					d.metrics.inQueue(r, -1)
					d.dispatchLocked(r)
				}
				q.reqs = nil
			}
			delete(d.levels, name)
			d.metrics.levelGone(name)
		}
	}
	d.borrowed = 0
	for _, l := range d.order {
		if !l.exempt {
			d.borrowed += max(0, l.inUse-l.guaranteed)
		}
	}
	d.dispatchWaitingLocked()
}

// admit places a request of schema for level (its flow's hash, its seats):
// it returns the request, dispatched or queued, or the reason it is
// refused at once.
func (d *dispatcher) admit(levelName, schema string, flow uint64, seats int) (*request, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.levels[levelName]
	if l == nil {
		return nil, reasonConcurrencyLimit // not reached: classification names a configured level
	}
	r := &request{level: l, schema: schema, seats: seats, flow: flow, dispatched: make(chan struct{}), arrived: time.Now()}
	switch {
	case l.exempt:
		d.dispatchLocked(r)
	case len(l.queues) == 0: // Reject
		if !d.canTakeLocked(l, seats) {
			return nil, reasonConcurrencyLimit
		}
		d.dispatchLocked(r)
	default:
		if !d.enqueueLocked(r, false) {
			return nil, reasonQueueFull
		}
		d.metrics.inQueue(r, 1)
		d.dispatchWaitingLocked()
	}
	return r, ""
}

// enqueueLocked puts r in the shortest queue of its flow's hand (shuffle
// sharding), unless that queue is full (and not forced).
func (d *dispatcher) enqueueLocked(r *request, force bool) bool {
	l := r.level
	var best *queue
	for _, i := range deal(r.flow, len(l.queues), l.handSize) {
		q := l.queues[i]
		if best == nil || q.load() < best.load() {
			best = q
		}
	}
	if !force && len(best.reqs) >= l.queueLengthLimit {
		return false
	}
	r.queue = best
	if len(best.reqs) == 0 && best.next < l.vt {
		best.next = l.vt
	}
	r.tag = best.next
	best.next += uint64(r.seats)
	best.reqs = append(best.reqs, r)
	l.waiting++
	return true
}

// load is a queue's seats waiting and executing.
func (q *queue) load() int {
	n := q.inUse
	for _, r := range q.reqs {
		n += r.seats
	}
	return n
}

// deal is the hand of handSize distinct queue indexes out of n that a
// flow's hash picks (shuffle sharding): the hash read as digits of bases
// n, n-1, ..., each digit an index among the queues not yet dealt.
func deal(hash uint64, n, handSize int) []int {
	hand := make([]int, 0, handSize)
	for i := 0; i < handSize && i < n; i++ {
		card := int(hash % uint64(n-i))
		hash /= uint64(n - i)
		sorted := slices.Clone(hand)
		slices.Sort(sorted)
		for _, c := range sorted {
			if card >= c {
				card++
			}
		}
		hand = append(hand, card)
	}
	return hand
}

// flowHash hashes a flow: its schema and distinguisher.
func flowHash(schema, flow string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(schema))
	h.Write([]byte{0})
	h.Write([]byte(flow))
	return h.Sum64()
}

// canTakeLocked reports whether level l may start a request of seats now:
// within its nominal limit plus what it may borrow, and with any seats
// beyond its guaranteed ones free in the pool. A request wider than the
// level's limit runs alone when the level is idle (kube-apiserver's rule),
// except in a queuing level without seats, which serves nothing (as
// recorded from kube-apiserver 1.37).
//
// Deliberately unlike kube-apiserver, which re-divides the lendable seats
// among the levels every 10 s from their observed demand, a level borrows
// from the pool at the moment it dispatches, and levels below their
// nominal limit are served first when seats free up (see
// dispatchWaitingLocked): the lending follows demand at once.
func (d *dispatcher) canTakeLocked(l *level, seats int) bool {
	if l.exempt || l.gone {
		return true
	}
	limit := l.nominal + d.pool
	if l.borrowLimit >= 0 {
		limit = l.nominal + l.borrowLimit
	}
	if seats > limit {
		return l.inUse == 0 && (len(l.queues) == 0 || limit > 0)
	}
	if l.inUse+seats > limit {
		return false
	}
	extra := max(0, l.inUse+seats-l.guaranteed) - max(0, l.inUse-l.guaranteed)
	return d.borrowed+extra <= d.pool
}

// dispatchLocked starts r: its seats are taken and its waiter woken.
func (d *dispatcher) dispatchLocked(r *request) {
	l := r.level
	before := max(0, l.inUse-l.guaranteed)
	l.inUse += r.seats
	if !l.exempt && !l.gone {
		d.borrowed += max(0, l.inUse-l.guaranteed) - before
	}
	if r.queue != nil {
		r.queue.inUse += r.seats
	}
	r.executing = true
	close(r.dispatched)
	d.metrics.dispatched(r)
}

// dispatchWaitingLocked starts the queued requests that fit, each level's
// in fair order (the queue whose head has the smallest tag first), the
// levels below their nominal limit before those that would borrow.
func (d *dispatcher) dispatchWaitingLocked() {
	for _, borrowing := range []bool{false, true} {
		for _, l := range d.order {
			for l.waiting > 0 && (borrowing || l.inUse < l.nominal) {
				var head *queue
				for _, q := range l.queues {
					if len(q.reqs) > 0 && (head == nil || q.reqs[0].tag < head.reqs[0].tag) {
						head = q
					}
				}
				r := head.reqs[0]
				if !d.canTakeLocked(l, r.seats) {
					break
				}
				head.reqs = head.reqs[1:]
				l.waiting--
				l.vt = r.tag
				d.metrics.inQueue(r, -1)
				d.dispatchLocked(r)
			}
		}
	}
}

// cancel takes a queued request out of its queue, unless it was dispatched
// meanwhile; it reports whether it did.
func (d *dispatcher) cancel(r *request) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.executing {
		return false
	}
	q := r.queue
	if i := slices.Index(q.reqs, r); i >= 0 {
		q.reqs = slices.Delete(q.reqs, i, i+1)
		r.level.waiting--
		d.metrics.inQueue(r, -1)
	}
	return true
}

// release frees an executing request's seats and starts what now fits.
func (d *dispatcher) release(r *request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := r.level
	before := max(0, l.inUse-l.guaranteed)
	l.inUse -= r.seats
	if !l.exempt && !l.gone {
		d.borrowed += max(0, l.inUse-l.guaranteed) - before
	}
	if r.queue != nil {
		r.queue.inUse -= r.seats
	}
	d.metrics.finished(r)
	d.dispatchWaitingLocked()
}
