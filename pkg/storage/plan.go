// The resourceVersion contract of KEP-2340 as tables: which state a Get, a
// List (resourceVersion, resourceVersionMatch, limit, continue) and a Watch
// must reflect, validated into plans.

package storage

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadKind says which state a read must reflect.
type ReadKind int

const (
	// ReadConsistent: the most recent state, reflecting every write
	// acknowledged before the read began (resourceVersion unset).
	ReadConsistent ReadKind = iota + 1
	// ReadAny: any state; the freshest one at hand (resourceVersion "0").
	ReadAny
	// ReadNotOlderThan: a state at revision ≥ RV.
	ReadNotOlderThan
	// ReadExact: the state at exactly revision RV.
	ReadExact
)

func (k ReadKind) String() string {
	names := [...]string{"none", "Consistent", "Any", "NotOlderThan", "Exact"}
	if k < 0 || int(k) >= len(names) {
		return fmt.Sprintf("ReadKind(%d)", int(k))
	}
	return names[k]
}

// GetPlan is a validated Get.
type GetPlan struct {
	Read ReadKind
	RV   uint64
}

// PlanGet validates GetOptions: "" consistent, "0" any, "N" not older than N.
func PlanGet(opts GetOptions) (GetPlan, error) {
	switch opts.ResourceVersion {
	case "":
		return GetPlan{Read: ReadConsistent}, nil
	case "0":
		return GetPlan{Read: ReadAny}, nil
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return GetPlan{}, err
	}
	return GetPlan{Read: ReadNotOlderThan, RV: rv}, nil
}

// ListPlan is a validated GetList.
type ListPlan struct {
	Read ReadKind
	// RV is the revision for ReadNotOlderThan and ReadExact.
	RV uint64
	// Limit caps the page (0: no limit).
	Limit int64
	// StartKey, from a continue token, is the first key to return (relative
	// to the resource); "" starts at the scope.
	StartKey string
	// Continuation is set when the list continues an earlier page (its RV
	// comes from the token).
	Continuation bool
}

// rvClass is the shape of a resourceVersion parameter.
type rvClass int

const (
	rvUnset rvClass = iota // ""
	rvZero                 // "0"
	rvN                    // "N", N > 0
)

// tri is a three-valued option: unset, false, true; anyValue matches all.
type tri int

const (
	anyValue tri = iota
	unsetValue
	setValue // for continue/limit: given; for sendInitialEvents: true
	falseValue
)

const (
	matchUnset = metav1.ResourceVersionMatch("")
	exact      = metav1.ResourceVersionMatchExact
	notOlder   = metav1.ResourceVersionMatchNotOlderThan
)

// listRead is what a list table row does.
type listRead int

const (
	listFails listRead = iota
	listConsistent
	listAny
	listNotOlderThan
	listExact
	listFromToken
)

// listRow is one row of the list table of KEP-2340, in the KEP's order
// (docs/design.md has the table with the tests of each row).
type listRow struct {
	rv        rvClass
	match     metav1.ResourceVersionMatch
	continued tri
	limit     tri
	read      listRead
	why       string // for failing rows: the message
}

// listTable is the contract for LIST. The "etcd implementation" column:
// unset → quorum read; token → read at the token's RV; "0" → any state
// (etcd serves the newest); "N" without match and without limit → not
// older than N; "N" with a limit (legacy) → exactly N.
var listTable = []listRow{
	{rvUnset, matchUnset, unsetValue, anyValue, listConsistent, ""},
	{rvUnset, matchUnset, setValue, anyValue, listFromToken, ""},
	{rvUnset, exact, anyValue, anyValue, listFails, "resourceVersionMatch is forbidden unless resourceVersion is provided"},
	{rvUnset, notOlder, anyValue, anyValue, listFails, "resourceVersionMatch is forbidden unless resourceVersion is provided"},
	{rvZero, matchUnset, unsetValue, anyValue, listAny, ""},
	{rvZero, matchUnset, setValue, anyValue, listFromToken, ""},
	{rvZero, exact, anyValue, anyValue, listFails, `resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`},
	{rvZero, notOlder, unsetValue, anyValue, listAny, ""},
	{rvZero, notOlder, setValue, anyValue, listFromToken, ""},
	{rvN, matchUnset, unsetValue, unsetValue, listNotOlderThan, ""},
	{rvN, matchUnset, unsetValue, setValue, listExact, ""},
	{rvN, matchUnset, setValue, anyValue, listFromToken, ""},
	{rvN, exact, unsetValue, anyValue, listExact, ""},
	{rvN, exact, setValue, anyValue, listFails, "resourceVersionMatch is forbidden when continue is provided"},
	{rvN, notOlder, unsetValue, anyValue, listNotOlderThan, ""},
	{rvN, notOlder, setValue, anyValue, listFails, "resourceVersionMatch is forbidden when continue is provided"},
}

