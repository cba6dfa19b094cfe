package storage

import (
	"math"
	"strconv"
	"testing"
)

func TestParseResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr string // a word the message must contain; "" for success
	}{
		{"0", 0, ""},
		{"1", 1, ""},
		{"10", 10, ""},
		{"1234567890", 1234567890, ""},
		{"9223372036854775807", math.MaxInt64, ""},

		{"", 0, "empty"},
		{"00", 0, "leading zeros"},
		{"01", 0, "leading zeros"},
		{"007", 0, "leading zeros"},
		{"-1", 0, "decimal"},
		{"+1", 0, "decimal"},
		{" 1", 0, "decimal"},
		{"1 ", 0, "decimal"},
		{"\t1", 0, "decimal"},
		{"1\n", 0, "decimal"},
		{"1a", 0, "decimal"},
		{"a", 0, "decimal"},
		{"0x1f", 0, "decimal"},
		{"1e3", 0, "decimal"},
		{"1.0", 0, "decimal"},
		{"1_000", 0, "decimal"},
		{"1,000", 0, "decimal"},
		{"١", 0, "decimal"}, // Arabic-Indic digit one
		{"１", 0, "decimal"}, // fullwidth digit one
		{"1\x00", 0, "decimal"},
		{"9223372036854775808", 0, "out of range"},  // MaxInt64 + 1
		{"18446744073709551615", 0, "out of range"}, // MaxUint64
		{"18446744073709551616", 0, "out of range"}, // MaxUint64 + 1
		{"99999999999999999999999999", 0, "out of range"},
	} {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			got, err := ParseResourceVersion(tc.in)
			if tc.wantErr != "" {
				wantBadRequest(t, err, "resourceVersion", tc.wantErr)
				if got != 0 {
					t.Errorf("value = %d alongside an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
			if s := FormatResourceVersion(got); s != tc.in {
				t.Errorf("FormatResourceVersion(%d) = %q, want %q", got, s, tc.in)
			}
		})
	}
}

func TestFormatResourceVersion(t *testing.T) {
	for _, v := range []uint64{0, 1, 42, math.MaxInt64} {
		s := FormatResourceVersion(v)
		got, err := ParseResourceVersion(s)
		if err != nil || got != v {
			t.Errorf("ParseResourceVersion(FormatResourceVersion(%d) = %q) = %d, %v", v, s, got, err)
		}
	}
}

// FuzzParseResourceVersion checks strictness (an accepted string is the
// canonical form of its value, so no two strings name the same revision),
// that anything with a non-digit is rejected, and completeness (every
// canonical decimal up to MaxInt64 is accepted).
func FuzzParseResourceVersion(f *testing.F) {
	for _, s := range []string{"", "0", "1", "00", "01", "-1", "+1", " 1", "1 ", "1a", "0x1", "1e3",
		"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616", "١", "1\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseResourceVersion(s)
		allDigits := s != ""
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				allDigits = false
			}
		}
		if err != nil {
			if CodeOf(err) != ErrBadRequest {
				t.Fatalf("ParseResourceVersion(%q): error %v is not a BadRequest", s, err)
			}
			if v != 0 {
				t.Fatalf("ParseResourceVersion(%q) = %d alongside an error", s, v)
			}
			// Completeness: a canonical decimal in range must be accepted.
			if u, perr := strconv.ParseUint(s, 10, 64); allDigits && perr == nil && u <= math.MaxInt64 && strconv.FormatUint(u, 10) == s {
				t.Fatalf("ParseResourceVersion(%q) rejected a canonical resourceVersion: %v", s, err)
			}
			return
		}
		if !allDigits {
			t.Fatalf("ParseResourceVersion(%q) = %d, want an error for a non-digit", s, v)
		}
		if got := FormatResourceVersion(v); got != s {
			t.Fatalf("ParseResourceVersion(%q) = %d, which formats as %q", s, v, got)
		}
		if v > math.MaxInt64 {
			t.Fatalf("ParseResourceVersion(%q) = %d, beyond int64", s, v)
		}
	})
}
