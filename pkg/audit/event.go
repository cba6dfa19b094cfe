// The audit event written per request: audit.k8s.io/v1's Event at the
// Metadata level, its object reference, levels and stages.

package audit

import (
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is audit.k8s.io/v1's Event, with the fields the Metadata level
// fills (request and response bodies are left out at this level).
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

// LevelMetadata logs who, what and the answer's code, without bodies.
const LevelMetadata Level = "Metadata"

// Stage is when in a request's life an event is logged.
type Stage string

// The stages logged.
const (
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// lowerMethod is the verb of a request without request info.
func lowerMethod(method string) string { return strings.ToLower(method) }
