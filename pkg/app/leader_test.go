package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// replica is a server of TestLeaderElection and its clients.
type replica struct {
	*App
	cs     *kubernetes.Clientset
	dyn    *dynamic.DynamicClient
	closed bool
}

// TestLeaderElection: three servers on one etcd (TLS with client
// certificates, credentials shared by copying the pki directory), with
// short election timings. Exactly one holds the Lease and runs the
// namespace controller; a CRD created through one server is served by all
// three, whose status writes settle; closing the leader hands the Lease to
// another within a second or so (it is released), and the controllers work
// there.
func TestLeaderElection(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	// The etcd is the test's own rather than the first server's embedded
	// one, so that any server, the leader among them, can be closed.
	etcd := sharedEtcd(t, dirs[0])

	replicas := make([]*replica, len(dirs))
	start := func(i int) error {
		own := pki.FilesIn(filepath.Join(dirs[i], "pki"))
		a, err := Start(Config{DataDir: dirs[i], EtcdServers: []string{etcd.Endpoint},
			EtcdCAFile: own.CACert, EtcdCertFile: own.EtcdClientCert, EtcdKeyFile: own.EtcdClientKey,
			EtcdPrefix: "/registry", WatchCache: true, ConsistentListFromCache: true, ConsistentGetFromCache: true,
			LeaderElect: true, LeaderElectLeaseDuration: 2 * time.Second, LeaderElectRenewDeadline: 1500 * time.Millisecond,
			LeaderElectRetryPeriod: 250 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			return fmt.Errorf("server %d: %w", i, err)
		}
		r := &replica{App: a}
		replicas[i] = r
		rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
		if err != nil {
			return err
		}
		r.cs = kubernetes.NewForConfigOrDie(rc)
		r.dyn = dynamic.NewForConfigOrDie(rc)
		return nil
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			if r != nil && !r.closed {
				r.Close()
			}
		}
	})
	if err := start(0); err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs[1:] {
		// The first server's CA (and ServiceAccount key): one cluster.
		if err := os.CopyFS(filepath.Join(dir, "pki"), os.DirFS(filepath.Join(dirs[0], "pki"))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(dirs))
	for i := 1; i < len(dirs); i++ {
		wg.Go(func() { errs[i] = start(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// leader waits until the Lease names one of the open servers and that
	// one runs the controllers; never may two run them at once.
	leader := func(transitions int32) *replica {
		t.Helper()
		var holder string
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var leading []*replica
			for _, r := range replicas {
				if !r.closed && r.elector.Leading() {
					leading = append(leading, r)
				}
			}
			if len(leading) > 1 {
				t.Fatalf("%d servers run the controllers at once", len(leading))
			}
			var from *replica
			for _, r := range replicas {
				if !r.closed {
					from = r
					break
				}
			}
			lease, err := from.cs.CoordinationV1().Leases("kube-system").Get(ctx, controllerManagerLease, metav1.GetOptions{})
			if err == nil && lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
				if len(leading) == 1 && holder == leading[0].elector.Identity() {
					if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 2 ||
						lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != transitions {
						t.Fatalf("the Lease's spec: %+v", lease.Spec)
					}
					return leading[0]
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no single leader: the Lease names %q", holder)
		return nil
	}
	// serviceAccountAppears creates a namespace through one server and
	// waits for its default ServiceAccount and kube-root-ca.crt through
	// another.
	serviceAccountAppears := func(ns string, through, read *replica) {
		t.Helper()
		if _, err := through.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, errSA := read.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			_, errCM := read.cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if errSA == nil && errCM == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("namespace %s: no default ServiceAccount (%v) or kube-root-ca.crt (%v)", ns, errSA, errCM)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	others := func(but *replica) (out []*replica) {
		for _, r := range replicas {
			if r != but && !r.closed {
				out = append(out, r)
			}
		}
		return out
	}

	first := leader(0)
	t.Logf("leader: %s", first.elector.Identity())
	followers := others(first)
	for _, r := range replicas {
		want := "watchcache_leader 0\n"
		if r == first {
			want = "watchcache_leader 1\n"
		}
		if m, err := r.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err != nil || !strings.Contains(string(m), want) {
			t.Fatalf("/metrics has no %q: %v", want, err)
		}
	}
	serviceAccountAppears("before-handoff", followers[0], followers[1])

	// A CRD created through a follower is served by every server.
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	if _, err := followers[0].dyn.Resource(crds).Create(ctx, crdObject(t, "widgets", "Widget"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := r.dyn.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d does not serve widgets: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := replicas[2].dyn.Resource(widgets).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		if _, err := r.dyn.Resource(widgets).Namespace("default").Get(ctx, "w", metav1.GetOptions{}); err != nil {
			t.Fatalf("server %d: widget w: %v", i, err)
		}
	}
	// Two CRDs claiming one kind, created at once through two servers:
	// every server settles it alike, one accepted and served everywhere,
	// the other refused and served nowhere.
	created := make(chan error, 2)
	go func() {
		_, err := followers[0].dyn.Resource(crds).Create(ctx, crdObject(t, "gears", "Gear"), metav1.CreateOptions{})
		created <- err
	}()
	go func() {
		_, err := followers[1].dyn.Resource(crds).Create(ctx, crdObject(t, "cogs", "Gear"), metav1.CreateOptions{})
		created <- err
	}()
	for range 2 {
		if err := <-created; err != nil {
			t.Fatal(err)
		}
	}
	// Each server may first accept the CRD it wrote, before it sees the
	// other's claim: what must hold is that they settle, one accepted and
	// one refused.
	accepted := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(accepted) != 2 || accepted["gears"] == accepted["cogs"] {
		if time.Now().After(deadline) {
			t.Fatalf("the Gear CRDs' names were not settled (NamesAccepted by CRD): %v", accepted)
		}
		time.Sleep(50 * time.Millisecond)
		accepted = map[string]bool{}
		for _, plural := range []string{"gears", "cogs"} {
			def, err := first.dyn.Resource(crds).Get(ctx, plural+".example.com", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			conds, _, _ := unstructured.NestedSlice(def.Object, "status", "conditions")
			switch {
			case hasCondition(conds, "NamesAccepted", "True"):
				accepted[plural] = true
			case hasCondition(conds, "NamesAccepted", "False"):
				accepted[plural] = false
			}
		}
	}
	for i, r := range replicas {
		for plural, ok := range accepted {
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := r.dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: plural}).Namespace("default").
					List(ctx, metav1.ListOptions{})
				if (err == nil) == ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("server %d: %s accepted %v, listed: %v", i, plural, ok, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	// The three servers' status writes settle: nothing is written once
	// the names are settled.
	rvs := map[string]string{}
	for _, plural := range []string{"widgets", "gears", "cogs"} {
		def, err := first.dyn.Resource(crds).Get(ctx, plural+".example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs[plural] = def.GetResourceVersion()
		if conds, _, _ := unstructured.NestedSlice(def.Object, "status", "conditions"); plural == "widgets" &&
			(!hasCondition(conds, "Established", "True") || !hasCondition(conds, "NamesAccepted", "True")) {
			t.Fatalf("the CRD's conditions: %v", conds)
		}
	}
	time.Sleep(500 * time.Millisecond)
	for plural, rv := range rvs {
		if again, err := followers[1].dyn.Resource(crds).Get(ctx, plural+".example.com", metav1.GetOptions{}); err != nil || again.GetResourceVersion() != rv {
			t.Fatalf("%s.example.com is still being written: resourceVersion %s, then %s (%v)", plural, rv, again.GetResourceVersion(), err)
		}
	}

	// Closing the leader releases the Lease: another takes over at once
	// and runs the controllers.
	closedAt := time.Now()
	first.closed = true
	closeErr := make(chan error, 1)
	go func() { closeErr <- first.Close() }()
	second := leader(1)
	handover := time.Since(closedAt)
	t.Logf("handed over in %v to %s", handover, second.elector.Identity())
	if handover > 5*time.Second {
		t.Errorf("the handover took %v", handover)
	}
	serviceAccountAppears("after-handoff", others(second)[0], second)
	if err := <-closeErr; err != nil {
		t.Fatal(err)
	}

	// Another candidate takes the Lease (as one whose clock runs ahead
	// could): the leader fails to renew within its deadline and stops its
	// controllers; once the intruder's lease has expired, a server takes
	// it and runs them anew.
	var transitions int32
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the leader renews it meanwhile
		lease, err := second.cs.CoordinationV1().Leases("kube-system").Get(ctx, controllerManagerLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		intruder, now := "intruder", metav1.NewMicroTime(time.Now())
		transitions = *lease.Spec.LeaseTransitions + 1
		lease.Spec.HolderIdentity, lease.Spec.LeaseTransitions, lease.Spec.AcquireTime, lease.Spec.RenewTime = &intruder, &transitions, &now, &now
		_, err = second.cs.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stolenAt := time.Now()
	for second.elector.Leading() {
		if time.Since(stolenAt) > 5*time.Second {
			t.Fatal("the leader still runs its controllers with the Lease taken")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := time.Since(stolenAt)
	third := leader(transitions + 1)
	t.Logf("the Lease taken: the controllers stopped in %v, ran again on %s after %v", stopped, third.elector.Identity(), time.Since(stolenAt))
	serviceAccountAppears("after-loss", others(third)[0], third)
}

// crdObject is a namespaced CRD of group example.com with one version,
// v1, whose objects are free.
func crdObject(t *testing.T, plural, kind string) *unstructured.Unstructured {
	var crd map[string]any
	if err := yaml.Unmarshal([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: `+plural+`.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: `+plural+`, kind: `+kind+`}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`), &crd); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: crd}
}

// hasCondition says whether conditions hold one of type kind with status
// value.
func hasCondition(conditions []any, kind, value string) bool {
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == kind && m["status"] == value {
			return true
		}
	}
	return false
}

// sharedEtcd starts an etcd of the test's own for servers that share it:
// TLS with the certificates of the PKI it makes in dir (the first
// server's data directory, whose pki/ the others copy), closed with the
// test.
func sharedEtcd(t *testing.T, dir string) *etcdembed.Server {
	t.Helper()
	files, err := ensurePKI(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, clientCert, clientKey := etcdTLS(files)
	etcd, err := etcdembed.Start(etcdembed.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, ProgressNotifyInterval: time.Minute,
		ClientTLS: serverTLS, ClientCert: clientCert, ClientKey: clientKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	return etcd
}
