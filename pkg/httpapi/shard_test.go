package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/cacher"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// shardBounds split the hash space in four.
var shardBounds = []string{"0x0000000000000000", "0x4000000000000000", "0x8000000000000000", "0xc000000000000000", "0x10000000000000000"}

// shardSelector is the selector of shard i of four by uid.
func shardSelector(i int) string {
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", shardBounds[i], shardBounds[i+1])
}

// uidShard is the shard of four a uid is in, by the hash's definition.
func uidShard(uid string) int {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return int(h.Sum64() >> 62)
}

// shardServer serves config maps under one etcd prefix: from etcd (the
// cache off) or through a watch cache; its store writes them.
type shardServer struct {
	url   string
	store storage.Interface
}

// newShardServer starts a server of the config maps under root, with the
// given gate, through a watch cache if cached.
func newShardServer(t *testing.T, root string, cached, disable bool) *shardServer {
	t.Helper()
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	cms := reg.Lookup("", "v1", "configmaps")
	var store storage.Interface = etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: cms.EtcdPrefix(root), Schema: cms.Schema(),
		Resource: cms.String(), DisableShardedListAndWatch: disable})
	if cached {
		c := cacher.New(cacher.Config{Store: store, Resource: cms.String(), ConsistentListFromCache: true, DisableShardedListAndWatch: disable})
		t.Cleanup(c.Stop)
		deadline := time.Now().Add(10 * time.Second)
		for !c.Ready() {
			if time.Now().After(deadline) {
				t.Fatal("cache not ready after 10s")
			}
			time.Sleep(time.Millisecond)
		}
		store = c
	}
	reg.SetStore(cms, store)
	srv := New(Config{Registry: reg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DisableShardedListAndWatch: disable})
	ts := httptest.NewServer(requestinfo.WithRequestInfo(srv))
	t.Cleanup(ts.Close)
	return &shardServer{url: ts.URL, store: store}
}

// shardList is the part of a list response these tests read.
type shardList struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"items"`
}

// get sends a GET and returns the status and body.
func (s *shardServer) get(t *testing.T, path, accept string) (int, []byte) {
	t.Helper()
	resp := getAccepting(t, s.url+path, accept)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// list reads a list of config maps in ns with the query, page by page
// when it has a limit, and returns its objects' names by uid and the
// first page's metadata.
func (s *shardServer) list(t *testing.T, query url.Values) (map[string]string, metav1.ListMeta) {
	t.Helper()
	names := map[string]string{}
	var first *metav1.ListMeta
	for {
		code, data := s.get(t, "/api/v1/namespaces/ns/configmaps?"+query.Encode(), "")
		var l shardList
		if code != http.StatusOK || json.Unmarshal(data, &l) != nil {
			t.Fatalf("list %v: %d %.300s", query, code, data)
		}
		if first == nil {
			first = &l.Metadata
		}
		for _, it := range l.Items {
			if _, dup := names[string(it.Metadata.UID)]; dup {
				t.Fatalf("list %v: %s twice", query, it.Metadata.Name)
			}
			names[string(it.Metadata.UID)] = it.Metadata.Name
		}
		if l.Metadata.Continue == "" {
			return names, *first
		}
		query.Set("continue", l.Metadata.Continue)
	}
}

// configMapID is a config map's uid and name.
type configMapID struct{ uid, name string }

// createConfigMaps writes n config maps in ns with random uids, as the
// server would make them, in order.
func createConfigMaps(t *testing.T, store storage.Interface, prefix string, n int) []configMapID {
	t.Helper()
	var out []configMapID
	for i := range n {
		name, uid := fmt.Sprintf("%s-%02d", prefix, i), string(uuid.NewUUID())
		cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"ns","uid":%q},"data":{"v":"0"}}`, name, uid)
		if _, err := store.Create(context.Background(), "ns/"+name, []byte(cm)); err != nil {
			t.Fatal(err)
		}
		out = append(out, configMapID{uid, name})
	}
	return out
}

