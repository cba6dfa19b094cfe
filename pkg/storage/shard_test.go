package storage

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
)

const (
	uidRange = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	upper    = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
)

// TestParseShardSelector: the forms kube-apiserver accepts (any CEL
// spacing and string literal quoting, parentheses, || chains, both
// fields, the bounds of the hash space) parse to their field and inclusive
// ranges; String is the text as given.
func TestParseShardSelector(t *testing.T) {
	const top = 1<<64 - 1
	for _, tc := range []struct {
		in        string
		namespace bool
		ranges    []hashRange
	}{
		{uidRange, false, []hashRange{{0, 1<<63 - 1}}},
		{upper, false, []hashRange{{1 << 63, top}}},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')", false, []hashRange{{0, top}}},
		{"shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')", true, []hashRange{{0xaa, 0xfe}}},
		{uidRange + " || " + upper, false, []hashRange{{0, 1<<63 - 1}, {1 << 63, top}}},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f')",
			false, []hashRange{{0, 4}, {5, 9}, {10, 14}}},
		// Overlapping and out-of-order ranges are allowed.
		{"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000') || shardRange(object.metadata.uid, '0x0000000000000000', '0xd000000000000000')",
			false, []hashRange{{0xc000000000000000, top}, {0, 0xcfffffffffffffff}}},
		// One hash wide, at either end of the space.
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')", false, []hashRange{{0, 0}}},
		{"shardRange(object.metadata.uid, '0xffffffffffffffff', '0x10000000000000000')", false, []hashRange{{top, top}}},
		{"shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')", false, []hashRange{{0, 1<<63 - 1}}},
		{"  shardRange( object.metadata.uid ,  '0x0000000000000000' ,\n '0x8000000000000000' )  ", false, []hashRange{{0, 1<<63 - 1}}},
		{`shardRange(object.metadata.uid, "0x0000000000000000", r'0x8000000000000000')`, false, []hashRange{{0, 1<<63 - 1}}},
		{"(" + uidRange + ") || (" + upper + ")", false, []hashRange{{0, 1<<63 - 1}, {1 << 63, top}}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ParseShardSelector(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if s.String() != tc.in || s.namespace != tc.namespace || fmt.Sprint(s.ranges) != fmt.Sprint(tc.ranges) {
				t.Fatalf("got %q namespace=%v %x, want namespace=%v %x", s, s.namespace, s.ranges, tc.namespace, tc.ranges)
			}
		})
	}
}

