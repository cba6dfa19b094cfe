package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestShutdownDelay: during --shutdown-delay-duration, /readyz fails its
// shutdown check while requests are still served and /livez passes; then
// the server stops.
func TestShutdownDelay(t *testing.T) {
	const delay = 5 * time.Second
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		ShutdownDelay: delay, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	get := func(path string) (string, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		return string(body), err
	}
	if body, err := get("/readyz/shutdown"); err != nil || body != "ok" {
		t.Fatalf("/readyz/shutdown before: %q %v", body, err)
	}
	stopped := make(chan error, 1)
	began := time.Now()
	go func() { stopped <- a.Shutdown() }()
	for {
		body, err := get("/readyz")
		if apierrors.IsInternalError(err) && strings.Contains(body, "[-]shutdown failed: reason withheld") {
			break
		}
		if time.Since(began) > delay {
			t.Fatalf("/readyz while shutting down: %q %v", body, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if body, err := get("/readyz/shutdown"); !strings.Contains(body, "process is shutting down") {
		t.Errorf("/readyz/shutdown while shutting down: %q %v", body, err)
	}
	if body, err := get("/livez"); err != nil || body != "ok" {
		t.Errorf("/livez while shutting down: %q %v", body, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("a request while shutting down: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < delay {
		t.Errorf("stopped %v after Shutdown began, before the %v delay", took, delay)
	}
	if _, err := get("/livez"); err == nil {
		t.Error("/livez answered after Shutdown returned")
	}
}