// TestShardedListOverHTTP: the four shards of the uid space, listed whole
// and in pages of 3 from etcd and from the watch cache, hold the same
// config maps, each where its uid's hash puts it, every config map exactly
// once; the lists carry metadata.shardInfo echoing the selector as sent
// (also in Tables), and lists without a selector do not.
func TestShardedListOverHTTP(t *testing.T) {
	root := fmt.Sprintf("/server-shard-test/%d", streamSeq.Add(1))
	fromEtcd := newShardServer(t, root, false, false)
	fromCache := newShardServer(t, root, true, false)
	all := map[string]string{}
	for _, cm := range createConfigMaps(t, fromEtcd.store, "cm", 40) {
		all[cm.uid] = cm.name
	}

	union := map[string]int{}
	for i := range 4 {
		sel := shardSelector(i)
		var got []map[string]string
		for _, s := range []*shardServer{fromEtcd, fromCache} {
			for _, limit := range []string{"", "3"} {
				q := url.Values{"shardSelector": {sel}}
				if limit != "" {
					q.Set("limit", limit)
				}
				names, meta := s.list(t, q)
				if meta.ShardInfo == nil || meta.ShardInfo.Selector != sel {
					t.Fatalf("shard %d (limit %q): shardInfo %+v, want selector %q", i, limit, meta.ShardInfo, sel)
				}
				if meta.RemainingItemCount != nil {
					t.Fatalf("shard %d (limit %q): remainingItemCount %d", i, limit, *meta.RemainingItemCount)
				}
				got = append(got, names)
			}
		}
		for uid, name := range got[0] {
			if uidShard(uid) != i || all[uid] != name {
				t.Fatalf("shard %d holds %s (uid %s, in shard %d)", i, name, uid, uidShard(uid))
			}
			union[uid]++
		}
		for j := 1; j < len(got); j++ {
			if fmt.Sprint(got[j]) != fmt.Sprint(got[0]) {
				t.Fatalf("shard %d: list %d is %v, list 0 (etcd, whole) %v", i, j, got[j], got[0])
			}
		}
	}
	if len(union) != len(all) {
		t.Fatalf("the shards hold %d config maps, want %d", len(union), len(all))
	}

	// Without a selector: everything, no shardInfo.
	names, meta := fromCache.list(t, url.Values{})
	if len(names) != len(all) || meta.ShardInfo != nil {
		t.Fatalf("unsharded list: %d items, shardInfo %+v", len(names), meta.ShardInfo)
	}
	// The selector echoed as sent, spacing and all.
	sent := "  shardRange( object.metadata.uid, '0x0000000000000000', \"0x8000000000000000\")"
	_, meta = fromCache.list(t, url.Values{"shardSelector": {sent}})
	if meta.ShardInfo == nil || meta.ShardInfo.Selector != sent {
		t.Fatalf("shardInfo %+v, want the selector as sent %q", meta.ShardInfo, sent)
	}
	// A Table (kubectl get) says it too.
	code, data := fromCache.get(t, "/api/v1/namespaces/ns/configmaps?shardSelector="+url.QueryEscape(shardSelector(1)), streamAccepts["table"])
	var table metav1.Table
	if code != http.StatusOK || json.Unmarshal(data, &table) != nil || table.ShardInfo == nil || table.ShardInfo.Selector != shardSelector(1) {
		t.Fatalf("Table: %d %.300s", code, data)
	}
}