// PlanList validates ListOptions for a list over scope and says what to
// read, following listTable. Beyond the table: a resourceVersion "N" given
// with a continue token must equal the token's (KEP-365: an inconsistent
// resourceVersion is a 400), negative limits and unknown
// resourceVersionMatch values are rejected, and so is sendInitialEvents.
func PlanList(opts ListOptions, scope string) (ListPlan, error) {
	rv, class, err := classifyRV(opts.ResourceVersion)
	if err != nil {
		return ListPlan{}, err
	}
	if err := checkMatch(opts.ResourceVersionMatch); err != nil {
		return ListPlan{}, err
	}
	if opts.Limit < 0 {
		return ListPlan{}, NewBadRequest("limit must not be negative, got %d", opts.Limit)
	}
	if opts.SendInitialEvents != nil {
		return ListPlan{}, NewBadRequest("sendInitialEvents is forbidden for list")
	}
	row, ok := findListRow(class, opts.ResourceVersionMatch, opts.Continue != "", opts.Limit > 0)
	if !ok {
		return ListPlan{}, NewBadRequest("unsupported list options")
	}
	plan := ListPlan{Limit: opts.Limit, RV: rv}
	switch row.read {
	case listFails:
		return ListPlan{}, NewBadRequest("%s", row.why)
	case listConsistent:
		plan.Read = ReadConsistent
	case listAny:
		plan.Read = ReadAny
	case listNotOlderThan:
		plan.Read = ReadNotOlderThan
	case listExact:
		plan.Read = ReadExact
	case listFromToken:
		c, err := DecodeContinue(opts.Continue, scope)
		if err != nil {
			return ListPlan{}, err
		}
		if class == rvN && int64(rv) != c.ResourceVersion {
			return ListPlan{}, NewBadRequest("resourceVersion %d is inconsistent with the continue token (resourceVersion %d)", rv, c.ResourceVersion)
		}
		plan.Continuation, plan.StartKey = true, c.StartKey
		if c.ResourceVersion == InconsistentContinueRV {
			plan.Read, plan.RV = ReadConsistent, 0
		} else {
			plan.Read, plan.RV = ReadExact, uint64(c.ResourceVersion)
		}
	}
	return plan, nil
}

func findListRow(class rvClass, match metav1.ResourceVersionMatch, continued, limited bool) (listRow, bool) {
	for _, r := range listTable {
		if r.rv == class && r.match == match && r.continued.matches(continued) && r.limit.matches(limited) {
			return r, true
		}
	}
	return listRow{}, false
}

func (t tri) matches(v bool) bool {
	switch t {
	case anyValue:
		return true
	case unsetValue, falseValue:
		return !v
	default:
		return v
	}
}

// WatchPlan is a validated Watch.
type WatchPlan struct {
	// Initial, when not 0, is how to read the state sent first as ADDED
	// events; the stream then starts after that state's revision.
	Initial ReadKind
	// RV is the revision for Initial == ReadNotOlderThan, or, without
	// initial state and without FromNow, the revision after which events
	// are streamed.
	RV uint64
	// FromNow starts the stream at the store's current revision.
	FromNow bool
	// RequireReached fails with ErrTooLargeResourceVersion if RV is ahead of
	// the store ("Check RV > etcd RV" in the table).
	RequireReached bool
	// InitialEventsEnd sends a BOOKMARK marked k8s.io/initial-events-end
	// after the initial state.
	InitialEventsEnd bool
	// Bookmarks asks for BOOKMARK events as the stream's revision advances.
	Bookmarks bool
}

// watchStart is what a watch table row does.
type watchStart int

const (
	watchFails watchStart = iota
	watchListConsistent
	watchListAny
	watchListNotOlderThan
	watchFromRV
	watchFromNow
)

// watchRow is one row of the watch table of KEP-2340, in the KEP's order
// (docs/design.md has the table with the tests of each row). sendInitial is unsetValue, falseValue or setValue (true); anyValue matches all.
type watchRow struct {
	rv          rvClass
	match       metav1.ResourceVersionMatch
	sendInitial tri
	start       watchStart
	check       bool // RV must not be ahead of the store
	endBookmark bool
	why         string
}

