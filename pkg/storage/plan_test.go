package storage

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Values shared by the plan tests. The continue token lists scope "ns/" at
// revision 7 and continues at "ns/b"; testRVN equals the token's revision so
// that the "_RV_ | _unset_ | _token_" rows are consistent (PlanList rejects
// an "N" that differs from the token's revision).
const (
	testScope  = "ns/"
	testTokRV  = 7
	testTokKey = "ns/b"
	testRVN    = "7"
	limitN     = 3
)

var testToken = EncodeContinue(testTokRV, testTokKey)

func boolPtr(b bool) *bool { return &b }

// wantBadRequest fails unless err is a storage ErrBadRequest whose message
// contains every one of mentions.
func wantBadRequest(t *testing.T, err error, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want BadRequest mentioning %q", mentions)
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want *storage.Error", err, err)
	}
	if se.Code != ErrBadRequest {
		t.Fatalf("code = %v (%v), want BadRequest", se.Code, err)
	}
	for _, m := range mentions {
		if !strings.Contains(se.Message, m) {
			t.Errorf("message %q does not mention %q", se.Message, m)
		}
	}
}

// listCase is one PlanList call and its expected outcome: a plan, or (when
// wantErr is not nil) a BadRequest whose message mentions every string in
// wantErr.
type listCase struct {
	name    string
	opts    ListOptions
	want    ListPlan
	wantErr []string
}

// fromToken is the plan of a continued list at the test token.
func fromToken(limit int64) ListPlan {
	return ListPlan{Read: ReadExact, RV: testTokRV, Limit: limit, StartKey: testTokKey, Continuation: true}
}