// watchLine is one watch event as these tests read it.
type watchLine struct {
	Type   string `json:"type"`
	Object struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"object"`
}

// watchEvents opens a watch and returns its events as they come.
func (s *shardServer) watchEvents(t *testing.T, ctx context.Context, query url.Values) <-chan watchLine {
	t.Helper()
	query.Set("watch", "true")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/v1/namespaces/ns/configmaps?"+query.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("watch %v: %d %s", query, resp.StatusCode, data)
	}
	out := make(chan watchLine, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev watchLine
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				out <- ev
			}
		}
	}()
	return out
}

// TestShardedWatchOverHTTP: a watch on a shard, from etcd or from the
// cache, sees every event of the config maps in its shard, in order, and
// nothing of the others.
func TestShardedWatchOverHTTP(t *testing.T) {
	root := fmt.Sprintf("/server-shard-test/%d", streamSeq.Add(1))
	fromEtcd := newShardServer(t, root, false, false)
	fromCache := newShardServer(t, root, true, false)
	all := createConfigMaps(t, fromEtcd.store, "cm", 24)
	_, meta := fromCache.list(t, url.Values{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type shardWatch struct {
		what   string
		shard  int
		events <-chan watchLine
	}
	var watches []shardWatch
	for i := range 4 {
		for name, s := range map[string]*shardServer{"etcd": fromEtcd, "cache": fromCache} {
			q := url.Values{"shardSelector": {shardSelector(i)}, "resourceVersion": {meta.ResourceVersion}}
			watches = append(watches, shardWatch{fmt.Sprintf("shard %d from %s", i, name), i, s.watchEvents(t, ctx, q)})
		}
	}

	// Writes to every config map: updates, deletions, and new ones.
	type event struct{ typ, name string }
	want := make([][]event, 4)
	n := 0
	for _, cm := range all {
		uid, name := cm.uid, cm.name
		key := "ns/" + name
		if n%3 == 0 {
			if _, err := fromEtcd.store.Delete(ctx, key, nil, nil); err != nil {
				t.Fatal(err)
			}
			want[uidShard(uid)] = append(want[uidShard(uid)], event{"DELETED", name})
		} else {
			_, err := fromEtcd.store.GuaranteedUpdate(ctx, key, nil, func(cur *object.Object) ([]byte, error) {
				return []byte(strings.Replace(string(cur.Stored()), `"v":"0"`, `"v":"1"`, 1)), nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want[uidShard(uid)] = append(want[uidShard(uid)], event{"MODIFIED", name})
		}
		n++
	}
	for _, cm := range createConfigMaps(t, fromEtcd.store, "new", 8) {
		want[uidShard(cm.uid)] = append(want[uidShard(cm.uid)], event{"ADDED", cm.name})
	}
	for i, w := range want {
		if len(w) == 0 {
			t.Fatalf("test setup: no event in shard %d", i)
		}
	}

	for _, w := range watches {
		for k, ev := range want[w.shard] {
			select {
			case got, ok := <-w.events:
				if !ok {
					t.Fatalf("%s: the watch ended after %d events", w.what, k)
				}
				if got.Type != ev.typ || got.Object.Metadata.Name != ev.name || uidShard(string(got.Object.Metadata.UID)) != w.shard {
					t.Fatalf("%s: event %d is %s %s (uid %s), want %s %s", w.what, k, got.Type, got.Object.Metadata.Name, got.Object.Metadata.UID, ev.typ, ev.name)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no event %d (%v) within 10s", w.what, k, ev)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, w := range watches {
		select {
		case got := <-w.events:
			t.Fatalf("%s: unexpected %s %s", w.what, got.Type, got.Object.Metadata.Name)
		default:
		}
	}
}

// TestShardSelectorBadRequest: an invalid shard selector is a 400
// BadRequest saying what is wrong (kube-apiserver's wording), for lists,
// watches and deletecollection alike; with the gate off the parameter is
// ignored, as by a server that does not know it.
func TestShardSelectorBadRequest(t *testing.T) {
	root := fmt.Sprintf("/server-shard-test/%d", streamSeq.Add(1))
	s := newShardServer(t, root, false, false)
	createConfigMaps(t, s.store, "cm", 4)
	for sel, message := range map[string]string{
		"   ": "invalid shard selector: empty shard selector is not allowed; omit the parameter for unfiltered lists",
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')":                 `invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`,
		"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')": `invalid shard selector: unsupported field path "object.metadata.name"; supported: object.metadata.uid, object.metadata.namespace`,
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')":  "invalid shard selector: shard range start 0x8000000000000000 must be less than end 0x0000000000000000",
		shardSelector(0) + " && " + shardSelector(1):                                   `invalid shard selector: unsupported function "_&&_"; only shardRange() and || are allowed`,
		"shardRange(": "invalid shard selector: CEL parse error: ",
	} {
		for _, method := range []string{http.MethodGet + " list", http.MethodGet + " watch", http.MethodDelete} {
			t.Run(method+" "+sel, func(t *testing.T) {
				path := "/api/v1/namespaces/ns/configmaps?shardSelector=" + url.QueryEscape(sel)
				if strings.HasSuffix(method, "watch") {
					path += "&watch=true"
				}
				req, err := http.NewRequest(strings.Fields(method)[0], s.url+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var status metav1.Status
				if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusBadRequest || status.Code != http.StatusBadRequest || status.Reason != metav1.StatusReasonBadRequest || !strings.Contains(status.Message, message) {
					t.Fatalf("%d %+v, want 400 BadRequest saying %q", resp.StatusCode, status, message)
				}
			})
		}
	}
	// Nothing was deleted.
	if names, _ := s.list(t, url.Values{}); len(names) != 4 {
		t.Fatalf("%d config maps left, want 4", len(names))
	}

	off := newShardServer(t, root, false, true)
	for _, sel := range []string{shardSelector(0), "not a selector"} {
		names, meta := off.list(t, url.Values{"shardSelector": {sel}})
		if len(names) != 4 || meta.ShardInfo != nil {
			t.Fatalf("gate off, selector %q: %d config maps and shardInfo %+v, want all 4 and none", sel, len(names), meta.ShardInfo)
		}
	}
}
