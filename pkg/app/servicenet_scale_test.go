package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/pki"
	"github.com/watchcache/watchcache/pkg/storage"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// serviceReplica starts a server on dir (its pki a copy of etcd's data dir's,
// made by sharedEtcd) against the shared etcd, with the Service ranges
// given and the repair passes every second; wrap, if not nil, wraps the
// Services' store.
func serviceReplica(t *testing.T, etcd *etcdembed.Server, pkiFrom, dir, ipRange, portRange string,
	wrap func(storage.Interface) storage.Interface) (*App, *kubernetes.Clientset) {
	t.Helper()
	if dir != pkiFrom {
		if err := os.CopyFS(filepath.Join(dir, "pki"), os.DirFS(filepath.Join(pkiFrom, "pki"))); err != nil {
			t.Fatal(err)
		}
	}
	own := pki.FilesIn(filepath.Join(dir, "pki"))
	cfg := Config{DataDir: dir, EtcdServers: []string{etcd.Endpoint},
		EtcdCAFile: own.CACert, EtcdCertFile: own.EtcdClientCert, EtcdKeyFile: own.EtcdClientKey,
		EtcdPrefix: "/registry", WatchCache: true, ConsistentListFromCache: true, ConsistentGetFromCache: true,
		ServiceClusterIPRange: ipRange, ServiceNodePortRange: portRange, ServiceRepairInterval: time.Second,
		Log: slog.New(slog.DiscardHandler)}
	if wrap != nil {
		cfg.WrapStore = func(resource string, s storage.Interface) storage.Interface {
			if resource != "services" {
				return s
			}
			return wrap(s)
		}
	}
	a, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	rc, _ := adminClient(t, a)
	rc.QPS = -1
	return a, kubernetes.NewForConfigOrDie(rc)
}

// allocated are the IPAddresses and the taken node ports.
func allocated(t *testing.T, a *App, cs *kubernetes.Clientset) (ips []string, ports []int) {
	t.Helper()
	ctx := context.Background()
	list, err := cs.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range list.Items {
		ips = append(ips, ip.Name)
	}
	if ports, err = a.nodePorts.Taken(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ips)
	return ips, ports
}

// held are the cluster IPs and node ports the Services hold.
func held(t *testing.T, cs *kubernetes.Clientset) (ips []string, ports []int) {
	t.Helper()
	list, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		ips = append(ips, s.Spec.ClusterIPs...)
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				ports = append(ports, int(p.NodePort))
			}
		}
	}
	slices.Sort(ips)
	slices.Sort(ports)
	return ips, ports
}

func nodePortService(name string, labels map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
}

// TestServiceAllocationRolledBack: a Service create that a later stage
// refuses after its IP and node port were allocated (validation, a
// ValidatingAdmissionPolicy) gives them back at once, not at the next
// repair pass.
func TestServiceAllocationRolledBack(t *testing.T) {
	dir := t.TempDir()
	etcd := sharedEtcd(t, dir)
	a, cs := serviceReplica(t, etcd, dir, dir, "10.0.0.0/24", "30000-30099", nil)
	ctx := context.Background()
	check := func(what string) {
		t.Helper()
		ips, ports := allocated(t, a, cs)
		if len(ips) != 1 || ips[0] != "10.0.0.1" || len(ports) != 0 {
			t.Errorf("after %s: IPAddresses %v, node ports %v; want only the kubernetes Service's 10.0.0.1", what, ips, ports)
		}
	}
	bad := nodePortService("bad", nil)
	bad.Spec.SessionAffinity = "Bogus"
	if _, err := cs.CoreV1().Services("default").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("invalid Service: %v, want 422", err)
	}
	check("validation refused")

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-denied-services"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(object.metadata.labels) || !('deny' in object.metadata.labels)"}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-denied-services"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-denied-services",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy takes effect once the replica has seen it: until then a
	// probe is stored, and deleted.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := cs.CoreV1().Services("default").Create(ctx, nodePortService("denied", map[string]string{"deny": "yes"}), metav1.CreateOptions{})
		if err == nil {
			if err := cs.CoreV1().Services("default").Delete(ctx, "denied", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatal("the policy never refused a Service")
			}
			continue
		}
		if !apierrors.IsInvalid(err) {
			t.Fatalf("denied Service: %v, want 422", err)
		}
		break
	}
	check("the policy refused")

	// An update refused after it allocated (ClusterIP to NodePort) gives
	// back its node port, and keeps the IP the Service had.
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type, svc.Labels = corev1.ServiceTypeNodePort, map[string]string{"deny": "yes"}
	if _, err := cs.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("denied update: %v, want 422", err)
	}
	if ips, ports := allocated(t, a, cs); len(ips) != 2 || !slices.Contains(ips, svc.Spec.ClusterIP) || len(ports) != 0 {
		t.Errorf("after a refused update: IPAddresses %v, node ports %v; want 10.0.0.1 and %s, no port", ips, ports, svc.Spec.ClusterIP)
	}
}