// listTableCases has one case per combination of ResourceVersion {unset,
// "0", "N"} × ResourceVersionMatch {unset, Exact, NotOlderThan} × continue
// {unset, token} × limit {unset, N}; each name quotes the row of the KEP
// list table (KEP-2340, docs/design.md) that covers it, with the
// combination in brackets where the row covers several.
func listTableCases() []listCase {
	const (
		rvForbidden       = "resourceVersionMatch is forbidden unless resourceVersion is provided"
		exactZero         = `resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`
		continueForbidden = "resourceVersionMatch is forbidden when continue is provided"
	)
	return []listCase{
		// _unset_ resourceVersion.
		{
			name: "_unset_ | _unset_ | _unset_ | _unset_ (quorum read)",
			opts: ListOptions{},
			want: ListPlan{Read: ReadConsistent},
		},
		{
			name: "_unset_ | _unset_ | _unset_ | _N_ (quorum read, up to N items)",
			opts: ListOptions{Limit: limitN},
			want: ListPlan{Read: ReadConsistent, Limit: limitN},
		},
		{
			name: "_unset_ | _unset_ | _token_ | _unset_ / _N_ [limit unset] (read from RV in token)",
			opts: ListOptions{Continue: testToken},
			want: fromToken(0),
		},
		{
			name: "_unset_ | _unset_ | _token_ | _unset_ / _N_ [limit N] (read from RV in token)",
			opts: ListOptions{Continue: testToken, Limit: limitN},
			want: fromToken(limitN),
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue unset, limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue unset, limit N] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue token, limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact, Continue: testToken},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue token, limit N] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact, Continue: testToken, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _NotOlderThan_ | _unset_ | _unset_ / _N_ [limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _NotOlderThan_ | _unset_ | _unset_ / _N_ [limit N] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _NotOlderThan_ | _token_ | _unset_ / _N_ [limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: testToken},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},
		{
			name:    "_unset_ | _NotOlderThan_ | _token_ | _unset_ / _N_ [limit N] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: testToken, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", rvForbidden},
		},

		// resourceVersion "0".
		{
			name: "_0_ | _unset_ | _unset_ | _unset_ / _N_ [limit unset] (any state)",
			opts: ListOptions{ResourceVersion: "0"},
			want: ListPlan{Read: ReadAny},
		},
		{
			name: "_0_ | _unset_ | _unset_ | _unset_ / _N_ [limit N] (any state; the cache may ignore limit)",
			opts: ListOptions{ResourceVersion: "0", Limit: limitN},
			want: ListPlan{Read: ReadAny, Limit: limitN},
		},
		{
			// The table's etcd column says "Quorum read request"; a
			// continuation must read the token's snapshot to stay a
			// consistent list (KEP-365), as kube-apiserver does.
			name: "_0_ | _unset_ | _token_ | _unset_ / _N_ [limit unset] (read from RV in token)",
			opts: ListOptions{ResourceVersion: "0", Continue: testToken},
			want: fromToken(0),
		},
		{
			name: "_0_ | _unset_ | _token_ | _unset_ / _N_ [limit N] (read from RV in token)",
			opts: ListOptions{ResourceVersion: "0", Continue: testToken, Limit: limitN},
			want: fromToken(limitN),
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue unset, limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: []string{"resourceVersionMatch", exactZero},
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue unset, limit N] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", exactZero},
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue token, limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Continue: testToken},
			wantErr: []string{"resourceVersionMatch", exactZero},
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / _token_ | _unset_ / _N_ [continue token, limit N] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Continue: testToken, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", exactZero},
		},
		{
			name: "_0_ | _NotOlderThan_ | _unset_ | _unset_ / _N_ [limit unset] (any state)",
			opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: ListPlan{Read: ReadAny},
		},
		{
			name: "_0_ | _NotOlderThan_ | _unset_ | _unset_ / _N_ [limit N] (any state; the cache may ignore limit)",
			opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: limitN},
			want: ListPlan{Read: ReadAny, Limit: limitN},
		},
		{
			name: "_0_ | _NotOlderThan_ | _token_ | _unset_ / _N_ [limit unset] (read from RV in token)",
			opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: testToken},
			want: fromToken(0),
		},
		{
			name: "_0_ | _NotOlderThan_ | _token_ | _unset_ / _N_ [limit N] (read from RV in token)",
			opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: testToken, Limit: limitN},
			want: fromToken(limitN),
		},

		// resourceVersion "N".
		{
			name: "_RV_ | _unset_ | _unset_ | _unset_ (not older than RV)",
			opts: ListOptions{ResourceVersion: testRVN},
			want: ListPlan{Read: ReadNotOlderThan, RV: testTokRV},
		},
		{
			name: "_RV_ | _unset_ | _unset_ | _N_ (legacy limit => Exact)",
			opts: ListOptions{ResourceVersion: testRVN, Limit: limitN},
			want: ListPlan{Read: ReadExact, RV: testTokRV, Limit: limitN},
		},
		{
			name: "_RV_ | _unset_ | _token_ | _unset_ / _N_ [limit unset] (read from RV in token; RV equals the token's)",
			opts: ListOptions{ResourceVersion: testRVN, Continue: testToken},
			want: fromToken(0),
		},
		{
			name: "_RV_ | _unset_ | _token_ | _unset_ / _N_ [limit N] (read from RV in token; RV equals the token's)",
			opts: ListOptions{ResourceVersion: testRVN, Continue: testToken, Limit: limitN},
			want: fromToken(limitN),
		},
		{
			name: "_RV_ | _Exact_ | _unset_ | _unset_ / _N_ [limit unset] (exactly RV)",
			opts: ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			want: ListPlan{Read: ReadExact, RV: testTokRV},
		},
		{
			name: "_RV_ | _Exact_ | _unset_ | _unset_ / _N_ [limit N] (exactly RV)",
			opts: ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: limitN},
			want: ListPlan{Read: ReadExact, RV: testTokRV, Limit: limitN},
		},
		{
			name:    "_RV_ | _Exact_ | _token_ | _unset_ / _N_ [limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Continue: testToken},
			wantErr: []string{"resourceVersionMatch", continueForbidden},
		},
		{
			name:    "_RV_ | _Exact_ | _token_ | _unset_ / _N_ [limit N] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Continue: testToken, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", continueForbidden},
		},
		{
			name: "_RV_ | _NotOlderThan_ | _unset_ | _unset_ (not older than RV)",
			opts: ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: ListPlan{Read: ReadNotOlderThan, RV: testTokRV},
		},
		{
			name: "_RV_ | _NotOlderThan_ | _unset_ | _N_ (not older than RV, up to N items)",
			opts: ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: limitN},
			want: ListPlan{Read: ReadNotOlderThan, RV: testTokRV, Limit: limitN},
		},
		{
			name:    "_RV_ | _NotOlderThan_ | _token_ | _unset_/ _N_ [limit unset] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: testToken},
			wantErr: []string{"resourceVersionMatch", continueForbidden},
		},
		{
			name:    "_RV_ | _NotOlderThan_ | _token_ | _unset_/ _N_ [limit N] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Continue: testToken, Limit: limitN},
			wantErr: []string{"resourceVersionMatch", continueForbidden},
		},
	}
}

