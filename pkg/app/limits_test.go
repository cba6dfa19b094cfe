package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRequestTimeoutEtcdDown: with etcd gone, a write is answered 504
// Timeout within --request-timeout (it used to hang for as long as etcd
// was down), and /healthz answers at once: 500 for its etcd check, ok
// without it (?exclude=etcd).
func TestRequestTimeoutEtcdDown(t *testing.T) {
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		// Long enough for the first create beside the whole suite under
		// -race; short enough that the test's bound proves it.
		RequestTimeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Timeout = 30 * time.Second // the client waits longer than the server may take
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.etcd.Close()
	a.etcd = nil // closed: Close must not close it again
	start := time.Now()
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "during"}}, metav1.CreateOptions{})
	took := time.Since(start)
	if !apierrors.IsTimeout(err) || took > 10*time.Second {
		t.Errorf("a create with etcd down: %v after %v, want 504 Timeout within about 5s", err, took)
	}
	// /healthz fails on etcd, as kube-apiserver's does, but answers at once,
	// and without its etcd check it passes.
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/healthz").DoRaw(ctx); !apierrors.IsInternalError(err) || !strings.Contains(string(body), "[-]etcd failed: reason withheld") {
		t.Errorf("/healthz with etcd down: %q %v, want 500 naming etcd", body, err)
	}
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/healthz").Param("exclude", "etcd").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("/healthz?exclude=etcd with etcd down: %q %v", body, err)
	}
}
