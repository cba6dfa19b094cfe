package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// sampleProtobufRun is a protobuf scenario's figures at 1,000 pods of
// 2,500 B of JSON: protobuf's LISTs twice as fast and its informer sync
// 3× cheaper, its fan-out p99 slower (a missed target).
func sampleProtobufRun() protobufRun {
	r := protobufRun{pods: 1000, nodes: 50, loaded: directLoad{pods: 1000, jsonBytes: 2500000, took: time.Second},
		baseline: memory{heap: 10e6}, afterJSON: memory{heap: 13e6}, afterBoth: memory{heap: 14.5e6},
		firstProtobufList: 90 * time.Millisecond, kubeletClients: []int{2}, duration: time.Second, watchers: 10, updates: 100, writers: 4,
		byWire: map[string]*encodingFigures{}}
	for _, w := range []struct {
		name            string
		scale, syncCPU  time.Duration
		bytes, p99Event int64
	}{{"protobuf", 1, 40 * time.Millisecond, 1400000, 30}, {"JSON", 2, 120 * time.Millisecond, 2500000, 20}} {
		f := &encodingFigures{listBytes: w.bytes, listServerCPU: 0.004 * float64(w.scale), syncStreamed: true}
		f.listRead.add(10*time.Millisecond*w.scale, nil)
		f.decode.add(20*time.Millisecond*w.scale*w.scale, nil)
		f.decodeCPU.add(20*time.Millisecond*w.scale*w.scale, nil)
		f.syncWall.add(50*time.Millisecond*w.scale, nil)
		f.syncCPU.add(w.syncCPU, nil)
		read, decoded := &outcome{elapsed: time.Second}, &outcome{elapsed: time.Second}
		for range 100 {
			read.add(time.Millisecond, nil)
			decoded.add(2*time.Millisecond*w.scale, nil)
		}
		f.kubeletRead, f.kubeletDecoded = []*outcome{read}, []*outcome{decoded}
		f.fanout = &fanoutSide{eventRate: 1000}
		for range 100 {
			f.fanout.delivery.add(time.Duration(w.p99Event)*time.Millisecond, nil)
		}
		r.byWire[w.name] = f
	}
	return r
}

func TestProtobufTargets(t *testing.T) {
	var got []string
	for _, target := range sampleProtobufRun().targets() {
		got = append(got, target.String())
	}
	want := []string{
		"LIST all from the cache, JSON time ÷ protobuf time ≥ 1.0×: 2.0× (pass)",
		"informer sync, client CPU, JSON ÷ protobuf ≥ 2.0×: 3.0× (pass)",
		"fan-out p99, JSON ÷ protobuf ≥ 1.0×: 0.67× (miss)",
		"Go heap per pod, both encodings kept, ÷ its JSON ≤ 2.0×: 1.8× (pass)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("targets\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestProtobufScenario(t *testing.T) {
	s := protobufScenario(sampleProtobufRun())
	if s.ID != "protobuf" || !slices.Equal(s.Sides, []string{"protobuf", "JSON"}) {
		t.Errorf("id %q, sides %q", s.ID, s.Sides)
	}
	values := map[string][2]float64{}
	var labels []string
	for _, row := range s.Rows {
		labels = append(labels, row.Label)
		for _, m := range row.Metrics {
			values[row.Label+"/"+m.Name] = [2]float64{m.Cache, m.Advantage()}
		}
	}
	wantLabels := []string{"LIST all 1,000 pods, resourceVersion=0", "informer sync, 1,000 pods", "kubelets: 2 clients, read to the end",
		"kubelets: 2 clients, decoded", "fan-out: 10 watchers of all pods", "cache memory per pod", "targets"}
	if !slices.Equal(labels, wantLabels) {
		t.Errorf("rows %q, want %q", labels, wantLabels)
	}
	for key, want := range map[string][2]float64{
		"LIST all 1,000 pods, resourceVersion=0/bytes":                                           {1400000, 2500000.0 / 1400000},
		"LIST all 1,000 pods, resourceVersion=0/client: decode into a PodList, p50":              {0.02, 4},
		"LIST all 1,000 pods, resourceVersion=0/first protobuf LIST (makes every pod's message)": {0.09, 0},
		"informer sync, 1,000 pods/client CPU, p50":                                              {0.04, 3},
		"kubelets: 2 clients, decoded/throughput":                                                {100, 1},
		"cache memory per pod/Go heap per pod":                                                   {4500, 3000.0 / 4500},
		"cache memory per pod/Go heap per pod ÷ its JSON":                                        {1.8, 1.2 / 1.8},
		"targets/fan-out p99, JSON ÷ protobuf (target ≥ 1.0×): miss":                             {2.0 / 3, 0},
		"targets/Go heap per pod, both encodings kept, ÷ its JSON (target ≤ 2.0×): pass":         {1.8, 0},
	} {
		got, ok := values[key]
		// Latencies come back from 1%-wide histogram buckets.
		if !ok || !near(got[0], want[0], 0.01) || !near(got[1], want[1], 0.02) {
			t.Errorf("%s: %v (found %t), want %v", key, got, ok, want)
		}
	}
	for _, want := range []string{"streamed watch with sendInitialEvents", "fan-out p99, JSON ÷ protobuf ≥ 1.0×: 0.67× (miss)", "4 writers make 100 merge patches"} {
		if !strings.Contains(s.Workload, want) {
			t.Errorf("workload lacks %q:\n%s", want, s.Workload)
		}
	}
	var text bytes.Buffer
	if err := WriteScenarioText(&text, s); err != nil || !strings.Contains(text.String(), "protobuf advantage") {
		t.Errorf("%v\n%s", err, text.String())
	}
}

// near says whether got is within a fraction tol of want.
func near(got, want, tol float64) bool {
	if want == 0 {
		return got == 0
	}
	return got >= want*(1-tol) && got <= want*(1+tol)
}

func TestReceiveFrames(t *testing.T) {
	sent := time.Now().Add(-5 * time.Millisecond)
	var stream bytes.Buffer
	for i, annotations := range []map[string]string{
		{"sent": fmt.Sprint(sent.UnixNano()), "other": "x"},
		{"unrelated": "y"}, // not an update of the fan-out: skipped
		{"sent": fmt.Sprint(sent.UnixNano())},
	} {
		pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Annotations: annotations}}
		var object bytes.Buffer
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(pod, &object); err != nil {
			t.Fatal(err)
		}
		event := metav1.WatchEvent{Type: "MODIFIED", Object: kruntime.RawExtension{Raw: object.Bytes()}}
		frame, err := event.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
		stream.Write(frame)
	}
	r := receiveFrames(bytes.NewReader(stream.Bytes()), 5)
	if r.received != 2 || r.latency.ops != 2 || r.latency.failures != 0 {
		t.Fatalf("received %d, %d timed, %d failed (%v)", r.received, r.latency.ops, r.latency.failures, r.latency.firstErr)
	}
	if p := r.latency.latency.percentile(1); p < 5*time.Millisecond || p > time.Minute {
		t.Errorf("latency %s, want about 5 ms", p)
	}
}
