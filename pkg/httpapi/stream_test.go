package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/conversion"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/limits"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/requestinfo"
	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

var streamSeq atomic.Int64

// streamChunkKeys is the first chunk of the test stores' lists (their
// rest comes from etcd's RangeStream in chunks of 10, 20, 40… keys).
const streamChunkKeys = 4

// hookStore passes a store's lists through, counting the chunks of their
// rest, calling afterFirst once a streamed list's first chunk is read and
// beforeChunk before each chunk of its rest is handed on; with complete
// set, it asks for complete lists instead (what the server answered
// before lists were streamed).
type hookStore struct {
	storage.Interface
	complete    atomic.Bool
	chunks      atomic.Int64
	afterFirst  func()
	beforeChunk func(n int) error
}

func (s *hookStore) GetList(ctx context.Context, scope string, opts storage.ListOptions) (*storage.List, error) {
	if s.complete.Load() {
		opts.Stream = false
	}
	list, err := s.Interface.GetList(ctx, scope, opts)
	if err != nil || list.Rest == nil {
		return list, err
	}
	if s.afterFirst != nil {
		s.afterFirst()
	}
	rest := list.Rest
	list.Rest = func(yield func([]*object.Object) error) error {
		return rest(func(chunk []*object.Object) error {
			n := int(s.chunks.Add(1))
			if s.beforeChunk != nil {
				if err := s.beforeChunk(n); err != nil {
					return err
				}
			}
			return yield(chunk)
		})
	}
	return list, nil
}

// streamServer is a Server over etcd3 stores (no watch cache) holding n
// config maps in namespace ns and n/2 core events (served as
// events.k8s.io/v1 too, through the converting store), behind the
// filters a list passes in the app (request info, request deadline).
type streamServer struct {
	url        string
	configMaps *hookStore
	events     *hookStore
	etcd       *etcd3.Store // the config maps'
}

