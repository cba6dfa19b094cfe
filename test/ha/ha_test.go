// Package ha runs etcd members and watchcache replicas as processes and
// breaks them: killed etcd leader and follower, a replica killed with
// SIGKILL, a replica's connection to etcd stalled and cut. Clients write
// and read consistently through every replica meanwhile; porcupine checks
// the history is linearizable (no acknowledged write lost, no stale read)
// and informers on every replica converge.
//
// It lives under test/, after pkg/ in `go test ./...`'s package order, so
// that its six processes do not run beside the e2e package's timing
// assertions.
package ha

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// namespace is where the test's objects live.
const namespace = "ha"

var (
	buildOnce sync.Once
	buildDir  string // holds exePath; TestMain removes it
	exePath   string
	buildErr  error
)

// TestMain removes the built command once every test and benchmark ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// watchcacheBinary builds the command once per test binary.
func watchcacheBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "watchcache-ha-"); buildErr == nil {
			exePath, buildErr = buildWatchcache(buildDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return exePath
}

// TestReplicasSurviveFaults is the fault test: three etcd members,
// three replicas (the third reaching etcd through proxies), and in turn
// the etcd leader killed, a follower killed, a replica killed with SIGKILL,
// and the third replica's etcd connections stalled and then cut.
func TestReplicasSurviveFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 etcd members and 3 replicas as processes")
	}
	c := startCluster(t, watchcacheBinary(t), 3, 3, 2)
	ctx := context.Background()
	if _, err := c.replicas[0].client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("one replica runs the controllers", func(t *testing.T) { c.checkControllers(t, "first") })
	t.Run("continue and watch across replicas", c.checkCrossReplica)
	stores := c.startInformers(t)

	phases := []struct {
		name  string
		fault func(t *testing.T)
	}{
		{"etcd leader killed", func(t *testing.T) { c.restartMember(t, c.leader(t)) }},
		{"etcd follower killed", func(t *testing.T) { c.restartMember(t, c.follower(t)) }},
		{"replica holding the controllers' Lease killed", func(t *testing.T) {
			holder, r := c.leaseHolder(t)
			killed := time.Now()
			r.kill()
			time.Sleep(2 * time.Second)
			r.start(t)
			c.waitReady(t, r, time.Minute)
			c.waitLeaseTakenOver(t, holder)
			t.Logf("killed %s, the Lease's holder; the Lease taken over %v later", r.name, time.Since(killed).Round(100*time.Millisecond))
		}},
		{"replica's etcd stalled then cut", c.isolateReplica},
	}
	for i, ph := range phases {
		t.Run(ph.name, func(t *testing.T) {
			h := c.runPhase(t, i, ph.fault)
			checkLinearizable(t, h)
			c.waitConverged(t, stores)
		})
	}
	t.Run("controllers after the faults", func(t *testing.T) { c.checkControllers(t, "last") })
}

// restartMember kills m with SIGKILL and starts it again on its data dir.
func (c *cluster) restartMember(t *testing.T, m *member) {
	m.kill()
	time.Sleep(3 * time.Second)
	m.start(t)
}

// isolateReplica stalls the third replica's connections to etcd until it
// reports not ready, cuts them, and then lets it reconnect: it must
// become ready again by itself.
func (c *cluster) isolateReplica(t *testing.T) {
	r := c.replicas[2]
	stalled := time.Now()
	for _, p := range r.proxies {
		p.setStalled(true)
	}
	c.waitUnready(t, r)
	t.Logf("%s not ready %v after its etcd connections stalled", r.name, time.Since(stalled).Round(100*time.Millisecond))
	for _, p := range r.proxies {
		p.setCut(true)
	}
	time.Sleep(2 * time.Second)
	if c.ready(r) {
		t.Errorf("%s is ready without etcd", r.name)
	}
	restored := time.Now()
	for _, p := range r.proxies {
		p.setCut(false)
	}
	c.waitReady(t, r, time.Minute)
	t.Logf("%s ready again %v after etcd became reachable", r.name, time.Since(restored).Round(100*time.Millisecond))
}

