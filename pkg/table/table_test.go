package table

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestColumnsAsKubeAPIServer compares every built-in kind's column
// definitions with kube-apiserver 1.37's (testdata/columns.json holds
// the columnDefinitions of its Tables).
func TestColumnsAsKubeAPIServer(t *testing.T) {
	data, err := os.ReadFile("testdata/columns.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(builtins)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, want) {
		t.Errorf("kinds:\n got %v\nwant %v", got, want)
	}
	for key, columns := range want {
		group, resource, _ := strings.Cut(key, "/")
		var got, wantDefs []map[string]any
		if err := json.Unmarshal(For(group, resource).AppendColumns(nil), &got); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := json.Unmarshal(columns, &wantDefs); err != nil || len(wantDefs) == 0 {
			t.Fatalf("%s: %v %s", key, err, columns)
		}
		if !reflect.DeepEqual(got, wantDefs) {
			t.Errorf("%s:\n got %v\nwant %v", key, got, wantDefs)
		}
	}
}

// TestCustomResources checks the columns of resources without a printer:
// Name and Age, as for custom resources without printer columns.
func TestCustomResources(t *testing.T) {
	tb := For("example.com", "widgets")
	var defs []struct{ Name, Type, Format string }
	json.Unmarshal(tb.AppendColumns(nil), &defs)
	if len(defs) != 2 || defs[0].Name != "Name" || defs[0].Format != "name" || defs[1].Name != "Age" || defs[1].Type != "date" {
		t.Errorf("columns: %+v", defs)
	}
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	obj := " \n" + `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w\u00e9","creationTimestamp":"2026-11-01T10:00:00Z"},"spec":{}}`
	if got := string(tb.AppendCells(nil, []byte(obj), now)); got != `["wé","24h"]` {
		t.Errorf("cells: %s", got)
	}
}

// cells are the cells of obj's row in the table of group/resource, with
// ages measured to now.
func cells(t *testing.T, group, resource, obj string, now time.Time) []any {
	t.Helper()
	var cells []any
	data := For(group, resource).AppendCells(nil, []byte(obj), now)
	if err := json.Unmarshal(data, &cells); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return cells
}