// watchTable is the contract for WATCH. limit and continue are ignored by
// watches, as the KEP says.
var watchTable = []watchRow{
	{rvUnset, matchUnset, unsetValue, watchListConsistent, false, false, ""},
	{rvUnset, matchUnset, falseValue, watchFails, false, false, sendInitialNeedsMatch},
	{rvUnset, matchUnset, setValue, watchFails, false, false, sendInitialNeedsMatch},
	{rvUnset, notOlder, unsetValue, watchFails, false, false, matchNeedsSendInitial},
	{rvUnset, notOlder, falseValue, watchFromNow, false, false, ""},
	{rvUnset, notOlder, setValue, watchListConsistent, false, true, ""},
	{rvUnset, exact, anyValue, watchFails, false, false, exactForbiddenForWatch},
	{rvZero, matchUnset, unsetValue, watchListAny, false, false, ""},
	{rvZero, matchUnset, falseValue, watchFails, false, false, sendInitialNeedsMatch},
	{rvZero, matchUnset, setValue, watchFails, false, false, sendInitialNeedsMatch},
	{rvZero, notOlder, unsetValue, watchFails, false, false, matchNeedsSendInitial},
	{rvZero, notOlder, falseValue, watchFromNow, false, false, ""},
	{rvZero, notOlder, setValue, watchListAny, false, true, ""},
	{rvZero, exact, anyValue, watchFails, false, false, exactForbiddenForWatch},
	{rvN, matchUnset, unsetValue, watchFromRV, false, false, ""},
	{rvN, matchUnset, falseValue, watchFails, false, false, sendInitialNeedsMatch},
	{rvN, matchUnset, setValue, watchFails, false, false, sendInitialNeedsMatch},
	{rvN, notOlder, unsetValue, watchFails, false, false, matchNeedsSendInitial},
	{rvN, notOlder, falseValue, watchFromRV, true, false, ""},
	{rvN, notOlder, setValue, watchListNotOlderThan, true, true, ""},
	{rvN, exact, anyValue, watchFails, false, false, exactForbiddenForWatch},
}

const (
	sendInitialNeedsMatch  = `sendInitialEvents requires setting resourceVersionMatch to "NotOlderThan"`
	matchNeedsSendInitial  = "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
	exactForbiddenForWatch = `resourceVersionMatch "Exact" is not supported for watch: only "NotOlderThan"`
)

// PlanWatch validates ListOptions for a watch and says how to start it,
// following watchTable.
func PlanWatch(opts ListOptions) (WatchPlan, error) {
	rv, class, err := classifyRV(opts.ResourceVersion)
	if err != nil {
		return WatchPlan{}, err
	}
	if err := checkMatch(opts.ResourceVersionMatch); err != nil {
		return WatchPlan{}, err
	}
	send := unsetValue
	if opts.SendInitialEvents != nil {
		send = falseValue
		if *opts.SendInitialEvents {
			send = setValue
		}
	}
	var row *watchRow
	for i := range watchTable {
		r := &watchTable[i]
		if r.rv == class && r.match == opts.ResourceVersionMatch && (r.sendInitial == anyValue || r.sendInitial == send) {
			row = r
			break
		}
	}
	if row == nil {
		return WatchPlan{}, NewBadRequest("unsupported watch options")
	}
	plan := WatchPlan{RV: rv, RequireReached: row.check, InitialEventsEnd: row.endBookmark, Bookmarks: opts.AllowWatchBookmarks}
	switch row.start {
	case watchFails:
		return WatchPlan{}, NewBadRequest("%s", row.why)
	case watchListConsistent:
		plan.Initial = ReadConsistent
	case watchListAny:
		plan.Initial = ReadAny
	case watchListNotOlderThan:
		plan.Initial = ReadNotOlderThan
	case watchFromNow:
		plan.FromNow = true
	case watchFromRV:
	}
	return plan, nil
}

func classifyRV(s string) (uint64, rvClass, error) {
	switch s {
	case "":
		return 0, rvUnset, nil
	case "0":
		return 0, rvZero, nil
	}
	rv, err := ParseResourceVersion(s)
	if err != nil {
		return 0, 0, err
	}
	return rv, rvN, nil
}

func checkMatch(m metav1.ResourceVersionMatch) error {
	switch m {
	case matchUnset, exact, notOlder:
		return nil
	}
	return NewBadRequest("resourceVersionMatch %q is not supported: must be %q, %q or unset", string(m), exact, notOlder)
}