// TestParseShardSelectorRejects: everything else is refused with
// kube-apiserver's message.
func TestParseShardSelectorRejects(t *testing.T) {
	for _, tc := range []struct{ in, message string }{
		{"", "empty shard selector is not allowed; omit the parameter for unfiltered lists"},
		{"   ", "empty shard selector is not allowed"},
		{"shardRange(object.metadata.uid, '0x0000000000000000'", "CEL parse error"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||", "CEL parse error"},
		{"shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')", "hexStart must have '0x' prefix"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '8000000000000000')", "hexEnd must have '0x' prefix"},
		{"shardRange(object.metadata.uid, '0X0000000000000000', '0x8000000000000000')", "hexStart must have '0x' prefix"},
		{"shardRange(object.metadata.uid, '0x', '0x8000000000000000')", "hexStart: hex value is required after '0x'"},
		{"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", `hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0xff')", `hexEnd must be a 0x-prefixed 16-digit hex value, got "0xff" (did you mean "0x00000000000000ff"?)`},
		{"shardRange(object.metadata.uid, '0x000000000000000000', '0x80')", "hexStart: hex value too long (18 chars, max 17)"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')", "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64)"},
		{"shardRange(object.metadata.uid, '0x0g00000000000000', '0x8000000000000000')", `hexStart: invalid hex character "g"`},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000ABC')", `hexEnd: invalid hex character "A"`},
		{"shardRange(object.metadata.uid, ' 0x0000000000000000', '0x8000000000000000')", "hexStart must have '0x' prefix"},
		{"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')", "shard range start 0x8000000000000000 must be less than end 0x8000000000000000"},
		{"shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')", "must be less than end"},
		{"shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')", "must be less than end"},
		{"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')", `unsupported field path "object.metadata.name"; supported: object.metadata.uid, object.metadata.namespace`},
		{"shardRange(metadata.uid, '0x0000000000000000', '0x8000000000000000')", `unsupported field path "metadata.uid"`},
		{"shardRange(object.metadata.labels, '0x0000000000000000', '0x8000000000000000')", "unsupported field path"},
		{"shardRange(object.metadata['uid'], '0x0000000000000000', '0x8000000000000000')", "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind call"},
		{"shardRange(object.metadata.uid, 0, 8)", "hexStart must be a string literal, got int64"},
		{"shardRange(object.metadata.uid, b'0x0000000000000000', '0x8000000000000000')", "hexStart must be a string literal, got []uint8"},
		{"shardRange(object.metadata.uid, hex(0), '0x8000000000000000')", "hexStart must be a string literal (e.g. '0xff'), got expression kind call"},
		{"shardRange(object.metadata.uid, '0x0000000000000000')", "shardRange() requires exactly 3 arguments, got 2"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000', '0x9000000000000000')", "requires exactly 3 arguments, got 4"},
		{"invalidFunc(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')", `unsupported function "invalidFunc"; only shardRange() and || are allowed`},
		{"object.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')", `unsupported function "shardRange"`},
		{uidRange + " && " + upper, `unsupported function "_&&_"`},
		{"!(" + uidRange + ")", `unsupported function "!_"`},
		{"object.metadata.uid > '0x0000000000000000'", `unsupported function "_>_"`},
		{"true", "unexpected expression kind literal; expected shardRange() call or || operator"},
		{uidRange + " || true", "unexpected expression kind literal"},
		{uidRange + " || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
			`all shard ranges must use the same field, got "object.metadata.uid" and "object.metadata.namespace"`},
		{uidRange + ", " + upper, "CEL parse error"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ParseShardSelector(tc.in)
			if err == nil {
				t.Fatalf("accepted as %+v", s)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error %q does not say %q", err, tc.message)
			}
		})
	}
}

// podWithUID decodes a pod of namespace ns with the given uid.
func podWithUID(t *testing.T, ns, uid string) *object.Object {
	t.Helper()
	data := fmt.Sprintf(`{"metadata":{"name":"p","namespace":%q,"uid":%q}}`, ns, uid)
	obj, _, err := object.Decode(testPodSchema, ns+"/p", []byte(data), 1)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// fnv64a is the hash's definition, independently of object.ShardHash.
func fnv64a(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// TestShardSelectorMatches: an object matches when the FNV-1a hash of its
// uid (or namespace) is in [start, end) of one range: the start is in, the
// end out, and 2^64 ends the space.
func TestShardSelectorMatches(t *testing.T) {
	obj := podWithUID(t, "team-a", "7d0e3c1a-55b2-4f0e-a0c4-1f2e3d4c5b6a")
	uidHash, nsHash := fnv64a("7d0e3c1a-55b2-4f0e-a0c4-1f2e3d4c5b6a"), fnv64a("team-a")
	hex := func(v uint64) string { return fmt.Sprintf("'0x%016x'", v) }
	rng := func(field, start, end string) string {
		return fmt.Sprintf("shardRange(object.metadata.%s, %s, %s)", field, start, end)
	}
	for _, tc := range []struct {
		sel   string
		match bool
	}{
		{rng("uid", "'0x0000000000000000'", "'0x10000000000000000'"), true},
		{rng("uid", hex(uidHash), hex(uidHash+1)), true},                    // the start is in
		{rng("uid", hex(uidHash-1), hex(uidHash)), false},                   // the end is out
		{rng("uid", hex(uidHash+1), "'0x10000000000000000'"), false},        // above
		{rng("uid", "'0x0000000000000000'", hex(uidHash+1)), true},          // up to it
		{rng("namespace", hex(nsHash), hex(nsHash+1)), true},                // the namespace's hash
		{rng("namespace", hex(uidHash), hex(uidHash+1)), uidHash == nsHash}, // not the uid's
		{rng("uid", hex(uidHash-1), hex(uidHash)) + " || " + rng("uid", hex(uidHash), hex(uidHash+1)), true},
		{rng("uid", hex(uidHash-1), hex(uidHash)) + " || " + rng("uid", hex(uidHash+1), hex(uidHash+2)), false},
	} {
		s, err := ParseShardSelector(tc.sel)
		if err != nil {
			t.Fatalf("%s: %v", tc.sel, err)
		}
		if got := s.Matches(obj); got != tc.match {
			t.Errorf("%s matches %v, want %v (uid hash %#x, namespace hash %#x)", tc.sel, got, tc.match, uidHash, nsHash)
		}
		opts := ListOptions{Shard: s}
		if opts.Matches(obj) != tc.match || !opts.Filtered() {
			t.Errorf("%s: ListOptions.Matches %v, Filtered %v", tc.sel, opts.Matches(obj), opts.Filtered())
		}
	}

}

// TestShardSelectorsPartition: four shards of the uid space, and two of
// the namespace space, select every object exactly once, as the hash's
// definition places it.
func TestShardSelectorsPartition(t *testing.T) {
	bounds := []string{"0x0000000000000000", "0x4000000000000000", "0x8000000000000000", "0xc000000000000000", "0x10000000000000000"}
	var shards []*ShardSelector
	for i := range 4 {
		s, err := ParseShardSelector(fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", bounds[i], bounds[i+1]))
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	perShard := make([]int, 4)
	for i := range 400 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", fnv64a(fmt.Sprint(i)), i)
		obj := podWithUID(t, "ns", uid)
		var in []int
		for n, s := range shards {
			if s.Matches(obj) {
				in = append(in, n)
			}
		}
		if want := int(fnv64a(uid) >> 62); len(in) != 1 || in[0] != want {
			t.Fatalf("uid %s (hash %#x) is in shards %v, want only %d", uid, fnv64a(uid), in, want)
		}
		perShard[in[0]]++
	}
	for n, count := range perShard {
		if count < 50 {
			t.Errorf("shard %d holds %d of 400 objects: %v", n, count, perShard)
		}
	}
}

func FuzzParseShardSelector(f *testing.F) {
	f.Add(uidRange)
	f.Add(uidRange + " || " + upper)
	f.Add("shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')")
	f.Add("shardRange(object.metadata.uid, '0x0', '0x8')")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseShardSelector(in)
		if err != nil {
			return
		}
		if s.String() != in || len(s.ranges) == 0 {
			t.Fatalf("%q parsed as %q with %d ranges", in, s, len(s.ranges))
		}
		for _, r := range s.ranges {
			if r.first > r.last {
				t.Fatalf("%q: empty range %x", in, r)
			}
		}
	})
}
