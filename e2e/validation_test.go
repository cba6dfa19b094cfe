package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// invalidCase is one case of testdata/invalid.json: an object created (at
// path, in namespace NAMESPACE) and, for an update, a merge patch of it;
// want is what kube-apiserver answered to the create (dry run) or to the
// patch, recorded from a real kube-apiserver.
type invalidCase struct {
	Name   string          `json:"name"`
	Path   string          `json:"path"`
	Create json.RawMessage `json:"create"`
	Patch  json.RawMessage `json:"patch"`
	Want   struct {
		Code   int                  `json:"code"`
		Reason metav1.StatusReason  `json:"reason"`
		Causes []metav1.StatusCause `json:"causes"`
	} `json:"want"`
}

// TestValidation sends kube-apiserver's recorded invalid creates and
// updates and compares the answers: code, reason, and each cause's field,
// reason and message. A forbidden pod update's message is compared up to
// the diff of Go values kube-apiserver appends to it.
func TestValidation(t *testing.T) {
	ns := htNamespace(t, "invalid")
	data, err := os.ReadFile("testdata/invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []invalidCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			path := strings.ReplaceAll(c.Path, "NAMESPACE", ns)
			var resp *http.Response
			var body []byte
			if c.Patch != nil {
				if resp, body = htDo(t, "POST", path, "application/json", c.Create); resp.StatusCode != http.StatusCreated {
					t.Fatalf("create: %d %s", resp.StatusCode, body)
				}
				var meta struct {
					Metadata metav1.ObjectMeta `json:"metadata"`
				}
				json.Unmarshal(c.Create, &meta)
				resp, body = htDo(t, "PATCH", path+"/"+meta.Metadata.Name, "application/merge-patch+json", c.Patch)
			} else {
				resp, body = htDo(t, "POST", path+"?dryRun=All", "application/json", c.Create)
			}
			if resp.StatusCode != c.Want.Code {
				t.Fatalf("answered %d, want %d: %s", resp.StatusCode, c.Want.Code, body)
			}
			if c.Want.Code >= 300 {
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil || st.Details == nil {
					t.Fatalf("not a Status with details: %v: %s", err, body)
				}
				if st.Reason != c.Want.Reason {
					t.Errorf("reason %s, want %s", st.Reason, c.Want.Reason)
				}
				if got, want := causeLines(st.Details.Causes), causeLines(c.Want.Causes); !slices.Equal(got, want) {
					t.Errorf("causes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// causeLines formats causes, sorted, each message up to its first line.
func causeLines(causes []metav1.StatusCause) []string {
	var out []string
	for _, c := range causes {
		msg, _, _ := strings.Cut(c.Message, "\n")
		out = append(out, c.Field+" "+string(c.Type)+" "+msg)
	}
	slices.Sort(out)
	return out
}