// waitUnready waits until r reports not ready.
func (c *cluster) waitUnready(t *testing.T, r *replica) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.ready(r) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still ready 30s after losing etcd", r.name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runPhase creates the phase's keys, runs clients on every replica for a
// while, injects the fault in the middle, then reads every key through
// every replica once more; it returns the recorded history.
func (c *cluster) runPhase(t *testing.T, phase int, fault func(t *testing.T)) *history {
	ctx := context.Background()
	for k := range numKeys {
		if _, err := c.replicas[0].client.CoreV1().ConfigMaps(namespace).Create(ctx, phaseConfigMap(phase, k, initialValue), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h := newHistory()
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	const clients = 4
	for id := range clients {
		wg.Go(func() { c.runClient(load, h, phase, id) })
	}
	time.Sleep(2 * time.Second)
	fault(t)
	time.Sleep(3 * time.Second)
	stop()
	wg.Wait()
	for _, r := range c.replicas { // every acknowledged write is there
		if err := c.record(h, r, clients, input{kind: opList}, phase); err != nil {
			t.Fatalf("the final consistent list through %s: %v", r.name, err)
		}
	}
	t.Logf("%d operations, %d acknowledged writes, %d writes of unknown outcome", len(h.operations()), h.acknowledged, h.unknown)
	return h
}

// runClient sends puts, consistent gets and consistent lists to random
// replicas until ctx ends.
func (c *cluster) runClient(ctx context.Context, h *history, phase, id int) {
	rng := rand.New(rand.NewPCG(uint64(phase), uint64(id)))
	for n := 0; ctx.Err() == nil; n++ {
		r := c.replicas[rng.IntN(len(c.replicas))]
		in := input{key: rng.IntN(numKeys)}
		switch p := rng.IntN(10); {
		case p < 4:
			in.kind, in.value = opPut, fmt.Sprintf("p%d-c%d-%d", phase, id, n)
		case p < 7:
			in.kind = opGet
		default:
			in.kind = opList
		}
		c.record(h, r, id, in, phase)
		time.Sleep(5 * time.Millisecond)
	}
}

// record performs one operation through r and records it: a failed put
// as of unknown outcome, a failed read not at all (it observed nothing).
// It returns the operation's error.
func (c *cluster) record(h *history, r *replica, client int, in input, phase int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cms := r.client.CoreV1().ConfigMaps(namespace)
	call := h.now()
	var out output
	var err error
	switch in.kind {
	case opPut:
		_, err = cms.Update(ctx, phaseConfigMap(phase, in.key, in.value), metav1.UpdateOptions{})
		if err != nil {
			h.addUnknown(client, in, call)
			return err
		}
	case opGet:
		var cm *corev1.ConfigMap
		if cm, err = cms.Get(ctx, keyName(phase, in.key), metav1.GetOptions{}); err == nil {
			out.value = cm.Data["v"]
		}
	case opList:
		var list *corev1.ConfigMapList
		if list, err = cms.List(ctx, metav1.ListOptions{LabelSelector: "phase=" + strconv.Itoa(phase)}); err == nil {
			for _, cm := range list.Items {
				for k := range numKeys {
					if cm.Name == keyName(phase, k) {
						out.list[k] = cm.Data["v"]
					}
				}
			}
		}
	}
	if err != nil {
		return err
	}
	h.add(client, in, out, call, h.now())
	return nil
}

// keyName is the name of key k's config map in a phase.
func keyName(phase, k int) string { return fmt.Sprintf("p%d-k%d", phase, k) }

// phaseConfigMap is key k's config map holding value.
func phaseConfigMap(phase, k int, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: keyName(phase, k), Namespace: namespace, Labels: map[string]string{"phase": strconv.Itoa(phase)}},
		Data:       map[string]string{"v": value},
	}
}

// checkLinearizable fails t unless porcupine finds the history
// linearizable; the visualization is written for a failure.
func checkLinearizable(t *testing.T, h *history) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(registersModel, h.operations(), 3*time.Minute)
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("ha-%s.html", filepath.Base(t.Name())))
		porcupine.VisualizePath(registersModel, info, path)
		t.Errorf("history is not linearizable: a stale read or a lost write (see %s)", path)
	default:
		t.Errorf("porcupine could not decide in time")
	}
}

// startInformers runs a config map informer in the namespace through every
// replica and returns their stores.
func (c *cluster) startInformers(t *testing.T) []cache.Store {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var stores []cache.Store
	for _, r := range c.replicas {
		f := informers.NewSharedInformerFactoryWithOptions(r.client, 0, informers.WithNamespace(namespace))
		inf := f.Core().V1().ConfigMaps().Informer()
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("informer on %s did not sync", r.name)
		}
		stores = append(stores, inf.GetStore())
	}
	return stores
}