// TestRows checks a row of each kind that has more than a value per cell.
func TestRows(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	created := `"creationTimestamp":"2026-11-01T10:00:00Z"`
	tests := []struct {
		group, resource, obj string
		want                 []any
	}{
		{"apps", "deployments", `{"metadata":{"name":"web",` + created + `},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},` +
			`"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1"},{"name":"log","image":"busybox"}]}}},` +
			`"status":{"readyReplicas":2,"updatedReplicas":3,"availableReplicas":2}}`,
			[]any{"web", "2/3", 3.0, 2.0, "24h", "nginx,log", "nginx:1,busybox", "app=web"}},
		{"apps", "deployments", `{"metadata":{"name":"new"},"spec":{"replicas":1}}`,
			[]any{"new", "0/1", 0.0, 0.0, "<unknown>", "", "", ""}},
		{"apps", "replicasets", `{"metadata":{"name":"rs"},"spec":{"replicas":2,"selector":{"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]}]}},"status":{"replicas":2,"readyReplicas":1}}`,
			[]any{"rs", 2.0, 2.0, 1.0, "<unknown>", "", "", "tier in (a,b)"}},
		{"apps", "daemonsets", `{"metadata":{"name":"ds"},"spec":{"template":{"spec":{"nodeSelector":{"os":"linux","arch":"amd64"}}}},"status":{"desiredNumberScheduled":3}}`,
			[]any{"ds", 3.0, 0.0, 0.0, 0.0, 0.0, "arch=amd64,os=linux", "<unknown>", "", "", "<none>"}},
		{"", "configmaps", `{"metadata":{"name":"cm"},"data":{"a":"1","b":"2"},"binaryData":{"c":"Mw=="}}`,
			[]any{"cm", 3.0, "<unknown>"}},
		{"", "secrets", `{"metadata":{"name":"s"},"type":"Opaque","data":{"a":"MQ=="}}`,
			[]any{"s", "Opaque", 1.0, "<unknown>"}},
		{"", "services", `{"metadata":{"name":"lb"},"spec":{"type":"LoadBalancer","clusterIP":"10.0.0.9","ports":[{"port":80,"nodePort":30080,"protocol":"TCP"},{"port":53,"protocol":"UDP"}],"externalIPs":["1.2.3.4"],"selector":{"app.kubernetes.io/name":"x","app":"web"}},"status":{"loadBalancer":{"ingress":[{"ip":"5.6.7.8"},{"hostname":"lb.example.com"}]}}}`,
			[]any{"lb", "LoadBalancer", "10.0.0.9", "5.6.7.8,lb.example.com,1.2.3.4", "80:30080/TCP,53/UDP", "<unknown>", "app=web,app.kubernetes.io/name=x"}},
		{"", "services", `{"metadata":{"name":"pending"},"spec":{"type":"LoadBalancer","clusterIPs":["10.0.0.7"]}}`,
			[]any{"pending", "LoadBalancer", "10.0.0.7", "<pending>", "<none>", "<unknown>", "<none>"}},
		{"", "services", `{"metadata":{"name":"ext"},"spec":{"type":"ExternalName","externalName":"example.com"}}`,
			[]any{"ext", "ExternalName", "<none>", "example.com", "<none>", "<unknown>", "<none>"}},
		{"", "nodes", `{"metadata":{"name":"n1","labels":{"node-role.kubernetes.io/control-plane":"","kubernetes.io/role":"worker","node-role.kubernetes.io/":"x"}},` +
			`"spec":{"unschedulable":true},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}],` +
			`"addresses":[{"type":"InternalIP","address":"10.1.1.1"},{"type":"Hostname","address":"n1"}],` +
			`"nodeInfo":{"kubeletVersion":"v1.37.2","kernelVersion":"6.1.0","architecture":"amd64","containerRuntimeVersion":"containerd://2.0"}}}`,
			[]any{"n1", "Ready,SchedulingDisabled", "control-plane,worker", "<unknown>", "v1.37.2", "10.1.1.1", "<none>", "<unknown>", "6.1.0 (amd64)", "containerd://2.0"}},
		{"", "nodes", `{"metadata":{"name":"n2"},"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`,
			[]any{"n2", "NotReady", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"", "nodes", `{"metadata":{"name":"n3"}}`,
			[]any{"n3", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"", "events", `{"metadata":{"name":"web.1"},"involvedObject":{"kind":"Pod","name":"web","fieldPath":"spec.containers{web}"},"reason":"Pulled","type":"Normal",` +
			`"message":" pulled \n","source":{"component":"kubelet","host":"node-1"},"firstTimestamp":"2026-11-02T09:00:00Z","lastTimestamp":"2026-11-02T09:55:00Z","count":4}`,
			[]any{"5m", "Normal", "Pulled", "pod/web", "spec.containers{web}", "kubelet, node-1", "pulled", "60m", 4.0, "web.1"}},
		{"", "events", `{"metadata":{"name":"e2"},"involvedObject":{"kind":"Node"},"reason":"Started","eventTime":"2026-11-02T09:59:00.000000Z","reportingComponent":"ctrl",` +
			`"series":{"count":7,"lastObservedTime":"2026-11-02T09:59:30.000000Z"}}`,
			[]any{"30s", "", "Started", "node", "", "ctrl", "", "60s", 7.0, "e2"}},
		{"", "endpoints", `{"metadata":{"name":"ep"},"subsets":[{"addresses":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}],"ports":[{"port":80},{"port":443}]}]}`,
			[]any{"ep", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...", "<unknown>"}},
		{"", "endpoints", `{"metadata":{"name":"none"}}`, []any{"none", "<none>", "<unknown>"}},
		{"discovery.k8s.io", "endpointslices", `{"metadata":{"name":"s"},"addressType":"IPv4","ports":[{"port":80},{"name":"dns"},{}],"endpoints":[{"addresses":["10.0.0.1"]}]}`,
			[]any{"s", "IPv4", "80,dns,*", "10.0.0.1", "<unknown>"}},
		{"discovery.k8s.io", "endpointslices", `{"metadata":{"name":"empty"},"addressType":"IPv6"}`,
			[]any{"empty", "IPv6", "<unset>", "<unset>", "<unknown>"}},
		{"batch", "jobs", `{"metadata":{"name":"j"},"spec":{"completions":3},"status":{"succeeded":3,"startTime":"2026-11-02T09:00:00Z","completionTime":"2026-11-02T09:02:00Z","conditions":[{"type":"Complete","status":"True"}]}}`,
			[]any{"j", "Complete", "3/3", "2m", "<unknown>", "", "", "<none>"}},
		{"batch", "jobs", `{"metadata":{"name":"p","deletionTimestamp":"2026-11-02T09:00:00Z"},"spec":{"parallelism":4},"status":{"startTime":"2026-11-02T09:50:00Z"}}`,
			[]any{"p", "Terminating", "0/1 of 4", "10m", "<unknown>", "", "", "<none>"}},
		{"batch", "jobs", `{"metadata":{"name":"q"},"status":{"conditions":[{"type":"Suspended","status":"True"}]}}`,
			[]any{"q", "Suspended", "0/1", "", "<unknown>", "", "", "<none>"}},
		{"batch", "cronjobs", `{"metadata":{"name":"c"},"spec":{"schedule":"*/5 * * * *","suspend":false,"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"x","image":"busybox"}]}}}}},` +
			`"status":{"active":[{"name":"c-1"}],"lastScheduleTime":"2026-11-02T09:55:00Z"}}`,
			[]any{"c", "*/5 * * * *", "<none>", "False", 1.0, "5m", "<unknown>", "x", "busybox", "<none>"}},
		{"", "persistentvolumes", `{"metadata":{"name":"pv","annotations":{"volume.beta.kubernetes.io/storage-class":"slow"}},"spec":{"capacity":{"storage":"1024Mi"},` +
			`"accessModes":["ReadWriteMany","ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","claimRef":{"namespace":"ns","name":"data"},"storageClassName":"fast"},"status":{"phase":"Bound"}}`,
			[]any{"pv", "1Gi", "RWO,RWX", "Retain", "Bound", "ns/data", "slow", "<unset>", "", "<unknown>", "<unset>"}},
		{"", "persistentvolumeclaims", `{"metadata":{"name":"data"},"spec":{"volumeName":"pv","storageClassName":"fast","volumeMode":"Filesystem"},"status":{"phase":"Bound","capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"]}}`,
			[]any{"data", "Bound", "pv", "1Gi", "RWO", "fast", "<unset>", "<unknown>", "Filesystem"}},
		{"", "persistentvolumeclaims", `{"metadata":{"name":"p","deletionTimestamp":"2026-11-02T09:00:00Z"},"status":{"phase":"Pending"}}`,
			[]any{"p", "Terminating", "", "", "", "", "<unset>", "<unknown>", "<unset>"}},
		{"", "resourcequotas", `{"metadata":{"name":"q"},"status":{"hard":{"pods":"10","limits.cpu":"2","requests.memory":"1Gi"},"used":{"pods":"1","limits.cpu":"500m"}}}`,
			[]any{"q", "pods: 1/10, requests.memory: 0/1Gi", "limits.cpu: 500m/2", "<unknown>"}},
		{"", "podtemplates", `{"metadata":{"name":"t"},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}`,
			[]any{"t", "c", "i", "app=a"}},
		{"", "replicationcontrollers", `{"metadata":{"name":"rc"},"spec":{"replicas":2,"selector":{"app":"a"}}}`,
			[]any{"rc", 2.0, 0.0, 0.0, "<unknown>", "", "", "app=a"}},
		{"apps", "controllerrevisions", `{"metadata":{"name":"r","ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"x"},{"apiVersion":"apps/v1","kind":"DaemonSet","name":"ds","controller":true}]},"revision":2}`,
			[]any{"r", "daemonset.apps/ds", 2.0, "<unknown>"}},
		{"policy", "poddisruptionbudgets", `{"metadata":{"name":"b"},"spec":{"minAvailable":"50%"},"status":{"disruptionsAllowed":1}}`,
			[]any{"b", "50%", "N/A", 1.0, "<unknown>"}},
		{"networking.k8s.io", "ingresses", `{"metadata":{"name":"i"},"spec":{"ingressClassName":"nginx","rules":[{"host":"a"},{},{"host":"b"},{"host":"c"},{"host":"d"}],"tls":[{}]},"status":{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"}]}}}`,
			[]any{"i", "nginx", "a,b,c + 2 more...", "1.1.1.1", "80, 443", "<unknown>"}},
		{"networking.k8s.io", "ingressclasses", `{"metadata":{"name":"nginx","annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}},"spec":{"controller":"k8s.io/ingress-nginx","parameters":{"kind":"Config","apiGroup":"example.com","name":"p"}}}`,
			[]any{"nginx (default)", "k8s.io/ingress-nginx", "Config.example.com/p", "<unknown>"}},
		{"networking.k8s.io", "networkpolicies", `{"metadata":{"name":"deny"},"spec":{"podSelector":{}}}`, []any{"deny", "<none>", "<unknown>"}},
		{"scheduling.k8s.io", "priorityclasses", `{"metadata":{"name":"high"},"value":1000,"globalDefault":true}`, []any{"high", 1000.0, true, "<unknown>", ""}},
		{"storage.k8s.io", "storageclasses", `{"metadata":{"name":"std","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"p"}`,
			[]any{"std (default)", "p", "Delete", "Immediate", false, "<unknown>"}},
		{"coordination.k8s.io", "leases", `{"metadata":{"name":"l"},"spec":{"holderIdentity":"me"}}`, []any{"l", "me", "<unknown>"}},
		{"rbac.authorization.k8s.io", "clusterrolebindings", `{"metadata":{"name":"b"},"roleRef":{"kind":"ClusterRole","name":"admin"},` +
			`"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"devs"},{"kind":"ServiceAccount","namespace":"ns","name":"sa"},{"kind":"User","name":"bob"}]}`,
			[]any{"b", "ClusterRole/admin", "<unknown>", "alice, bob", "devs", "ns/sa"}},
		{"rbac.authorization.k8s.io", "roles", `{"metadata":{"name":"r",` + created + `}}`, []any{"r", "2026-11-01T10:00:00Z"}},
		{"", "limitranges", `{"metadata":{"name":"l"}}`, []any{"l", "0001-01-01T00:00:00Z"}},
		{"", "namespaces", `{"metadata":{"name":"ns",` + created + `},"status":{"phase":"Terminating"}}`, []any{"ns", "Terminating", "24h"}},
	}
	for _, test := range tests {
		if got := cells(t, test.group, test.resource, test.obj, now); !reflect.DeepEqual(got, test.want) {
			t.Errorf("%s/%s %s:\n got %#v\nwant %#v", test.group, test.resource, test.obj, got, test.want)
		}
	}
}
