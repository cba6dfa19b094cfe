package cacher

import (
	"testing"

	"github.com/watchcache/watchcache/pkg/storage"
)

// TestDecisions checks the decisions table row by row, and that a cache
// that is not ready delegates every read.
func TestDecisions(t *testing.T) {
	for _, tc := range []struct {
		row  string
		read storage.ReadKind
		want source
	}{
		{"consistent (resourceVersion unset) → wait for etcd's revision, newest snapshot", storage.ReadConsistent, fromConsistent},
		{`any ("0") → newest snapshot`, storage.ReadAny, fromNewest},
		{"not older than N → wait for N, newest snapshot", storage.ReadNotOlderThan, fromNewest},
		{"exact N, legacy limit+N, continue token → snapshot at N", storage.ReadExact, fromHistory},
	} {
		t.Run(tc.row, func(t *testing.T) {
			if got := decide(tc.read, cacheState{ready: true, consistentFromCache: true}); got != tc.want {
				t.Errorf("ready: decide(%s) = %d, want %d", tc.read, got, tc.want)
			}
			if got := decide(tc.read, cacheState{consistentFromCache: true}); got != fromEtcd {
				t.Errorf("not ready: decide(%s) = %d, want etcd", tc.read, got)
			}
			want := tc.want
			if want == fromConsistent {
				want = fromEtcd
			}
			if got := decide(tc.read, cacheState{ready: true}); got != want {
				t.Errorf("gate off: decide(%s) = %d, want %d", tc.read, got, want)
			}
			want = tc.want
			if want == fromConsistent || want == fromHistory {
				want = fromEtcd
			}
			if got := decide(tc.read, cacheState{ready: true, consistentFromCache: true, inconsistent: true}); got != want {
				t.Errorf("inconsistent: decide(%s) = %d, want %d", tc.read, got, want)
			}
		})
	}
	if len(decisions) != 4 {
		t.Errorf("the decisions table has %d rows; this test covers 4", len(decisions))
	}
	for _, row := range decisions {
		if row.why == "" {
			t.Errorf("row %s has no reason", row.read)
		}
	}
}

// TestPlansMapToDecisions ties the list table to the decisions: each
// shape of request lands on the source the issue asks for.
func TestPlansMapToDecisions(t *testing.T) {
	token := storage.EncodeContinue(7, "ns/b")
	for _, tc := range []struct {
		name string
		opts storage.ListOptions
		want source
	}{
		{"RV unset", storage.ListOptions{}, fromConsistent},
		{"RV unset, limit", storage.ListOptions{Limit: 5}, fromConsistent},
		{"RV 0", storage.ListOptions{ResourceVersion: "0"}, fromNewest},
		{"RV 0, limit (honoured)", storage.ListOptions{ResourceVersion: "0", Limit: 5}, fromNewest},
		{"RV N", storage.ListOptions{ResourceVersion: "7"}, fromNewest},
		{"RV N NotOlderThan, limit", storage.ListOptions{ResourceVersion: "7", ResourceVersionMatch: "NotOlderThan", Limit: 5}, fromNewest},
		{"RV N Exact", storage.ListOptions{ResourceVersion: "7", ResourceVersionMatch: "Exact"}, fromHistory},
		{"RV N, limit (legacy exact)", storage.ListOptions{ResourceVersion: "7", Limit: 5}, fromHistory},
		{"continue token", storage.ListOptions{Continue: token, Limit: 5}, fromHistory},
		{"inconsistent continue token", storage.ListOptions{Continue: storage.EncodeContinue(storage.InconsistentContinueRV, "ns/b")}, fromConsistent},
	} {
		plan, err := storage.PlanList(tc.opts, "ns/")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := decide(plan.Read, cacheState{ready: true, consistentFromCache: true}); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
