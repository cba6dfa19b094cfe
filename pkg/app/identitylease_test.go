package app

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestAPIServerID: the identity of a server on host "vm" is the name of
// the identity Lease kube-apiserver 1.37.2 kept on that host.
func TestAPIServerID(t *testing.T) {
	if got, want := apiServerID("vm"), "apiserver-wlv32tlttr4jl3gtroqexyxapa"; got != want {
		t.Errorf("apiServerID(vm) = %s, want kube-apiserver's %s", got, want)
	}
}

// TestIdentityLease: a server keeps its identity Lease in kube-system, as
// kube-apiserver does, and at its start deletes the identity Leases not
// renewed within their duration, keeping the others.
func TestIdentityLease(t *testing.T) {
	dir := t.TempDir()
	start := func() *App {
		a, err := Start(Config{DataDir: dir, EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
			ConsistentListFromCache: true, ConsistentGetFromCache: true, Controllers: []string{}, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := start()
	_, cs := adminClient(t, a)
	leases := cs.CoordinationV1().Leases("kube-system")
	hostname, _ := os.Hostname()
	name := apiServerID(hostname)
	var own *coordinationv1.Lease
	waitFor(t, 10*time.Second, "the identity Lease", func() bool {
		var err error
		own, err = leases.Get(ctx, name, metav1.GetOptions{})
		return err == nil
	})
	if own.Labels["apiserver.kubernetes.io/identity"] != "kube-apiserver" || own.Labels["kubernetes.io/hostname"] != hostname ||
		!strings.HasPrefix(ptr.Deref(own.Spec.HolderIdentity, ""), name+"_") || ptr.Deref(own.Spec.LeaseDurationSeconds, 0) != 3600 ||
		own.Spec.RenewTime == nil || time.Since(own.Spec.RenewTime.Time) > time.Minute {
		t.Errorf("the identity Lease: %+v %+v", own.ObjectMeta, own.Spec)
	}
	identity := func(name string, renewed time.Duration) {
		t.Helper()
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name + "_x"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: time.Now().Add(-renewed)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	identity("apiserver-gone", 2*time.Hour)
	identity("apiserver-alive", 30*time.Minute)
	a.Close()

	a = start()
	defer a.Close()
	_, cs = adminClient(t, a)
	leases = cs.CoordinationV1().Leases("kube-system")
	waitFor(t, 10*time.Second, "the expired identity Lease deleted", func() bool {
		_, err := leases.Get(ctx, "apiserver-gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	for _, keep := range []string{"apiserver-alive", name} {
		if _, err := leases.Get(ctx, keep, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
}