func runListCases(t *testing.T, cases []listCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanList(tc.opts, testScope)
			if tc.wantErr != nil {
				wantBadRequest(t, err, tc.wantErr...)
				if got != (ListPlan{}) {
					t.Errorf("plan = %+v alongside an error, want the zero plan", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("PlanList(%+v) error: %v", tc.opts, err)
			}
			if got != tc.want {
				t.Errorf("PlanList(%+v)\n got  %+v\n want %+v", tc.opts, got, tc.want)
			}
		})
	}
}

func TestPlanList(t *testing.T) {
	cases := listTableCases()
	if len(cases) != 3*3*2*2 {
		t.Fatalf("%d cases, want one per combination (36)", len(cases))
	}
	// Every combination appears exactly once.
	combos := map[string]int{}
	for _, tc := range cases {
		o := tc.opts
		combos[fmt.Sprintf("%q|%q|%v|%v", o.ResourceVersion, o.ResourceVersionMatch, o.Continue != "", o.Limit > 0)]++
	}
	if len(combos) != 36 {
		t.Fatalf("cases cover %d distinct combinations, want 36: %v", len(combos), combos)
	}
	runListCases(t, cases)
}

// TestPlanListBeyondTable covers the validation PlanList does besides the
// table, and the continue token in detail.
func TestPlanListBeyondTable(t *testing.T) {
	var cases []listCase
	for _, rv := range []string{"-1", "01", " 1", "1 ", "1a", "+1", "0x1", "1.0", "1e3", "18446744073709551616", "9223372036854775808"} {
		cases = append(cases, listCase{
			name:    fmt.Sprintf("malformed resourceVersion %q", rv),
			opts:    ListOptions{ResourceVersion: rv},
			wantErr: []string{"resourceVersion"},
		})
	}
	for _, m := range []string{"exact", "notolderthan", "Foo", " Exact"} {
		cases = append(cases, listCase{
			name:    fmt.Sprintf("unknown resourceVersionMatch %q", m),
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatch(m)},
			wantErr: []string{"resourceVersionMatch", fmt.Sprintf("%q", m)},
		})
	}
	otherScopeToken := EncodeContinue(testTokRV, "other/x")
	inconsistent := EncodeContinue(InconsistentContinueRV, testTokKey)
	cases = append(cases,
		listCase{
			name: "largest resourceVersion 9223372036854775807",
			opts: ListOptions{ResourceVersion: "9223372036854775807", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			want: ListPlan{Read: ReadExact, RV: 1<<63 - 1},
		},
		listCase{
			name:    "negative limit",
			opts:    ListOptions{Limit: -1},
			wantErr: []string{"limit", "-1"},
		},
		listCase{
			name:    "negative limit with resourceVersion N",
			opts:    ListOptions{ResourceVersion: testRVN, Limit: -5},
			wantErr: []string{"limit"},
		},
		listCase{
			name:    "sendInitialEvents=true on list",
			opts:    ListOptions{SendInitialEvents: boolPtr(true)},
			wantErr: []string{"sendInitialEvents"},
		},
		listCase{
			name:    "sendInitialEvents=false on list",
			opts:    ListOptions{ResourceVersion: "0", SendInitialEvents: boolPtr(false)},
			wantErr: []string{"sendInitialEvents"},
		},
		listCase{
			name: "inconsistent continue token (RV -1), resourceVersion unset: consistent read from the start key",
			opts: ListOptions{Continue: inconsistent, Limit: limitN},
			want: ListPlan{Read: ReadConsistent, Limit: limitN, StartKey: testTokKey, Continuation: true},
		},
		listCase{
			name: "inconsistent continue token (RV -1), resourceVersion 0: consistent read from the start key",
			opts: ListOptions{ResourceVersion: "0", Continue: inconsistent},
			want: ListPlan{Read: ReadConsistent, StartKey: testTokKey, Continuation: true},
		},
		listCase{
			name:    "inconsistent continue token (RV -1), resourceVersion N: inconsistent with the token",
			opts:    ListOptions{ResourceVersion: testRVN, Continue: inconsistent},
			wantErr: []string{"resourceVersion", "inconsistent", "continue"},
		},
		listCase{
			name:    "resourceVersion N differs from the token's (KEP-365: 400)",
			opts:    ListOptions{ResourceVersion: "8", Continue: testToken},
			wantErr: []string{"resourceVersion 8", "inconsistent", "continue"},
		},
		listCase{
			name:    "continue token outside the scope",
			opts:    ListOptions{Continue: otherScopeToken},
			wantErr: []string{"continue token", "outside"},
		},
		listCase{
			name:    "continue token outside the scope, resourceVersion 0",
			opts:    ListOptions{ResourceVersion: "0", Continue: otherScopeToken, Limit: limitN},
			wantErr: []string{"continue token"},
		},
		listCase{
			name:    "garbage continue token",
			opts:    ListOptions{Continue: "not a token!"},
			wantErr: []string{"continue token"},
		},
		listCase{
			name:    "continue token with a traversing start key",
			opts:    ListOptions{Continue: EncodeContinue(testTokRV, "ns/../other/x")},
			wantErr: []string{"continue token"},
		},
		listCase{
			name:    "continue token at revision 0",
			opts:    ListOptions{Continue: EncodeContinue(0, testTokKey)},
			wantErr: []string{"continue token"},
		},
	)
	runListCases(t, cases)

	t.Run("token checked against the scope given", func(t *testing.T) {
		// The same token is fine for the whole resource ("") and for its
		// own namespace, and rejected for another namespace.
		for _, scope := range []string{"", "other/"} {
			got, err := PlanList(ListOptions{Continue: otherScopeToken}, scope)
			if err != nil {
				t.Fatalf("scope %q: %v", scope, err)
			}
			want := ListPlan{Read: ReadExact, RV: testTokRV, StartKey: "other/x", Continuation: true}
			if got != want {
				t.Errorf("scope %q: got %+v, want %+v", scope, got, want)
			}
		}
		_, err := PlanList(ListOptions{Continue: otherScopeToken}, "ns/")
		wantBadRequest(t, err, "outside")
		_, err = PlanList(ListOptions{Continue: otherScopeToken}, "oth/")
		wantBadRequest(t, err, "outside")
	})

	t.Run("selectors and bookmarks do not change the plan", func(t *testing.T) {
		got, err := PlanList(ListOptions{ResourceVersion: testRVN, Limit: limitN, AllowWatchBookmarks: true}, testScope)
		if err != nil {
			t.Fatal(err)
		}
		if want := (ListPlan{Read: ReadExact, RV: testTokRV, Limit: limitN}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
}

// watchCases has one case per combination of ResourceVersion {unset, "0",
// "N"} × ResourceVersionMatch {unset, NotOlderThan, Exact} ×
// sendInitialEvents {unset, false, true}; each name quotes the row of the
// KEP watch table (KEP-2340, docs/design.md) that covers it.
type watchCase struct {
	name    string
	opts    ListOptions
	want    WatchPlan
	wantErr []string
}

func watchTableCases() []watchCase {
	nt := metav1.ResourceVersionMatchNotOlderThan
	ex := metav1.ResourceVersionMatchExact
	needMatch := []string{"sendInitialEvents", "resourceVersionMatch", "NotOlderThan"}
	needSend := []string{"resourceVersionMatch", "unless sendInitialEvents is provided"}
	noExact := []string{"resourceVersionMatch", "Exact"}
	t, f := boolPtr(true), boolPtr(false)
	return []watchCase{
		// _unset_ resourceVersion.
		{
			name: "_unset_ | _unset_ | _unset_ (quorum list + watch stream)",
			opts: ListOptions{},
			want: WatchPlan{Initial: ReadConsistent},
		},
		{
			name:    "_unset_ | _unset_ | false / true [false] (fails validation)",
			opts:    ListOptions{SendInitialEvents: f},
			wantErr: needMatch,
		},
		{
			name:    "_unset_ | _unset_ | false / true [true] (fails validation)",
			opts:    ListOptions{SendInitialEvents: t},
			wantErr: needMatch,
		},
		{
			name:    "_unset_ | _NotOlderThan_ | _unset_ (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: nt},
			wantErr: needSend,
		},
		{
			name: "_unset_ | _NotOlderThan_ | false (watch stream from etcd RV)",
			opts: ListOptions{ResourceVersionMatch: nt, SendInitialEvents: f},
			want: WatchPlan{FromNow: true},
		},
		{
			name: "_unset_ | _NotOlderThan_ | true (quorum list + watch stream)",
			opts: ListOptions{ResourceVersionMatch: nt, SendInitialEvents: t},
			want: WatchPlan{Initial: ReadConsistent, InitialEventsEnd: true},
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / false / true [unset] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: ex},
			wantErr: noExact,
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / false / true [false] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: ex, SendInitialEvents: f},
			wantErr: noExact,
		},
		{
			name:    "_unset_ | _Exact_ | _unset_ / false / true [true] (fails validation)",
			opts:    ListOptions{ResourceVersionMatch: ex, SendInitialEvents: t},
			wantErr: noExact,
		},

		// resourceVersion "0".
		{
			name: "_0_ | _unset_ | _unset_ (list + watch stream)",
			opts: ListOptions{ResourceVersion: "0"},
			want: WatchPlan{Initial: ReadAny},
		},
		{
			name:    "_0_ | _unset_ | false / true [false] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", SendInitialEvents: f},
			wantErr: needMatch,
		},
		{
			name:    "_0_ | _unset_ | false / true [true] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", SendInitialEvents: t},
			wantErr: needMatch,
		},
		{
			name:    "_0_ | _NotOlderThan_ | _unset_ (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: nt},
			wantErr: needSend,
		},
		{
			name: "_0_ | _NotOlderThan_ | false (watch stream from current RV)",
			opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: nt, SendInitialEvents: f},
			want: WatchPlan{FromNow: true},
		},
		{
			name: "_0_ | _NotOlderThan_ | true (list + watch stream)",
			opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: nt, SendInitialEvents: t},
			want: WatchPlan{Initial: ReadAny, InitialEventsEnd: true},
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / false / true [unset] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: ex},
			wantErr: noExact,
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / false / true [false] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: ex, SendInitialEvents: f},
			wantErr: noExact,
		},
		{
			name:    "_0_ | _Exact_ | _unset_ / false / true [true] (fails validation)",
			opts:    ListOptions{ResourceVersion: "0", ResourceVersionMatch: ex, SendInitialEvents: t},
			wantErr: noExact,
		},

		// resourceVersion "N".
		{
			name: "_RV_ | _unset_ | _unset_ (watch stream from RV)",
			opts: ListOptions{ResourceVersion: testRVN},
			want: WatchPlan{RV: testTokRV},
		},
		{
			name:    "_RV_ | _unset_ | false / true [false] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, SendInitialEvents: f},
			wantErr: needMatch,
		},
		{
			name:    "_RV_ | _unset_ | false / true [true] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, SendInitialEvents: t},
			wantErr: needMatch,
		},
		{
			name:    "_RV_ | _NotOlderThan_ | _unset_ (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: nt},
			wantErr: needSend,
		},
		{
			name: "_RV_ | _NotOlderThan_ | false (check RV > etcd RV; watch stream from RV)",
			opts: ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: nt, SendInitialEvents: f},
			want: WatchPlan{RV: testTokRV, RequireReached: true},
		},
		{
			name: "_RV_ | _NotOlderThan_ | true (check RV > etcd RV; list not older than RV + watch stream)",
			opts: ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: nt, SendInitialEvents: t},
			want: WatchPlan{Initial: ReadNotOlderThan, RV: testTokRV, RequireReached: true, InitialEventsEnd: true},
		},
		{
			name:    "_RV_ | _Exact_ | _unset_ / false / true [unset] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: ex},
			wantErr: noExact,
		},
		{
			name:    "_RV_ | _Exact_ | _unset_ / false / true [false] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: ex, SendInitialEvents: f},
			wantErr: noExact,
		},
		{
			name:    "_RV_ | _Exact_ | _unset_ / false / true [true] (fails validation)",
			opts:    ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: ex, SendInitialEvents: t},
			wantErr: noExact,
		},
	}
}

