package storage

import (
	"errors"
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/object"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

var testPodSchema = object.MustSchema("spec.nodeName")

// testPod is ns/p1, uid u-1, at revision 42, labeled app=web,tier=front, on
// node n1.
func testPod(t *testing.T) *object.Object {
	t.Helper()
	const data = `{"kind":"Pod","metadata":{"name":"p1","namespace":"ns","uid":"u-1","labels":{"app":"web","tier":"front"}},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}`
	obj, _, err := object.Decode(testPodSchema, "ns/p1", []byte(data), 42)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func strPtr(s string) *string { return &s }

func TestPreconditionsCheck(t *testing.T) {
	obj := testPod(t)
	for _, tc := range []struct {
		name     string
		p        *Preconditions
		mentions []string // nil: the check passes
	}{
		{"nil preconditions", nil, nil},
		{"no preconditions", &Preconditions{}, nil},
		{"UID matches", &Preconditions{UID: strPtr("u-1")}, nil},
		{"resourceVersion matches", &Preconditions{ResourceVersion: strPtr("42")}, nil},
		{"both match", &Preconditions{UID: strPtr("u-1"), ResourceVersion: strPtr("42")}, nil},
		{"UID mismatch", &Preconditions{UID: strPtr("u-2")}, []string{"Precondition failed", "UID", "u-2", "u-1"}},
		{"empty UID", &Preconditions{UID: strPtr("")}, []string{"UID"}},
		{"resourceVersion mismatch", &Preconditions{ResourceVersion: strPtr("41")}, []string{"Precondition failed", "ResourceVersion", "41", "42"}},
		{"resourceVersion with a leading zero", &Preconditions{ResourceVersion: strPtr("042")}, []string{"ResourceVersion", "042"}},
		{"empty resourceVersion", &Preconditions{ResourceVersion: strPtr("")}, []string{"ResourceVersion"}},
		{"both mismatch: UID reported first", &Preconditions{UID: strPtr("u-2"), ResourceVersion: strPtr("41")}, []string{"UID"}},
		{"UID matches, resourceVersion does not", &Preconditions{UID: strPtr("u-1"), ResourceVersion: strPtr("43")}, []string{"ResourceVersion", "43"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Check("ns/p1", obj)
			if tc.mentions == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Code != ErrConflict {
				t.Fatalf("err = %v, want a Conflict", err)
			}
			if !IsConflict(err) {
				t.Error("IsConflict = false")
			}
			if se.Key != "ns/p1" {
				t.Errorf("key = %q, want ns/p1", se.Key)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(se.Message, m) {
					t.Errorf("message %q does not mention %q", se.Message, m)
				}
			}
			if tc.name == "both mismatch: UID reported first" && strings.Contains(se.Message, "ResourceVersion") {
				t.Errorf("message %q names the resourceVersion too", se.Message)
			}
		})
	}
}

func mustFields(t *testing.T, s string) fields.Selector {
	t.Helper()
	sel, err := fields.ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func mustLabels(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestValidateSelectors(t *testing.T) {
	for _, tc := range []struct {
		fields string // "-": nil selector
		bad    string // the unsupported field label; "" if valid
	}{
		{"-", ""},
		{"", ""},
		{"spec.nodeName=n1", ""},
		{"spec.nodeName!=n1", ""},
		{"metadata.name=p1", ""},
		{"metadata.namespace=ns", ""},
		{"metadata.name=p1,spec.nodeName=n1", ""},
		{"status.phase=Running", "status.phase"},
		{"metadata.uid=u-1", "metadata.uid"},
		{"metadata.labels=x", "metadata.labels"},
		{"spec=x", "spec"},
		{"spec.nodename=n1", "spec.nodename"},
		{"spec.nodeName=n1,status.phase=Running", "status.phase"},
	} {
		t.Run(tc.fields, func(t *testing.T) {
			opts := ListOptions{Labels: mustLabels(t, "app=web")}
			if tc.fields != "-" {
				opts.Fields = mustFields(t, tc.fields)
			}
			err := opts.ValidateSelectors(testPodSchema)
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("ValidateSelectors: %v", err)
				}
				return
			}
			wantBadRequest(t, err, "field label not supported: "+tc.bad)
		})
	}
}

func TestMatchesAndFiltered(t *testing.T) {
	obj := testPod(t)
	for _, tc := range []struct {
		labels, fields string // "-": nil selector
		matches        bool
		filtered       bool
	}{
		{"-", "-", true, false},
		{"", "", true, false},
		{"-", "", true, false},
		{"app=web", "-", true, true},
		{"app=db", "-", false, true},
		{"app!=db", "-", true, true},
		{"app", "-", true, true},
		{"!app", "-", false, true},
		{"missing", "-", false, true},
		{"!missing", "-", true, true},
		{"app in (web,db)", "-", true, true},
		{"app notin (web)", "-", false, true},
		{"app=web,tier=front", "-", true, true},
		{"app=web,tier=back", "-", false, true},
		{"-", "spec.nodeName=n1", true, true},
		{"-", "spec.nodeName=n2", false, true},
		{"-", "spec.nodeName!=n2", true, true},
		{"-", "metadata.name=p1,metadata.namespace=ns", true, true},
		{"-", "metadata.namespace=other", false, true},
		{"app=web", "spec.nodeName=n1", true, true},
		{"app=web", "spec.nodeName=n2", false, true},
		{"app=db", "spec.nodeName=n1", false, true},
		{"", "spec.nodeName=n1", true, true},
		{"app=web", "", true, true},
	} {
		t.Run("labels "+tc.labels+" fields "+tc.fields, func(t *testing.T) {
			var opts ListOptions
			if tc.labels != "-" {
				opts.Labels = mustLabels(t, tc.labels)
			}
			if tc.fields != "-" {
				opts.Fields = mustFields(t, tc.fields)
			}
			if got := opts.Matches(obj); got != tc.matches {
				t.Errorf("Matches = %v, want %v", got, tc.matches)
			}
			if got := opts.Filtered(); got != tc.filtered {
				t.Errorf("Filtered = %v, want %v", got, tc.filtered)
			}
		})
	}

	t.Run("Everything selectors", func(t *testing.T) {
		opts := ListOptions{Labels: labels.Everything(), Fields: fields.Everything()}
		if !opts.Matches(obj) || opts.Filtered() {
			t.Errorf("Matches = %v, Filtered = %v; want true, false", opts.Matches(obj), opts.Filtered())
		}
	})
	t.Run("Nothing label selector", func(t *testing.T) {
		opts := ListOptions{Labels: labels.Nothing()}
		if opts.Matches(obj) {
			t.Error("labels.Nothing() matches")
		}
	})
}