func newStreamServer(t *testing.T, n int) *streamServer {
	t.Helper()
	reg, err := resource.NewRegistry(resource.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	root := fmt.Sprintf("/server-test/%d", streamSeq.Add(1))
	newStore := func(res *resource.Resource) *etcd3.Store {
		return etcd3.New(etcd3.Config{Client: storagetest.Client(), Prefix: res.EtcdPrefix(root), Schema: res.Schema(),
			Resource: res.String(), ListChunkKeys: streamChunkKeys})
	}
	cms, events, newEvents := reg.Lookup("", "v1", "configmaps"), reg.Lookup("", "v1", "events"), reg.Lookup("events.k8s.io", "v1", "events")
	s := &streamServer{etcd: newStore(cms)}
	s.configMaps = &hookStore{Interface: s.etcd}
	s.events = &hookStore{Interface: newStore(events)}
	reg.SetStore(cms, s.configMaps)
	reg.SetStore(events, s.events)
	reg.SetStore(newEvents, conversion.Store(s.events, conversion.For(newEvents.Group, newEvents.Version, newEvents.Kind)))
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("cm-%04d", i)
		cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"ns","labels":{"even":"%v"}},"data":{"k":"v%d"}}`, name, i%2 == 0, i)
		if _, err := s.etcd.Create(ctx, "ns/"+name, []byte(cm)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			ev := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev-%04d","namespace":"ns"},"involvedObject":{"kind":"ConfigMap","name":%q,"namespace":"ns"},"reason":"Seen","message":"m%d","type":"Normal","count":1}`, i, name, i)
			if _, err := s.events.Create(ctx, fmt.Sprintf("ns/ev-%04d", i), []byte(ev)); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := New(Config{Registry: reg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(requestinfo.WithRequestInfo(limits.WithRequestTimeout(srv, time.Minute)))
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

// get sends a GET with an Accept header; the body is read by the caller.
func (s *streamServer) get(t *testing.T, path, accept string) *http.Response {
	t.Helper()
	return getAccepting(t, s.url+path, accept)
}

// getAccepting sends a GET of url with an Accept header (none if empty);
// the body is read by the caller.
func getAccepting(t *testing.T, url, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// body reads a whole 200 response.
func (s *streamServer) body(t *testing.T, path, accept string) []byte {
	t.Helper()
	resp := s.get(t, path, accept)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %.300s", path, resp.StatusCode, err, data)
	}
	want := encoding.JSONType
	if strings.HasPrefix(accept, encoding.ProtobufType) {
		want = encoding.ProtobufType
	}
	if ct := resp.Header.Get("Content-Type"); ct != want {
		t.Fatalf("GET %s: Content-Type %q, want %q", path, ct, want)
	}
	return data
}

// The media types of the tests: JSON, a Table (kubectl get's Accept), and
// protobuf first, which client-go's typed clients send for built-in kinds.
var streamAccepts = map[string]string{
	"json":     "application/json",
	"table":    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
	"protobuf": "application/vnd.kubernetes.protobuf,application/json",
}

// TestListStreamedIsTheCompleteAnswer: lists of config maps and events
// (core, and events.k8s.io/v1 converted chunk by chunk) too large for one
// chunk are streamed, chunk by chunk, and their bodies are byte for byte
// what the server answers from complete lists, as JSON, as Tables and to
// protobuf clients, with selectors and in a namespace; the JSON holds
// every object once, in order, with the list's resourceVersion.
func TestListStreamedIsTheCompleteAnswer(t *testing.T) {
	const n = 120
	s := newStreamServer(t, n)
	for _, c := range []struct {
		path  string
		store *hookStore
		items int
	}{
		{"/api/v1/configmaps", s.configMaps, n},
		{"/api/v1/namespaces/ns/configmaps", s.configMaps, n},
		{"/api/v1/namespaces/ns/configmaps?labelSelector=even%3Dtrue", s.configMaps, n / 2},
		{"/api/v1/configmaps?fieldSelector=metadata.name!%3Dcm-0007", s.configMaps, n - 1},
		{"/api/v1/events", s.events, n / 2},
		{"/apis/events.k8s.io/v1/namespaces/ns/events", s.events, n / 2},
	} {
		for media, accept := range streamAccepts {
			t.Run(strings.TrimPrefix(c.path, "/")+"/"+media, func(t *testing.T) {
				c.store.complete.Store(false)
				before := c.store.chunks.Load()
				streamed := s.body(t, c.path, accept)
				if chunks := c.store.chunks.Load() - before; chunks < 3 {
					t.Fatalf("the list's rest came in %d chunks", chunks)
				}
				c.store.complete.Store(true)
				defer c.store.complete.Store(false)
				complete := s.body(t, c.path, accept)
				if !bytes.Equal(streamed, complete) {
					t.Fatalf("streamed:\n%.2000s\ncomplete:\n%.2000s", streamed, complete)
				}
				if media == "protobuf" {
					streamed = protobufListAsJSON(t, streamed)
				}
				checkListBody(t, streamed, c.items, media == "table")
			})
		}
	}
}

// protobufListAsJSON is the JSON of a protobuf list's typed value.
func protobufListAsJSON(t *testing.T, data []byte) []byte {
	t.Helper()
	list, _, err := encoding.ProtobufDecoder.Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("the protobuf list does not decode: %v", err)
	}
	out, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkListBody checks a list's JSON (or Table's): items (rows) objects
// in strictly increasing names, and a resourceVersion.
func checkListBody(t *testing.T, data []byte, items int, table bool) {
	t.Helper()
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
		Rows []struct {
			Object struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("%v: %.500s", err, data)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
	}
	for _, r := range list.Rows {
		names = append(names, r.Object.Metadata.Name)
	}
	if table && len(list.Items) > 0 || !table && len(list.Rows) > 0 {
		t.Fatalf("a list with %d items and %d rows", len(list.Items), len(list.Rows))
	}
	if len(names) != items || list.Metadata.ResourceVersion == "" {
		t.Fatalf("%d objects at resourceVersion %q, want %d", len(names), list.Metadata.ResourceVersion, items)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("object %d: %q after %q", i, names[i], names[i-1])
		}
	}
}