func sendString(p *bool) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func TestPlanWatch(t *testing.T) {
	cases := watchTableCases()
	combos := map[string]bool{}
	for _, tc := range cases {
		o := tc.opts
		combos[fmt.Sprintf("%q|%q|%s", o.ResourceVersion, o.ResourceVersionMatch, sendString(o.SendInitialEvents))] = true
	}
	if len(cases) != 27 || len(combos) != 27 {
		t.Fatalf("%d cases over %d combinations, want 27 of each", len(cases), len(combos))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, bookmarks := range []bool{false, true} {
				opts := tc.opts
				opts.AllowWatchBookmarks = bookmarks
				got, err := PlanWatch(opts)
				if tc.wantErr != nil {
					wantBadRequest(t, err, tc.wantErr...)
					if got != (WatchPlan{}) {
						t.Errorf("plan = %+v alongside an error", got)
					}
					continue
				}
				if err != nil {
					t.Fatalf("PlanWatch(%+v): %v", opts, err)
				}
				want := tc.want
				want.Bookmarks = bookmarks
				if got != want {
					t.Errorf("PlanWatch(%+v)\n got  %+v\n want %+v", opts, got, want)
				}
				// limit and continue are ignored by watches.
				opts.Limit, opts.Continue = limitN, "not a token"
				if got2, err := PlanWatch(opts); err != nil || got2 != got {
					t.Errorf("with limit and continue: %+v, %v; want %+v", got2, err, got)
				}
			}
		})
	}
}

