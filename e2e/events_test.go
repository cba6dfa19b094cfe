package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// TestEventsTwoVersions: events.k8s.io/v1 Events and core/v1 Events are
// one resource in two versions, as in kube-apiserver: what is written in
// one is read in the other, converted (note/message,
// regarding/involvedObject, reportingController/reportingComponent), and
// client-go's events.k8s.io recorder works.
func TestEventsTwoVersions(t *testing.T) {
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "events")
	cs := clientset(t, cgConfig(nil))

	w, err := cs.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", APIVersion: "v1"}
	created, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1"},
		EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "example.com/controller", ReportingInstance: "i-1",
		Action: "Pulling", Reason: "Pulled", Regarding: regarding, Note: "pulled the image", Type: "Normal"}, metav1.CreateOptions{})
	if err != nil || created.Note != "pulled the image" || created.Regarding.Name != "web" || created.ResourceVersion == "" {
		t.Fatalf("create events.k8s.io/v1: %+v, %v", created, err)
	}
	core, err := cs.CoreV1().Events(ns).Get(ctx, "web.1", metav1.GetOptions{})
	if err != nil || core.Message != "pulled the image" || core.InvolvedObject != regarding || core.ReportingController != "example.com/controller" ||
		core.ResourceVersion != created.ResourceVersion {
		t.Fatalf("the same event through core/v1: %+v, %v", core, err)
	}
	if ev := cgNextNonBookmark(t, w); ev.Type != watch.Added || ev.Object.(*eventsv1.Event).Note != "pulled the image" {
		t.Errorf("watch events.k8s.io/v1: %v %+v", ev.Type, ev.Object)
	}

	// A core/v1 event is listed through events.k8s.io/v1, selected by its
	// own field names (regarding.name: core/v1's involvedObject.name).
	if _, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.2"},
		InvolvedObject: regarding, Reason: "Killing", Message: "stopping", Type: "Normal", Count: 3}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Killing"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Note != "stopping" || list.Items[0].DeprecatedCount != 3 {
		t.Fatalf("list events.k8s.io/v1 by reason: %+v, %v", list, err)
	}
	list, err = cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + regarding.Name + ",reason=Killing"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "web.2" {
		t.Fatalf("list events.k8s.io/v1 by regarding.name: %+v, %v", list, err)
	}
	if ev := cgNextNonBookmark(t, w); ev.Type != watch.Added || ev.Object.(*eventsv1.Event).Name != "web.2" {
		t.Errorf("watch events.k8s.io/v1 sees the core/v1 event: %v %+v", ev.Type, ev.Object)
	}

	// kubectl prints both versions with the same columns.
	k := &kc{t: t, ns: ns, cache: t.TempDir(), dir: t.TempDir()}
	if _, err := os.Stat(kubectlPath); err == nil {
		for _, resource := range []string{"events", "events.events.k8s.io"} {
			out := k.must("get", resource, "--field-selector=reason=Pulled")
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "LAST SEEN") ||
				!strings.Contains(lines[1], "pod/web") || !strings.Contains(lines[1], "pulled the image") {
				t.Errorf("kubectl get %s printed:\n%s", resource, out)
			}
		}
	}

	// client-go's recorder (events.k8s.io/v1).
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	stop := make(chan struct{})
	defer close(stop)
	broadcaster.StartRecordingToSink(stop)
	defer broadcaster.Shutdown()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-1"}}
	broadcaster.NewRecorder(clientgoscheme.Scheme, "test-controller").Eventf(pod, nil, corev1.EventTypeWarning, "Failed", "Sync", "sync failed %d times", 2)
	waitFor(t, "the recorded event", func() bool {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Failed"})
		return err == nil && len(list.Items) == 1 && list.Items[0].Message == "sync failed 2 times" && list.Items[0].ReportingController == "test-controller"
	})
}
