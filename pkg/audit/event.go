// The audit event written per request: audit.k8s.io/v1's Event, its
// object reference, levels and stages.

package audit

import (
	"encoding/json"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is audit.k8s.io/v1's Event; the bodies are filled at the levels
// Request (requestObject) and RequestResponse (both).
type Event struct {
	metav1.TypeMeta          `json:",inline"`
	Level                    Level                      `json:"level"`
	AuditID                  string                     `json:"auditID"`
	Stage                    Stage                      `json:"stage"`
	RequestURI               string                     `json:"requestURI"`
	Verb                     string                     `json:"verb"`
	User                     authenticationv1.UserInfo  `json:"user"`
	ImpersonatedUser         *authenticationv1.UserInfo `json:"impersonatedUser,omitempty"`
	SourceIPs                []string                   `json:"sourceIPs,omitempty"`
	UserAgent                string                     `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference           `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status             `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage            `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage            `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime           `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime           `json:"stageTimestamp"`
	Annotations              map[string]string          `json:"annotations,omitempty"`
}

// ObjectReference is what a resource request is about.
type ObjectReference struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Level is how much of a request is logged.
type Level string

// The levels, least first: None logs nothing; Metadata who, what and the
// answer's code; Request also the request's body; RequestResponse also
// the response's.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

// atLeast says l logs as much as o.
func (l Level) atLeast(o Level) bool { return l.rank() >= o.rank() }

func (l Level) rank() int {
	switch l {
	case LevelMetadata:
		return 1
	case LevelRequest:
		return 2
	case LevelRequestResponse:
		return 3
	}
	return 0
}

// Stage is when in a request's life an event is logged.
type Stage string

// The stages.
const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// lowerMethod is the verb of a request without request info.
func lowerMethod(method string) string { return strings.ToLower(method) }

// EventList is audit.k8s.io/v1's EventList, the webhook's batch; the
// items are events already encoded.
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}
