// Loading pods straight into etcd in batches, as the server would store them
// (its defaults added, its keys under /registry), for the large scenarios.

package bench

import (
	"bytes"
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/watchcache/watchcache/pkg/benchdata"
	"github.com/watchcache/watchcache/pkg/resource"
)

// etcdBatch is how many pods one etcd transaction writes when pods are
// written straight into etcd (etcd allows 128 operations per transaction).
const etcdBatch = 100

// defaultEtcdPrefix is the servers' --etcd-prefix, watchcache's default.
const defaultEtcdPrefix = "/registry"

// podsResource is the built-in pods resource, whose etcd keys the direct
// loader writes.
var podsResource = builtinResource("", "pods")

// builtinResource is the built-in resource group/plural.
func builtinResource(group, plural string) *resource.Resource {
	for _, r := range resource.Builtins() {
		if r.Group == group && r.Plural == plural {
			return r
		}
	}
	panic("no built-in resource " + plural + "." + group)
}

// podDefaults are the fields the server adds to benchdata's pods when it
// creates them (its defaulting, as kube-apiserver's), inserted after the
// opening of the field named by the key.
var podDefaults = [][2]string{
	{`"spec":{`, `"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority","priority":0,"securityContext":{},"serviceAccount":"default",` +
		`"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},` +
		`{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],`},
	{`"containers":[{`, `"terminationMessagePolicy":"File",`},
	{`"metadata":{`, `"generation":1,`},
}

// podIdentity returns the namespace and name of a pod of benchdata: the
// first "namespace" and "name" of its JSON, its metadata's.
func podIdentity(pod []byte) (namespace, name string) {
	field := func(key string) string {
		_, rest, _ := bytes.Cut(pod, []byte(`"`+key+`":"`))
		value, _, _ := bytes.Cut(rest, []byte(`"`))
		return string(value)
	}
	return field("namespace"), field("name")
}

// storedPod returns the etcd key and the JSON of benchdata's pod i as the
// server would store it (putPods encodes it) once created and its status written by its kubelet:
// with the server's defaults, but without the managedFields the server
// would add for each writer (about 2.7 KB more), and without owners (see
// withoutOwners).
func storedPod(i, namespaces, nodes int) (key string, value []byte) {
	value = withoutOwners(benchdata.Pod(i, namespaces, nodes))
	ns, name := podIdentity(value)
	for _, d := range podDefaults {
		value = bytes.Replace(value, []byte(d[0]), []byte(d[0]+d[1]), 1)
	}
	return podsResource.EtcdPrefix(defaultEtcdPrefix) + "/" + podsResource.Key(ns, name), value
}

// directLoad is what putPods wrote and how fast.
type directLoad struct {
	pods      int
	jsonBytes int64
	took      time.Duration
}

// rate is pods written per second.
func (d directLoad) rate() float64 { return float64(d.pods) / d.took.Seconds() }

// describe says in words what was written and how fast.
func (d directLoad) describe() string {
	return fmt.Sprintf("%s pods (%s of JSON, %s each) written straight into etcd in %s (%s)", FormatValue(Count, float64(d.pods)),
		FormatValue(Bytes, float64(d.jsonBytes)), FormatValue(Bytes, float64(d.jsonBytes)/float64(max(d.pods, 1))),
		d.took.Round(10*time.Millisecond), FormatValue(PerSecond, d.rate()))
}

// podCodec encodes the pods written straight into etcd as the server
// stores them (protobuf).
var podCodec = podsResource.StorageCodec()

// putPods writes benchdata's pods from to to-1 straight into b.etcd, as
// the server stores them (see storedPod and putStored).
func (b *bench) putPods(ctx context.Context, from, to, namespaces, nodes int) (directLoad, error) {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{b.etcd.url}, DialTimeout: 10 * time.Second, Context: ctx})
	if err != nil {
		return directLoad{}, err
	}
	defer client.Close()
	label := fmt.Sprintf("%s pods into etcd (txns)", FormatValue(Count, float64(to-from)))
	return b.putStored(ctx, client, label, to-from, podCodec, func(i int) (string, []byte) { return storedPod(from+i, namespaces, nodes) })
}

// putStored writes objects 0 to n-1 of stored (etcd key and the JSON the
// server stores) through codec (protobuf, as the server stores them)
// straight into etcd, etcdBatch per transaction, loadWorkers transactions
// at a time. The size it reports is of their JSON.
func (b *bench) putStored(ctx context.Context, client *clientv3.Client, label string, n int, codec *resource.StorageCodec,
	stored func(i int) (key string, value []byte)) (directLoad, error) {
	began := time.Now()
	batches := (n + etcdBatch - 1) / etcdBatch
	_, size, err := b.writeAll(ctx, label, batches, func(ctx context.Context, batch int) (int64, error) {
		var ops []clientv3.Op
		var size int64
		for i := batch * etcdBatch; i < min(n, (batch+1)*etcdBatch); i++ {
			key, value := stored(i)
			encoded, err := codec.Encode(value)
			if err != nil {
				return 0, err
			}
			ops = append(ops, clientv3.OpPut(key, string(encoded)))
			size += int64(len(value))
		}
		_, err := client.Txn(ctx).Then(ops...).Commit()
		return size, err
	})
	return directLoad{pods: n, jsonBytes: size, took: time.Since(began)}, err
}
