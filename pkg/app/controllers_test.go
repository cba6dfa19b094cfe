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
)

// TestControllersSelection: with --controllers=*,-namespace-controller a
// deleted namespace stays Terminating with its content, while the garbage
// collector and the default ServiceAccount still work; with the default
// both run. An unknown name does not start.
func TestControllersSelection(t *testing.T) {
	if _, err := Start(Config{DataDir: t.TempDir(), Controllers: []string{"*", "-nosuch"}, Log: slog.New(slog.DiscardHandler)}); err == nil ||
		!strings.Contains(err.Error(), `--controllers: "nosuch" is not in the list of known controllers`) {
		t.Fatalf("an unknown controller: %v", err)
	}
	for _, c := range []struct {
		controllers  []string
		namespaceRun bool
	}{
		{nil, true},
		{[]string{"*", "-namespace-controller", "deployment"}, false},
	} {
		t.Run(strings.Join(c.controllers, ","), func(t *testing.T) {
			a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
				ConsistentListFromCache: true, ConsistentGetFromCache: true, Controllers: c.controllers, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			_, cs := adminClient(t, a)
			ctx := context.Background()
			eventually := func(what string, ok func() bool) {
				t.Helper()
				for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("timed out waiting for %s", what)
					}
				}
			}
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually("the default ServiceAccount", func() bool {
				_, err := cs.CoreV1().ServiceAccounts("t").Get(ctx, "default", metav1.GetOptions{})
				return err == nil
			})
			cms := cs.CoreV1().ConfigMaps("t")
			owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually("the garbage collector to delete the dependent", func() bool {
				_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cs.CoreV1().Namespaces().Delete(ctx, "t", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if c.namespaceRun {
				eventually("the namespace to go", func() bool {
					_, err := cs.CoreV1().Namespaces().Get(ctx, "t", metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				})
				return
			}
			time.Sleep(2 * time.Second)
			ns, err := cs.CoreV1().Namespaces().Get(ctx, "t", metav1.GetOptions{})
			if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Status.Conditions) != 0 {
				t.Fatalf("without the namespace controller the namespace stays Terminating, untouched: %+v, %v", ns, err)
			}
			if _, err := cms.Get(ctx, "content", metav1.GetOptions{}); err != nil {
				t.Fatalf("without the namespace controller the content stays: %v", err)
			}
		})
	}
}
