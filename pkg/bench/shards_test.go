package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/storage"
)

// TestShardRanges: the 4 ranges cover the hash space in order without gap
// or overlap, their selectors are the server's syntax and parse, and each
// uid is in exactly one.
func TestShardRanges(t *testing.T) {
	ranges := shardRanges(4)
	want := []string{
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
		"shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
		"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
	}
	for i, r := range ranges {
		if got := r.selector(); got != want[i] {
			t.Errorf("range %d: %s, want %s", i, got, want[i])
		}
		if _, err := storage.ParseShardSelector(r.selector()); err != nil {
			t.Errorf("range %d: %v", i, err)
		}
	}
	for _, n := range []int{1, 3, 4, 7} {
		rs := shardRanges(n)
		if rs[0].first != 0 || rs[n-1].last != math.MaxUint64 {
			t.Errorf("%d ranges: from %#x to %#x", n, rs[0].first, rs[n-1].last)
		}
		for i := 1; i < n; i++ {
			if rs[i].first != rs[i-1].last+1 || rs[i].first <= rs[i-1].first {
				t.Errorf("%d ranges: %+v then %+v", n, rs[i-1], rs[i])
			}
		}
	}
	for i := range 1000 {
		uid := fmt.Sprintf("6f0c4a8e-%08d-4d1e-9f0e-2b7c5d3a1e00", i)
		in := 0
		for _, r := range ranges {
			if r.holds(uid) {
				in++
			}
		}
		if in != 1 {
			t.Fatalf("%s is in %d ranges", uid, in)
		}
	}
}

func TestUnionMismatch(t *testing.T) {
	whole := []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		whole []string
		parts [][]string
		want  []string // in the description, in order; none: ""
	}{
		{whole, [][]string{{"b", "d"}, {"a"}, {}, {"c"}}, nil},
		{whole, [][]string{{"a", "b"}, {"b", "c", "d"}}, []string{"1 keys more than once in the shards (e.g. b)"}},
		{whole, [][]string{{"a", "a", "b", "c", "d"}}, []string{"1 keys more than once in the shards (e.g. a)"}},
		{whole, [][]string{{"a"}, {"c"}}, []string{"2 keys in no shard (e.g. d)"}},
		{whole, [][]string{{"a", "b", "c", "d", "e"}}, []string{"1 keys in the shards but not in the unsharded one (e.g. e)"}},
		{[]string{"a", "a"}, [][]string{{"a"}}, []string{"1 keys twice in the unsharded one (e.g. a)"}},
		{whole, [][]string{{"a", "x"}, {"a"}}, []string{"more than once in the shards (e.g. a)", "1 keys in the shards but not", "3 keys in no shard"}},
	} {
		got := unionMismatch("keys", c.whole, c.parts)
		if len(c.want) == 0 && got != "" {
			t.Errorf("%v of %v: %q, want none", c.parts, c.whole, got)
		}
		rest := got
		for _, w := range c.want {
			_, after, ok := strings.Cut(rest, w)
			if !ok {
				t.Errorf("%v of %v: %q, want %q in order", c.parts, c.whole, got, c.want)
				break
			}
			rest = after
		}
	}
}
