// events.k8s.io/v1 Events stored as core/v1 Events: the conversion between
// the two shapes on write and read.

package conversion

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// events converts events.k8s.io/v1 Events, stored as core/v1 Events, as
// kube-apiserver's conversion does: note is message, regarding is
// involvedObject, reportingController is reportingComponent, and the
// deprecated* fields are core/v1's source, firstTimestamp, lastTimestamp
// and count.
type events struct{}

func (events) ToStorage(served []byte) ([]byte, error) {
	var in eventsv1.Event
	if err := json.Unmarshal(served, &in); err != nil {
		return nil, err
	}
	out := corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return json.Marshal(&out)
}

func (events) FromStorage(stored []byte) ([]byte, error) {
	var in corev1.Event
	if err := json.Unmarshal(stored, &in); err != nil {
		return nil, err
	}
	out := eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:               in.ObjectMeta,
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return json.Marshal(&out)
}
