package app

import (
	"strings"
	"testing"
)

func TestProgressNotifyBroken(t *testing.T) {
	for v, want := range map[string]bool{
		"3.4.23": true, "3.4.30": true, "3.4.31": false, "3.4.35": false,
		"3.5.0": true, "3.5.12": true, "3.5.13": false, "3.5.21": false,
		"3.6.0": false, "3.7.3": false, "3.3.27": true, "2.3.8": true, "4.0.0": false,
		"v3.5.9": true, "3.5.13-rc.1": false, "3.4.31+git": false,
	} {
		got, ok := progressNotifyBroken(v)
		if !ok || got != want {
			t.Errorf("progressNotifyBroken(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "3", "3.5", "x.y.z", "3.x.1", "3.5.x"} {
		if _, ok := progressNotifyBroken(v); ok {
			t.Errorf("progressNotifyBroken(%q) parsed", v)
		}
	}
}

// TestSafeguard covers each row of KEP-2340's Beta rules.
func TestSafeguard(t *testing.T) {
	for _, tc := range []struct {
		row      string
		versions map[string]string
		explicit bool
		want     consistentReadDecision
		message  string
	}{
		{"fixed version: keep, silently", map[string]string{"a": "3.5.13", "b": "3.7.3"}, false, keepConsistentReads, ""},
		{"version unknown: warn, keep the gate", map[string]string{"a": "", "b": "3.7.3"}, false, keepConsistentReads, "cannot tell"},
		{"too old, gate not set: warn, turn off", map[string]string{"a": "3.4.23", "b": "3.7.3"}, false, disableConsistentReads, "3.4.23"},
		{"too old, gate set explicitly: refuse to start", map[string]string{"a": "3.5.9"}, true, refuseToStart, "enabled explicitly"},
		{"explicit with fixed versions: keep", map[string]string{"a": "3.4.31"}, true, keepConsistentReads, ""},
	} {
		got, msg := safeguard(tc.versions, tc.explicit)
		if got != tc.want || (tc.message == "") != (msg == "") || !strings.Contains(msg, tc.message) {
			t.Errorf("%s: got %d %q, want %d containing %q", tc.row, got, msg, tc.want, tc.message)
		}
	}
}