func TestPlanWatchBadOptions(t *testing.T) {
	for _, rv := range []string{"-1", "01", " 1", "1a", "18446744073709551616", "9223372036854775808"} {
		_, err := PlanWatch(ListOptions{ResourceVersion: rv})
		t.Run("resourceVersion "+rv, func(t *testing.T) { wantBadRequest(t, err, "resourceVersion") })
	}
	for _, m := range []string{"exact", "Foo"} {
		_, err := PlanWatch(ListOptions{ResourceVersion: testRVN, ResourceVersionMatch: metav1.ResourceVersionMatch(m), SendInitialEvents: boolPtr(true)})
		t.Run("resourceVersionMatch "+m, func(t *testing.T) { wantBadRequest(t, err, "resourceVersionMatch", m) })
	}
}

func TestPlanGet(t *testing.T) {
	for _, tc := range []struct {
		rv   string
		want GetPlan
	}{
		{"", GetPlan{Read: ReadConsistent}},
		{"0", GetPlan{Read: ReadAny}},
		{"1", GetPlan{Read: ReadNotOlderThan, RV: 1}},
		{"42", GetPlan{Read: ReadNotOlderThan, RV: 42}},
		{"9223372036854775807", GetPlan{Read: ReadNotOlderThan, RV: 1<<63 - 1}},
	} {
		t.Run(fmt.Sprintf("%q", tc.rv), func(t *testing.T) {
			got, err := PlanGet(GetOptions{ResourceVersion: tc.rv})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, rv := range []string{"-1", "00", "01", " 1", "1 ", "1a", "a", "+1", "0x10", "1_000", "18446744073709551616", "9223372036854775808", "٣"} {
		t.Run(fmt.Sprintf("%q", rv), func(t *testing.T) {
			got, err := PlanGet(GetOptions{ResourceVersion: rv})
			wantBadRequest(t, err, "resourceVersion")
			if got != (GetPlan{}) {
				t.Errorf("plan = %+v alongside an error", got)
			}
		})
	}
}

func TestReadKindString(t *testing.T) {
	for k, want := range map[ReadKind]string{
		ReadConsistent: "Consistent", ReadAny: "Any", ReadNotOlderThan: "NotOlderThan", ReadExact: "Exact", 0: "none",
	} {
		if got := k.String(); got != want {
			t.Errorf("ReadKind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

var (
	allClasses = []rvClass{rvUnset, rvZero, rvN}
	allMatches = []metav1.ResourceVersionMatch{matchUnset, exact, notOlder}
	allSends   = []tri{unsetValue, falseValue, setValue}
)

func classOf(t *testing.T, rv string) rvClass {
	t.Helper()
	_, c, err := classifyRV(rv)
	if err != nil {
		t.Fatalf("classifyRV(%q): %v", rv, err)
	}
	return c
}

func sendOf(p *bool) tri {
	switch {
	case p == nil:
		return unsetValue
	case *p:
		return setValue
	}
	return falseValue
}

// watchRowsFor returns the indexes of the watch table rows matching a
// combination, by the rule PlanWatch applies.
func watchRowsFor(class rvClass, match metav1.ResourceVersionMatch, send tri) []int {
	var out []int
	for i, r := range watchTable {
		if r.rv == class && r.match == match && (r.sendInitial == anyValue || r.sendInitial == send) {
			out = append(out, i)
		}
	}
	return out
}

// TestTablesAreComplete checks that the list and watch tables give exactly
// one row to every combination of options (so their order does not matter
// and no combination falls through to "unsupported"), that every row is
// reachable, and that the table tests above reach every row.
func TestTablesAreComplete(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		hits := make([]int, len(listTable))
		for _, class := range allClasses {
			for _, match := range allMatches {
				for _, continued := range []bool{false, true} {
					for _, limited := range []bool{false, true} {
						var rows []int
						for i, r := range listTable {
							if r.rv == class && r.match == match && r.continued.matches(continued) && r.limit.matches(limited) {
								rows = append(rows, i)
							}
						}
						if len(rows) != 1 {
							t.Errorf("rv class %d, match %q, continued %v, limited %v: matches rows %v, want exactly one", class, match, continued, limited, rows)
							continue
						}
						hits[rows[0]]++
						got, ok := findListRow(class, match, continued, limited)
						if !ok || got != listTable[rows[0]] {
							t.Errorf("findListRow(%d, %q, %v, %v) = %+v, %v; want row %d", class, match, continued, limited, got, ok, rows[0])
						}
					}
				}
			}
		}
		for i, n := range hits {
			if n == 0 {
				t.Errorf("list row %d %+v matches no combination", i, listTable[i])
			}
		}
		for i, r := range listTable {
			if (r.read == listFails) != (r.why != "") {
				t.Errorf("list row %d: read %d with message %q", i, r.read, r.why)
			}
			if r.read == listFails && !strings.Contains(r.why, "resourceVersionMatch") {
				t.Errorf("list row %d: message %q does not name the bad option", i, r.why)
			}
			if r.continued == falseValue || r.limit == falseValue {
				t.Errorf("list row %d uses falseValue for continue or limit", i)
			}
		}
		// The table test reaches every row.
		reached := make([]bool, len(listTable))
		for _, tc := range listTableCases() {
			o := tc.opts
			r, ok := findListRow(classOf(t, o.ResourceVersion), o.ResourceVersionMatch, o.Continue != "", o.Limit > 0)
			if !ok {
				t.Errorf("case %q: no row", tc.name)
				continue
			}
			for i := range listTable {
				if listTable[i] == r {
					reached[i] = true
				}
			}
		}
		for i, ok := range reached {
			if !ok {
				t.Errorf("list row %d %+v is not reached by TestPlanList", i, listTable[i])
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		hits := make([]int, len(watchTable))
		for _, class := range allClasses {
			for _, match := range allMatches {
				for _, send := range allSends {
					rows := watchRowsFor(class, match, send)
					if len(rows) != 1 {
						t.Errorf("rv class %d, match %q, sendInitialEvents %d: matches rows %v, want exactly one", class, match, send, rows)
						continue
					}
					hits[rows[0]]++
				}
			}
		}
		for i, n := range hits {
			if n == 0 {
				t.Errorf("watch row %d %+v matches no combination", i, watchTable[i])
			}
		}
		for i, r := range watchTable {
			if (r.start == watchFails) != (r.why != "") {
				t.Errorf("watch row %d: start %d with message %q", i, r.start, r.why)
			}
			if r.start == watchFails && (r.check || r.endBookmark) {
				t.Errorf("watch row %d fails but sets check or endBookmark", i)
			}
			// A stream that begins with initial events, and only such a
			// stream, ends them with the initial-events-end bookmark when
			// sendInitialEvents=true asked for it.
			if r.endBookmark != (r.sendInitial == setValue && r.start != watchFails) {
				t.Errorf("watch row %d: endBookmark %v with sendInitial %d", i, r.endBookmark, r.sendInitial)
			}
			// The store must have reached RV only for "N" with NotOlderThan.
			if r.check != (r.rv == rvN && r.match == notOlder && r.start != watchFails) {
				t.Errorf("watch row %d: check %v", i, r.check)
			}
		}
		reached := make([]bool, len(watchTable))
		for _, tc := range watchTableCases() {
			o := tc.opts
			rows := watchRowsFor(classOf(t, o.ResourceVersion), o.ResourceVersionMatch, sendOf(o.SendInitialEvents))
			if len(rows) != 1 {
				t.Errorf("case %q: rows %v", tc.name, rows)
				continue
			}
			reached[rows[0]] = true
		}
		for i, ok := range reached {
			if !ok {
				t.Errorf("watch row %d %+v is not reached by TestPlanWatch", i, watchTable[i])
			}
		}
	})
}