// frozenStore is a killed replica's Services store: once frozen, a
// create never reaches etcd and never returns until thawed (the test's
// end), so what was allocated for it is neither stored nor given back.
type frozenStore struct {
	storage.Interface
	frozen  *atomic.Bool
	blocked *atomic.Int32
	thaw    chan struct{}
}

func (s frozenStore) Create(ctx context.Context, key string, data []byte) (*object.Object, error) {
	if s.frozen.Load() {
		s.blocked.Add(1)
		<-s.thaw
		return nil, fmt.Errorf("replica killed")
	}
	return s.Interface.Create(ctx, key, data)
}

// TestServicesTwoReplicasAtScale is issue 26's test: two replicas
// creating 500 ClusterIP and 500 NodePort Services at once through both
// give no IP or node port twice and release all after the deletes; a
// replica killed in the middle of creating leaks nothing once the repair
// passes have run after its restart.
func TestServicesTwoReplicasAtScale(t *testing.T) {
	const ipRange, portRange = "10.0.0.0/22", "30000-31099" // 1022 IPs, 1100 ports
	const perReplica = 500
	dirs := []string{t.TempDir(), t.TempDir()}
	etcd := sharedEtcd(t, dirs[0])
	a0, cs0 := serviceReplica(t, etcd, dirs[0], dirs[0], ipRange, portRange, nil)
	_, cs1 := serviceReplica(t, etcd, dirs[0], dirs[1], ipRange, portRange, nil)
	ctx := context.Background()

	// create makes n Services named prefix-i through cs, workers at once,
	// every other one a NodePort Service; it returns the names made.
	create := func(cs *kubernetes.Clientset, prefix string, n int, onErr func(error)) []string {
		var mu sync.Mutex
		var made []string
		next := atomic.Int32{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					name := fmt.Sprintf("%s-%d", prefix, i)
					svc := nodePortService(name, nil)
					if i%2 == 0 {
						svc.Spec.Type = corev1.ServiceTypeClusterIP
					}
					if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
						onErr(err)
						return
					}
					mu.Lock()
					made = append(made, name)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return made
	}
	deleteAll := func(cs *kubernetes.Clientset, names []string) {
		var wg sync.WaitGroup
		for chunk := range slices.Chunk(names, (len(names)+7)/8) {
			wg.Go(func() {
				for _, name := range chunk {
					if err := cs.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						t.Error(name, err)
					}
				}
			})
		}
		wg.Wait()
	}
	fail := func(err error) { t.Error(err) }
	// exact: the IPAddresses and the node port bitmap are exactly what
	// the Services hold, none given twice.
	exact := func() string {
		ips, ports := allocated(t, a0, cs0)
		hIPs, hPorts := held(t, cs0)
		if !slices.Equal(ips, hIPs) || !slices.Equal(ports, hPorts) || len(slices.Compact(hIPs)) != len(hIPs) {
			return fmt.Sprintf("%d IPAddresses for %d cluster IPs (%d distinct), %d node ports taken for %d held",
				len(ips), len(hIPs), len(slices.Compact(slices.Clone(hIPs))), len(ports), len(hPorts))
		}
		if len(slices.Compact(slices.Clone(hPorts))) != len(hPorts) {
			return "a node port held twice"
		}
		return ""
	}

	start := time.Now()
	var names [2][]string
	var wg sync.WaitGroup
	for r, cs := range []*kubernetes.Clientset{cs0, cs1} {
		wg.Go(func() { names[r] = create(cs, fmt.Sprintf("r%d", r), perReplica, fail) })
	}
	wg.Wait()
	t.Logf("%d creates through two replicas: %v", 2*perReplica, time.Since(start))
	if diff := exact(); diff != "" {
		t.Fatal("after the creates:", diff)
	}
	if ips, ports := allocated(t, a0, cs0); len(ips) != 2*perReplica+1 || len(ports) != perReplica {
		t.Fatalf("%d IPAddresses, %d node ports; want %d (with the kubernetes Service's) and %d", len(ips), len(ports), 2*perReplica+1, perReplica)
	}
	wg.Go(func() { deleteAll(cs0, names[0]) })
	wg.Go(func() { deleteAll(cs1, names[1]) })
	wg.Wait()
	if ips, ports := allocated(t, a0, cs0); len(ips) != 1 || len(ports) != 0 {
		t.Fatalf("after the deletes: IPAddresses %v, node ports %v; want only the kubernetes Service's", ips, ports)
	}

	t.Logf("%d deletes: %v", 2*perReplica, time.Since(start))
	// A third replica is killed while it creates: its creates in flight
	// have their IPs and node ports but never store the Service.
	frozen, blocked, thaw := &atomic.Bool{}, &atomic.Int32{}, make(chan struct{})
	dir2 := t.TempDir()
	_, cs2 := serviceReplica(t, etcd, dirs[0], dir2, ipRange, portRange, func(s storage.Interface) storage.Interface {
		return frozenStore{Interface: s, frozen: frozen, blocked: blocked, thaw: thaw}
	})
	t.Cleanup(func() { close(thaw) }) // before the replica's Close
	wg.Go(func() { create(cs0, "a", 200, fail) })
	go create(cs2, "k", 1000, func(error) {}) // ends when thawed
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, err := cs0.CoreV1().Services("default").List(ctx, metav1.ListOptions{}); err == nil && len(l.Items) > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the creates did not get going")
		}
	}
	frozen.Store(true)
	for deadline := time.Now().Add(20 * time.Second); blocked.Load() < 8; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d creates in flight on the killed replica, want 8", blocked.Load())
		}
	}
	wg.Wait()
	if diff := exact(); diff == "" {
		t.Fatal("the killed replica's creates in flight left nothing allocated: the test tests nothing")
	}
	// Its restart (a new replica on a copy of its certificates: the killed
	// one's process lives on, frozen) and the repair passes, which free an
	// IP 10 s after it was taken and a node port after three passes, leave
	// exactly what the Services hold.
	t.Logf("a replica killed: %v", time.Since(start))
	serviceReplica(t, etcd, dirs[0], t.TempDir(), ipRange, portRange, nil)
	diff := exact()
	for deadline := time.Now().Add(45 * time.Second); diff != ""; diff = exact() {
		if time.Now().After(deadline) {
			t.Fatal("the repair passes left:", diff)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("repaired: %v", time.Since(start))
	list, err := cs0.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, s := range list.Items {
		if s.Name != "kubernetes" {
			rest = append(rest, s.Name)
		}
	}
	deleteAll(cs0, rest)
	if ips, ports := allocated(t, a0, cs0); len(ips) != 1 || len(ports) != 0 {
		t.Fatalf("after the last deletes: IPAddresses %v, node ports %v; want only the kubernetes Service's", ips, ports)
	}
}
