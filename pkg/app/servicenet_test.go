package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestServiceIPsTwoReplicas: two replicas on one etcd, creating NodePort
// Services at once through both, never give one IP or node port twice
// (60 node ports: every one taken); the kubernetes Endpoints
// list both advertised addresses, and one that stops drops out.
func TestServiceIPsTwoReplicas(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	etcd := sharedEtcd(t, dirs[0])
	if err := os.CopyFS(filepath.Join(dirs[1], "pki"), os.DirFS(filepath.Join(dirs[0], "pki"))); err != nil {
		t.Fatal(err)
	}
	var apps []*App
	var clients []*kubernetes.Clientset
	for i, dir := range dirs {
		own := pki.FilesIn(filepath.Join(dir, "pki"))
		a, err := Start(Config{DataDir: dir, EtcdServers: []string{etcd.Endpoint},
			EtcdCAFile: own.CACert, EtcdCertFile: own.EtcdClientCert, EtcdKeyFile: own.EtcdClientKey,
			EtcdPrefix: "/registry", WatchCache: true, ConsistentListFromCache: true, ConsistentGetFromCache: true,
			AdvertiseAddress: fmt.Sprintf("192.0.2.%d", i+10), ServiceClusterIPRange: "10.0.0.0/26", ServiceNodePortRange: "30000-30059",
			Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		rc, _ := adminClient(t, a)
		rc.QPS = -1
		apps, clients = append(apps, a), append(clients, kubernetes.NewForConfigOrDie(rc))
	}
	ctx := context.Background()
	// 10.0.0.0/26: 62 usable, the kubernetes Service's taken: 61 left,
	// 30 Services through each replica at once.
	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	for r, cs := range clients {
		for i := range 30 {
			wg.Go(func() {
				name := fmt.Sprintf("s-%d-%d", r, i)
				s, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
				if err != nil {
					t.Error(name, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if other, ok := owner[s.Spec.ClusterIP]; ok {
					t.Errorf("%s and %s both got %s", name, other, s.Spec.ClusterIP)
				}
				owner[s.Spec.ClusterIP] = name
				np := fmt.Sprint(s.Spec.Ports[0].NodePort)
				if other, ok := owner[np]; ok || np < "30000" || np > "30059" {
					t.Errorf("%s got node port %s (also %q)", name, np, other)
				}
				owner[np] = name
			})
		}
	}
	wg.Wait()
	ips, err := clients[0].NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil || len(ips.Items) != 61 {
		t.Fatalf("IPAddresses: %d, %v", len(ips.Items), err)
	}
	endpoints := func() string {
		ep, err := clients[0].CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) == 0 {
			return ""
		}
		var out string
		for _, a := range ep.Subsets[0].Addresses {
			out += a.IP + " "
		}
		return out
	}
	waitUntil := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for endpoints() != want {
			if time.Now().After(deadline) {
				t.Fatalf("Endpoints %q, want %q", endpoints(), want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitUntil("192.0.2.10 192.0.2.11 ")
	slice, err := clients[0].DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(slice.Endpoints) != 2 || slice.Labels["kubernetes.io/service-name"] != "kubernetes" {
		t.Fatalf("EndpointSlice: %+v %v", slice, err)
	}
	apps[1].Close()
	waitUntil("192.0.2.10 ")
}
