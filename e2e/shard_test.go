package e2e

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// shardOfUID is the shard of four a uid's FNV-1a hash is in (KEP-5866).
func shardOfUID(uid string) int {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return int(h.Sum64() >> 62)
}

// shardOfFour is the shard selector of shard i of four, by uid.
func shardOfFour(i int) string {
	bounds := []string{"0x0000000000000000", "0x4000000000000000", "0x8000000000000000", "0xc000000000000000", "0x10000000000000000"}
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", bounds[i], bounds[i+1])
}

// TestClientGoShardedInformers: four replicas of a controller, each with
// an informer whose list options carry its shard's selector (KEP-5866's
// use, informers.WithTweakListOptions), hold the config maps of their
// shard and only those, through creations, updates and deletions; the
// four hold every config map once. A list says it is sharded
// (ListMeta.ShardInfo); a bad selector is a 400.
func TestClientGoShardedInformers(t *testing.T) {
	t.Parallel()
	ctx := cgContext(t)
	ns := cgNamespace(t, cgDynamic(t), "shards")
	cs, err := kubernetes.NewForConfig(cgConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	for i := range 30 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	list, err := cms.List(ctx, metav1.ListOptions{ShardSelector: shardOfFour(2)})
	if err != nil {
		t.Fatal(err)
	}
	if list.ShardInfo == nil || list.ShardInfo.Selector != shardOfFour(2) {
		t.Fatalf("a sharded list's ShardInfo is %+v", list.ShardInfo)
	}
	for _, cm := range list.Items {
		if shardOfUID(string(cm.UID)) != 2 {
			t.Fatalf("shard 2's list holds %s, of shard %d", cm.Name, shardOfUID(string(cm.UID)))
		}
	}
	_, err = cms.List(ctx, metav1.ListOptions{ShardSelector: "shardRange(object.metadata.uid, '0x0', '0x8')"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value") {
		t.Fatalf("a bad selector: %v, want 400 BadRequest", err)
	}

	stores := make([]cache.Store, 4)
	stop := make(chan struct{})
	for i := range 4 {
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.ShardSelector = shardOfFour(i) }))
		inf := f.Core().V1().ConfigMaps().Informer()
		stores[i] = inf.GetStore()
		f.Start(stop)
		t.Cleanup(f.Shutdown) // after the close below: cleanups run last first
	}
	t.Cleanup(func() { close(stop) })
	// holdsTheirShards reports whether each informer holds exactly its
	// shard of the config maps now in the namespace, as they are now.
	holdsTheirShards := func() bool {
		all, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]string, 4)
		for _, cm := range all.Items {
			s := shardOfUID(string(cm.UID))
			want[s] = append(want[s], cm.Name+"@"+cm.ResourceVersion)
		}
		for i, store := range stores {
			var got []string
			for _, o := range store.List() {
				cm := o.(*corev1.ConfigMap)
				got = append(got, cm.Name+"@"+cm.ResourceVersion)
			}
			sort.Strings(got)
			sort.Strings(want[i])
			if strings.Join(got, ",") != strings.Join(want[i], ",") {
				return false
			}
		}
		return true
	}
	waitFor(t, "each informer to hold its shard", holdsTheirShards)
	for i, store := range stores {
		if len(store.List()) == 0 {
			t.Fatalf("test setup: shard %d is empty", i)
		}
	}

	// Updates, deletions and creations: each informer follows its shard.
	for i := range 30 {
		name := fmt.Sprintf("cm-%02d", i)
		switch i % 3 {
		case 0:
			err = cms.Delete(ctx, name, metav1.DeleteOptions{})
		case 1:
			_, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.UpdateOptions{})
		default:
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-new"}}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "each informer to follow its shard", holdsTheirShards)
	// And they stay so (no stray event arrives later).
	time.Sleep(200 * time.Millisecond)
	if !holdsTheirShards() {
		t.Fatal("an informer left its shard")
	}
}