// waitConverged waits until every informer holds exactly what a consistent
// list says, resource versions included.
func (c *cluster) waitConverged(t *testing.T, stores []cache.Store) {
	t.Helper()
	var want map[string]string
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := c.replicas[0].client.CoreV1().ConfigMaps(namespace).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			want = map[string]string{}
			for _, cm := range list.Items {
				want[cm.Name] = cm.ResourceVersion
			}
			behind := -1
			for i, s := range stores {
				if !sameObjects(s, want) {
					behind = i
					break
				}
			}
			if behind < 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the informer on %s did not converge within 1m", c.replicas[behind].name)
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("consistent list: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sameObjects reports whether s holds exactly the objects of want (name →
// resourceVersion).
func sameObjects(s cache.Store, want map[string]string) bool {
	items := s.List()
	if len(items) != len(want) {
		return false
	}
	for _, item := range items {
		cm := item.(*corev1.ConfigMap)
		if want[cm.Name] != cm.ResourceVersion {
			return false
		}
	}
	return true
}

// checkCrossReplica pages a list through all three replicas with one
// continue token chain, resumes a watch on one replica from a
// resourceVersion another returned, and authenticates on every replica
// with a ServiceAccount token one of them issued.
func (c *cluster) checkCrossReplica(t *testing.T) {
	ctx := context.Background()
	c.checkTokenAcrossReplicas(t)
	for i := range 5 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("x-%d", i), Labels: map[string]string{"cross": "y"}}}
		if _, err := c.replicas[i%3].client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: "cross=y", Limit: 2}
	var firstRV string
	for page := 0; ; page++ {
		list, err := c.replicas[page%3].client.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d through %s: %v", page, c.replicas[page%3].name, err)
		}
		if page == 0 {
			firstRV = list.ResourceVersion
		} else if list.ResourceVersion != firstRV {
			t.Errorf("page %d at resourceVersion %s, the first at %s", page, list.ResourceVersion, firstRV)
		}
		for _, cm := range list.Items {
			if seen[cm.Name] {
				t.Errorf("%s listed twice", cm.Name)
			}
			seen[cm.Name] = true
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if len(seen) != 5 {
		t.Errorf("paged through replicas: %d objects, want 5", len(seen))
	}
	w, err := c.replicas[2].client.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "cross=y", ResourceVersion: firstRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	updated, err := c.replicas[1].client.CoreV1().ConfigMaps(namespace).Update(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x-0", Labels: map[string]string{"cross": "y"}}, Data: map[string]string{"v": "1"}}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Modified || !ok || cm.ResourceVersion != updated.ResourceVersion {
			t.Errorf("watch through r2 from r0's resourceVersion: got %s %v, want MODIFIED x-0 at %s", ev.Type, ev.Object, updated.ResourceVersion)
		}
	case <-time.After(10 * time.Second):
		t.Error("watch through r2 from r0's resourceVersion: no event within 10s")
	}
}

// checkTokenAcrossReplicas creates a ServiceAccount through the first
// replica, requests a token for it (TokenRequest) through the second, and
// checks that every replica authenticates it as that ServiceAccount.
func (c *cluster) checkTokenAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "cross"}}
	if _, err := c.replicas[0].client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := c.replicas[1].client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest through %s: %v", c.replicas[1].name, err)
	}
	want := "system:serviceaccount:" + namespace + ":" + sa.Name
	for _, r := range c.replicas {
		cfg := rest.AnonymousClientConfig(c.configFor(r))
		cfg.BearerToken = tr.Status.Token
		review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil || review.Status.UserInfo.Username != want {
			t.Errorf("the token issued by %s on %s: %v %v, want %s", c.replicas[1].name, r.name, review, err, want)
		}
	}
}

// controllersLease is the Lease of the controllers that run once.
const controllersLease = "watchcache-controller-manager"

// leaseHolder returns the identity holding the controllers' Lease and the
// replica it is (from the replica's log line announcing it leads).
func (c *cluster) leaseHolder(t *testing.T) (string, *replica) {
	t.Helper()
	lease, err := c.replicas[0].client.CoordinationV1().Leases("kube-system").Get(context.Background(), controllersLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("the controllers' Lease has no holder: %+v", lease.Spec)
	}
	holder := *lease.Spec.HolderIdentity
	for _, r := range c.replicas {
		if log, _ := os.ReadFile(r.logPath); strings.Contains(string(log), "identity="+holder) {
			return holder, r
		}
	}
	t.Fatalf("no replica's log names the Lease's holder %s", holder)
	return "", nil
}

// waitLeaseTakenOver waits until another identity than old holds the
// controllers' Lease.
func (c *cluster) waitLeaseTakenOver(t *testing.T, old string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lease, err := c.replicas[0].client.CoordinationV1().Leases("kube-system").Get(context.Background(), controllersLease, metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && *lease.Spec.HolderIdentity != old {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controllers' Lease is still held by the killed %s after 30s", old)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkControllers checks that the controllers of kube-controller-manager's
// role run on exactly one replica: the Lease names a holder, and a new
// namespace gets its default ServiceAccount.
func (c *cluster) checkControllers(t *testing.T, tag string) {
	ctx := context.Background()
	holder, _ := c.leaseHolder(t)
	name := "ns-" + tag
	if _, err := c.replicas[1].client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.replicas[2].client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default ServiceAccount after 30s (lease held by %s)", name, holder)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
