package flowcontrol

import (
	"slices"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A hand is handSize distinct queues, and different flows get different
// hands.
func TestDeal(t *testing.T) {
	hands := map[string]bool{}
	for h := range uint64(1000) {
		hand := deal(flowHash("global-default", string(rune('a'+h%26))+string(rune(h))), 128, 6)
		sorted := slices.Clone(hand)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != 6 || sorted[0] < 0 || sorted[5] >= 128 {
			t.Fatalf("hand %v: not 6 distinct queues of 128", hand)
		}
		hands[string(rune(sorted[0]))+string(rune(sorted[1]))+string(rune(sorted[2]))] = true
	}
	if len(hands) < 900 {
		t.Errorf("1000 flows got %d distinct hands", len(hands))
	}
}

// The nominal limits are kube-apiserver's for its bootstrap levels and
// 600 seats (recorded: apiserver_flowcontrol_nominal_limit_seats).
func TestLevelSpecs(t *testing.T) {
	b, err := loadBootstrap()
	if err != nil {
		t.Fatal(err)
	}
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for i := range b.priorityLevels {
		pls = append(pls, &b.priorityLevels[i])
	}
	want := map[string]int{"catch-all": 13, "exempt": 0, "global-default": 49, "leader-election": 25, "node-high": 98, "system": 74,
		"workload-high": 98, "workload-low": 245}
	for _, s := range levelSpecs(pls, 600) {
		if s.nominal != want[s.name] {
			t.Errorf("%s: nominal %d seats, kube-apiserver %d", s.name, s.nominal, want[s.name])
		}
	}
}

// testLevel is a queuing level of seats seats (no lending or borrowing),
// queues queues, hand 1 and queue length limit 2.
func testLevel(d *dispatcher, seats int32, queues int32) {
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To(seats), BorrowingLimitPercent: ptr.To[int32](0),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: 1, QueueLengthLimit: 2}}}}}
	d.apply(levelSpecs([]*flowcontrolv1.PriorityLevelConfiguration{pl}, int(seats)))
}

func dispatched(r *request) bool {
	select {
	case <-r.dispatched:
		return true
	default:
		return false
	}
}

// A flow that queued many requests does not hold back a flow that comes
// later: the newcomer's request is the next dispatched, since the busy
// flow has had its share. A full queue
// refuses at once; a cancelled request leaves its queue.
func TestFairQueuing(t *testing.T) {
	d := newDispatcher(newMetrics(nil))
	testLevel(d, 1, 64)
	noisy := flowHash("s", "noisy")
	first, reason := d.admit("l", "s", noisy, 1)
	if reason != "" || !dispatched(first) {
		t.Fatalf("the first request waits: %q", reason)
	}
	var queued []*request
	for range 2 {
		r, reason := d.admit("l", "s", noisy, 1)
		if reason != "" || dispatched(r) {
			t.Fatalf("a request beyond the seat: %q, dispatched %v", reason, dispatched(r))
		}
		queued = append(queued, r)
	}
	if _, reason := d.admit("l", "s", noisy, 1); reason != reasonQueueFull {
		t.Errorf("a third request in a queue of 2: %q, want %q", reason, reasonQueueFull)
	}
	quietHash := flowHash("s", "quiet")
	if deal(quietHash, 64, 1)[0] == deal(noisy, 64, 1)[0] {
		t.Skip("the two flows share a queue")
	}
	quiet, _ := d.admit("l", "s", quietHash, 1)
	d.release(first)
	if !dispatched(quiet) || dispatched(queued[0]) {
		t.Fatalf("the quiet flow waited behind the noisy one (which has had its seat): quiet %v, noisy %v", dispatched(quiet), dispatched(queued[0]))
	}
	d.release(quiet)
	if !dispatched(queued[0]) || dispatched(queued[1]) {
		t.Errorf("then the noisy flow's requests, one at a time: %v %v", dispatched(queued[0]), dispatched(queued[1]))
	}
	if !d.cancel(queued[1]) || d.levels["l"].waiting != 0 {
		t.Errorf("a cancelled request stayed queued")
	}
}

// A request wider than its level's limit runs alone once the level is
// idle (kube-apiserver's rule).
func TestWideRequest(t *testing.T) {
	d := newDispatcher(newMetrics(nil))
	testLevel(d, 2, 8)
	small, _ := d.admit("l", "s", 1, 1)
	wide, _ := d.admit("l", "s", 2, 10)
	if !dispatched(small) || dispatched(wide) {
		t.Fatal("the wide request ran beside another")
	}
	d.release(small)
	if !dispatched(wide) {
		t.Error("the wide request did not run on an idle level")
	}
}
