package storage

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// rawToken encodes any text the way EncodeContinue encodes its JSON.
func rawToken(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestContinueRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		rv     int64
		key    string
		scopes []string
	}{
		{1, "a", []string{""}},
		{7, "ns/b", []string{"", "ns/"}},
		{7, "ns/b\x00", []string{"", "ns/"}}, // the next key after "ns/b"
		{42, "ns/with space", []string{"ns/"}},
		{42, "ns/ünïcødé", []string{"ns/"}},
		{42, `ns/a<b>&"c\`, []string{"ns/"}}, // JSON escaping
		{42, "ns/a..b", []string{"ns/"}},     // ".." inside a name is no path element
		{42, "ns/.hidden", []string{"ns/"}},
		{math.MaxInt64, "ns/z", []string{"ns/"}},
		{InconsistentContinueRV, "ns/b", []string{"", "ns/"}},
	} {
		token := EncodeContinue(tc.rv, tc.key)
		if strings.ContainsAny(token, "+/=\n") {
			t.Errorf("token %q is not unpadded base64url", token)
		}
		for _, scope := range tc.scopes {
			got, err := DecodeContinue(token, scope)
			if err != nil {
				t.Errorf("DecodeContinue(EncodeContinue(%d, %q), %q): %v", tc.rv, tc.key, scope, err)
				continue
			}
			if want := (Continuation{ResourceVersion: tc.rv, StartKey: tc.key}); got != want {
				t.Errorf("scope %q: got %+v, want %+v", scope, got, want)
			}
		}
	}
}

// TestContinueTokenIsVersioned checks the token is a versioned record, as
// KEP-365 asks, so later layouts can be told apart.
func TestContinueTokenIsVersioned(t *testing.T) {
	data, err := base64.RawURLEncoding.DecodeString(EncodeContinue(5, "ns/a"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["v"] != float64(continueTokenVersion) || m["rv"] != float64(5) || m["start"] != "ns/a" || len(m) != 3 {
		t.Errorf("token record = %v", m)
	}
	// A hand-written token in that layout is accepted.
	got, err := DecodeContinue(rawToken(`{"v":1,"rv":5,"start":"ns/a"}`), "ns/")
	if err != nil || got != (Continuation{ResourceVersion: 5, StartKey: "ns/a"}) {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestDecodeContinueRejects(t *testing.T) {
	// A valid record in the standard (not URL-safe) base64 alphabet.
	stdToken := base64.RawStdEncoding.EncodeToString([]byte(`{"v":1,"rv":5,"start":"ns/>>>???"}`))
	if !strings.ContainsAny(stdToken, "+/") {
		t.Fatalf("stdToken %q has no character outside base64url", stdToken)
	}
	// A valid record in padded base64url.
	paddedToken := base64.URLEncoding.EncodeToString([]byte(`{"v":1,"rv":5,"start":"ns/abc"}`))
	if !strings.HasSuffix(paddedToken, "=") {
		t.Fatalf("paddedToken %q has no padding", paddedToken)
	}
	for _, tc := range []struct {
		name, token, scope string
		mention            string
	}{
		{"empty token", "", "", "continue token"},
		{"not base64", "!!!", "", "base64"},
		{"standard base64 alphabet", stdToken, "", "base64"},
		{"padded base64", paddedToken, "", "base64"},
		{"not JSON", rawToken("hello"), "", "continue token"},
		{"JSON array", rawToken(`[1,5,"ns/a"]`), "", "continue token"},
		{"JSON string", rawToken(`"ns/a"`), "", "continue token"},
		{"truncated JSON", rawToken(`{"v":1,"rv":5,"start":"ns/a"`), "", "continue token"},
		{"unknown field", rawToken(`{"v":1,"rv":5,"start":"ns/a","extra":1}`), "", "unknown field"},
		{"unknown field only", rawToken(`{"x":1}`), "", "unknown field"},
		{"unknown version 2", rawToken(`{"v":2,"rv":5,"start":"ns/a"}`), "", "unknown version 2"},
		{"version missing", rawToken(`{"rv":5,"start":"ns/a"}`), "", "unknown version 0"},
		{"version as string", rawToken(`{"v":"1","rv":5,"start":"ns/a"}`), "", "continue token"},
		{"rv 0", EncodeContinue(0, "ns/a"), "", "resourceVersion 0"},
		{"rv missing", rawToken(`{"v":1,"start":"ns/a"}`), "", "resourceVersion 0"},
		{"rv -2", EncodeContinue(-2, "ns/a"), "", "resourceVersion -2"},
		{"rv min int64", EncodeContinue(math.MinInt64, "ns/a"), "", "resourceVersion"},
		{"rv as string", rawToken(`{"v":1,"rv":"5","start":"ns/a"}`), "", "continue token"},
		{"rv fractional", rawToken(`{"v":1,"rv":5.5,"start":"ns/a"}`), "", "continue token"},
		{"rv beyond int64", rawToken(`{"v":1,"rv":9223372036854775808,"start":"ns/a"}`), "", "continue token"},
		{"empty start key", EncodeContinue(5, ""), "", "empty start key"},
		{"start key missing", rawToken(`{"v":1,"rv":5}`), "", "empty start key"},
		{"start key null", rawToken(`{"v":1,"rv":5,"start":null}`), "", "empty start key"},
		{"absolute key /x", EncodeContinue(5, "/x"), "", "absolute"},
		{"absolute key in scope", EncodeContinue(5, "/ns/x"), "ns/", "absolute"},
		{"key ..", EncodeContinue(5, ".."), "", "not a clean path"},
		{"key ns/../other", EncodeContinue(5, "ns/../other"), "ns/", "not a clean path"},
		{"key ns/../other, whole resource", EncodeContinue(5, "ns/../other"), "", "not a clean path"},
		{"key ns/..", EncodeContinue(5, "ns/.."), "ns/", "not a clean path"},
		{"key .", EncodeContinue(5, "."), "", "not a clean path"},
		{"key ./x", EncodeContinue(5, "./x"), "", "not a clean path"},
		{"key ns/./x", EncodeContinue(5, "ns/./x"), "ns/", "not a clean path"},
		{"key ns/.", EncodeContinue(5, "ns/."), "ns/", "not a clean path"},
		{"key ns//x", EncodeContinue(5, "ns//x"), "ns/", "not a clean path"},
		{"key ns/x/", EncodeContinue(5, "ns/x/"), "ns/", "not a clean path"},
		{"key ns/ (the scope itself)", EncodeContinue(5, "ns/"), "ns/", "not a clean path"},
		{"key outside the scope", EncodeContinue(5, "other/x"), "ns/", "outside"},
		{"key in a namespace sharing the scope's prefix", EncodeContinue(5, "ns2/x"), "ns/", "outside"},
		{"key equal to the namespace name", EncodeContinue(5, "ns"), "ns/", "outside"},
		{"inconsistent token outside the scope", EncodeContinue(InconsistentContinueRV, "other/x"), "ns/", "outside"},
		{"fields in another order", rawToken(`{"start":"ns/x","rv":5,"v":1}`), "ns/", "canonical"},
		{"JSON with spaces", rawToken(" {\"v\": 1, \"rv\": 5, \"start\": \"ns/x\"}\n"), "ns/", "canonical"},
		{"trailing data", rawToken(`{"v":1,"rv":5,"start":"ns/x"}garbage`), "ns/", "canonical"},
		{"duplicate key, last wins", rawToken(`{"v":1,"rv":5,"start":"../x","start":"ns/x"}`), "ns/", "canonical"},
		{"re-cased keys", rawToken(`{"V":1,"RV":5,"START":"ns/x"}`), "ns/", "canonical"},
		{"newline inside the base64", EncodeContinue(5, "ns/x")[:4] + "\n" + EncodeContinue(5, "ns/x")[4:], "ns/", "canonical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeContinue(tc.token, tc.scope)
			wantBadRequest(t, err, "invalid continue token", tc.mention)
			if got != (Continuation{}) {
				t.Errorf("continuation = %+v alongside an error", got)
			}
		})
	}
}

func TestDecodeContinueAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, token, scope string
		want               Continuation
	}{
		{"next key with a trailing NUL", EncodeContinue(5, "ns/x\x00"), "ns/", Continuation{5, "ns/x\x00"}},
		{"next key with a trailing NUL, whole resource", EncodeContinue(5, "x\x00"), "", Continuation{5, "x\x00"}},
		{"inconsistent continue", EncodeContinue(InconsistentContinueRV, "ns/x\x00"), "ns/", Continuation{InconsistentContinueRV, "ns/x\x00"}},
		{"cluster-scoped key", EncodeContinue(9, "node-1"), "", Continuation{9, "node-1"}},
		{"escaped NUL in JSON", rawToken(`{"v":1,"rv":5,"start":"ns/x\u0000"}`), "ns/", Continuation{5, "ns/x\x00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeContinue(tc.token, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// checkDecodedContinuation checks the guarantees of a successful decode for
// scope, and that the continuation survives a re-encoding.
func checkDecodedContinuation(t *testing.T, token, scope string, c Continuation) {
	t.Helper()
	if !strings.HasPrefix(c.StartKey, scope) {
		t.Fatalf("token %q, scope %q: start key %q is outside the scope", token, scope, c.StartKey)
	}
	if c.StartKey == "" || strings.HasPrefix(c.StartKey, "/") {
		t.Fatalf("token %q: start key %q is empty or absolute", token, c.StartKey)
	}
	for _, el := range strings.Split(c.StartKey, "/") {
		if el == ".." || el == "." || el == "" {
			t.Fatalf("token %q: start key %q has path element %q", token, c.StartKey, el)
		}
	}
	if c.ResourceVersion <= 0 && c.ResourceVersion != InconsistentContinueRV {
		t.Fatalf("token %q: resourceVersion %d", token, c.ResourceVersion)
	}
	again, err := DecodeContinue(EncodeContinue(c.ResourceVersion, c.StartKey), scope)
	if err != nil {
		t.Fatalf("token %q: re-encoded continuation %+v does not decode: %v", token, c, err)
	}
	if again != c {
		t.Fatalf("token %q: re-encoded continuation decodes to %+v, want %+v", token, again, c)
	}
}

// FuzzDecodeContinue feeds DecodeContinue arbitrary tokens and scopes. Each
// input is tried as a token and, so that mutations of the JSON inside reach
// past the base64 layer, also as the record a token encodes.
func FuzzDecodeContinue(f *testing.F) {
	seeds := []struct{ token, scope string }{
		{EncodeContinue(7, "ns/b"), "ns/"},
		{EncodeContinue(7, "ns/b\x00"), "ns/"},
		{EncodeContinue(InconsistentContinueRV, "ns/b"), ""},
		{EncodeContinue(math.MaxInt64, "a"), ""},
		{EncodeContinue(0, "ns/b"), "ns/"},
		{EncodeContinue(-2, "ns/b"), "ns/"},
		{EncodeContinue(7, "ns/../other/x"), "ns/"},
		{EncodeContinue(7, "/ns/x"), "ns/"},
		{EncodeContinue(7, "ns//x"), "ns/"},
		{EncodeContinue(7, "ns/x/"), "ns/"},
		{EncodeContinue(7, "other/x"), "ns/"},
		{EncodeContinue(7, "ns2/x"), "ns/"},
		{rawToken(`{"v":1,"rv":5,"start":"ns/x","extra":1}`), "ns/"},
		{rawToken(`{"v":2,"rv":5,"start":"ns/x"}`), "ns/"},
		{`{"v":1,"rv":5,"start":"ns/x"}`, "ns/"},
		{`{"v":1,"rv":-1,"start":"ns/x\u0000"}`, "ns/"},
		{`{"v":1,"rv":5,"start":"ns/.."}`, "ns/"},
		{`{"v":1,"rv":5,"start":"ns/\u002e\u002e/x"}`, "ns/"},
		{`{"V":1,"RV":5,"START":"ns/x"}`, "ns/"},
		{`{"v":1,"rv":5,"start":"ns/x","start":"../x"}`, ""},
		{`{"v":1,"rv":5,"start":"ns/\xff"}`, "ns/"},
		{"", ""},
		{"!!!", ""},
	}
	for _, s := range seeds {
		f.Add(s.token, s.scope)
	}
	f.Fuzz(func(t *testing.T, input, scope string) {
		for _, token := range []string{input, rawToken(input)} {
			c, err := DecodeContinue(token, scope)
			if err != nil {
				if CodeOf(err) != ErrBadRequest {
					t.Fatalf("token %q: error %v is not a BadRequest", token, err)
				}
				if c != (Continuation{}) {
					t.Fatalf("token %q: continuation %+v alongside an error", token, c)
				}
				continue
			}
			checkDecodedContinuation(t, token, scope, c)
		}
	})
}
