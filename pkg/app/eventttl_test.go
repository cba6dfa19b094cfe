package app

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEventTTL: Events, core/v1 and events.k8s.io/v1 alike, are deleted
// --event-ttl after their last write (an etcd lease on their key, as
// kube-apiserver's); other kinds get no lease.
func TestEventTTL(t *testing.T) {
	const ttl = 2 * time.Second
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ConsistentListFromCache: true, ConsistentGetFromCache: true, Controllers: []string{}, EventTTL: ttl,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, cs := adminClient(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "default"} }
	if _, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: meta("core"),
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, Reason: "Test"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.EventsV1().Events("default").Create(ctx, &eventsv1.Event{ObjectMeta: meta("new"), EventTime: metav1.NowMicro(),
		ReportingController: "test/controller", ReportingInstance: "test", Action: "Test", Reason: "Test", Type: "Normal",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("kept")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for key, wantLease := range map[string]bool{"/registry/events/default/core": true, "/registry/events/default/new": true,
		"/registry/configmaps/default/kept": false} {
		resp, err := a.client.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: %v %v", key, resp, err)
		}
		if got := resp.Kvs[0].Lease != 0; got != wantLease {
			t.Errorf("%s: lease %v, want %v", key, got, wantLease)
		}
	}
	deadline := time.Now().Add(ttl + 15*time.Second)
	for {
		_, errCore := cs.CoreV1().Events("default").Get(ctx, "core", metav1.GetOptions{})
		_, errNew := cs.EventsV1().Events("default").Get(ctx, "new", metav1.GetOptions{})
		if apierrors.IsNotFound(errCore) && apierrors.IsNotFound(errNew) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Events not expired 15 s past --event-ttl %v: %v, %v", ttl, errCore, errNew)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap: %v", err)
	}
}
