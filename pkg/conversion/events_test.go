package conversion

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A core/v1 Event with every field set survives the round trip through
// events.k8s.io/v1, and lands in the fields kube-apiserver maps it to.
func TestEventsRoundTrip(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	core := corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u", Labels: map[string]string{"a": "b"}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"}, Reason: "R", Message: "m",
		Source: corev1.EventSource{Component: "c", Host: "h"}, FirstTimestamp: now, LastTimestamp: now, Count: 4, Type: "Warning",
		EventTime: metav1.NewMicroTime(now.Time), Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Time)},
		Action: "A", Related: &corev1.ObjectReference{Kind: "Node", Name: "n"}, ReportingController: "rc", ReportingInstance: "ri"}
	stored, _ := json.Marshal(&core)
	served, err := events{}.FromStorage(stored)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	json.Unmarshal(served, &fields)
	for field, want := range map[string]any{"apiVersion": "events.k8s.io/v1", "note": "m", "reportingController": "rc",
		"deprecatedCount": float64(4), "regarding": map[string]any{"kind": "Pod", "name": "p", "namespace": "ns"}} {
		if !reflect.DeepEqual(fields[field], want) {
			t.Errorf("%s = %v, want %v", field, fields[field], want)
		}
	}
	back, err := events{}.ToStorage(served)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != string(stored) {
		t.Errorf("round trip:\n%s\nwant\n%s", back, stored)
	}
}