// TestListBodyArrivesWhileTheStoreReads: the client receives the
// beginning of a list, objects included, while the store has not read
// the rest yet (it waits for the test): the server writes as it reads.
func TestListBodyArrivesWhileTheStoreReads(t *testing.T) {
	s := newStreamServer(t, 60)
	release := make(chan struct{})
	s.configMaps.beforeChunk = func(n int) error {
		if n == 2 {
			select {
			case <-release:
			case <-time.After(20 * time.Second):
				return errors.New("not released")
			}
		}
		return nil
	}
	resp := s.get(t, "/api/v1/configmaps", "")
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	seen := make(chan []byte)
	go func() {
		// Up to the last object of the first chunk of the rest.
		var got []byte
		for !bytes.Contains(got, []byte(fmt.Sprintf(`"name":"cm-%04d"`, streamChunkKeys+9))) {
			b, err := r.ReadByte()
			if err != nil {
				break
			}
			got = append(got, b)
		}
		seen <- got
	}()
	var head []byte
	select {
	case head = <-seen:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("no object of the list reached the client while the store waited")
	}
	if s.configMaps.chunks.Load() != 2 {
		t.Fatalf("the store handed on %d chunks of the rest, want to be waiting before the second", s.configMaps.chunks.Load())
	}
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	checkListBody(t, append(head, rest...), 60, false)
}

// TestListAbortedWhenCompactedMidStream: when etcd compacts a list's
// revision after the response began, the response is aborted: the client
// got 200 and the list's beginning, and then its read of the body fails,
// so that it cannot take the part for the whole. A protobuf list, whose
// length comes first, has not begun: it is answered 410 Expired.
func TestListAbortedWhenCompactedMidStream(t *testing.T) {
	s := newStreamServer(t, 40)
	ctx := context.Background()
	later := 0
	s.configMaps.afterFirst = func() {
		later++
		name := fmt.Sprintf("later-%d", later)
		obj, err := s.etcd.Create(ctx, "ns/"+name, []byte(`{"metadata":{"name":"`+name+`","namespace":"ns"}}`))
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := storagetest.Client().Compact(ctx, int64(obj.ResourceVersion())); err != nil {
			t.Error(err)
		}
	}
	for media, accept := range streamAccepts {
		resp := s.get(t, "/api/v1/configmaps", accept)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if media == "protobuf" {
			if resp.StatusCode != http.StatusGone || err != nil || resp.Header.Get("Content-Type") != encoding.ProtobufType {
				t.Fatalf("%s: status %d %s, read error %v", media, resp.StatusCode, resp.Header.Get("Content-Type"), err)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || err == nil || !bytes.Contains(data, []byte(`"cm-0000"`)) {
			t.Fatalf("%s: status %d, read error %v after %.300s", media, resp.StatusCode, err, data)
		}
		if json.Valid(data) {
			t.Fatalf("%s: the aborted body parses", media)
		}
	}
	// The aborted lists are counted, with the status they began with.
	resp := s.get(t, "/metrics", "")
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	series := `apiserver_request_total{code="200",group="",resource="configmaps",verb="LIST"} ` + strconv.Itoa(len(streamAccepts)-1)
	if !bytes.Contains(metrics, []byte(series)) {
		t.Errorf("/metrics has no %s", series)
	}
	// A list that is not streamed (served complete) gets the Status.
	s.configMaps.complete.Store(true)
	resp = s.get(t, "/api/v1/configmaps?resourceVersion=2&resourceVersionMatch=Exact", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("a list at a compacted revision: %d", resp.StatusCode)
	}
}
