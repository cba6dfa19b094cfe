package table

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of kube-apiserver's printer tests (TestPrintPod,
// TestPrintPodWithRestartableInitContainer, TestPrintNonTerminatedPod,
// TestPrintPodwide), as pods in JSON.

type obj = map[string]any

var podNow = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) string { return podNow.Add(-d).Format(time.RFC3339) }

func unnamed(n int) []obj { return make([]obj, n) }

func running() obj              { return obj{"running": obj{}} }
func waiting(reason string) obj { return obj{"waiting": obj{"reason": reason}} }
func finishedAgo(d time.Duration) obj {
	return obj{"terminated": obj{"finishedAt": ago(d)}}
}
func terminated(reason string, exitCode int) obj {
	return obj{"terminated": obj{"reason": reason, "exitCode": exitCode}}
}

func sidecars(names ...string) []obj {
	var c []obj
	for _, n := range names {
		c = append(c, obj{"name": n, "restartPolicy": "Always"})
	}
	return c
}

func TestPodSummary(t *testing.T) {
	tests := []struct {
		name string
		pod  obj
		want podRow
	}{
		{"ready containers and restarts", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "podPhase", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running()}, {"restartCount": 3}}}},
			podRow{"1/2", "podPhase", "6"}},
		{"a waiting container's reason", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "podPhase", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running()}, {"state": waiting("ContainerWaitingReason"), "restartCount": 3}}}},
			podRow{"1/2", "ContainerWaitingReason", "6"}},
		{"the first container's reason wins", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "podPhase", "containerStatuses": []obj{
			{"state": waiting("ContainerWaitingReason"), "restartCount": 3}, {"state": terminated("ContainerTerminatedReason", 0), "restartCount": 3}}}},
			podRow{"0/2", "ContainerWaitingReason", "6"}},
		{"ready is not running", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "podPhase", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running()}, {"ready": true, "restartCount": 3}}}},
			podRow{"1/2", "podPhase", "6"}},
		{"the pod's reason", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"reason": "podReason", "phase": "podPhase", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running()}, {"ready": true, "restartCount": 3}}}},
			podRow{"1/2", "podReason", "6"}},
		{"completed and running, not ready", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Running", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": terminated("Completed", 0)}, {"ready": true, "restartCount": 3, "state": running()}}}},
			podRow{"1/2", "NotReady", "6"}},
		{"completed and running, ready", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Running", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": terminated("Completed", 0)}, {"ready": true, "restartCount": 3, "state": running()}},
			"conditions": []obj{{"type": "Ready", "status": "True"}}}},
			podRow{"1/2", "Running", "6"}},
		{"an init container restarting", obj{"spec": obj{"initContainers": unnamed(1), "containers": unnamed(1)}, "status": obj{"phase": "podPhase",
			"initContainerStatuses": []obj{{"restartCount": 3, "state": running(), "lastState": finishedAgo(10 * time.Second)}},
			"containerStatuses":     []obj{{"state": obj{"waiting": obj{}}}}}},
			podRow{"0/1", "Init:0/1", "3 (10s ago)"}},
		{"two init containers, the first restarting", obj{"spec": obj{"initContainers": unnamed(2), "containers": unnamed(1)}, "status": obj{"phase": "podPhase",
			"initContainerStatuses": []obj{{"restartCount": 3, "state": running(), "lastState": finishedAgo(10 * time.Second)}, {"state": obj{"waiting": obj{}}}},
			"containerStatuses":     []obj{{"state": obj{"waiting": obj{}}}}}},
			podRow{"0/1", "Init:0/2", "3 (10s ago)"}},
		{"two init containers, the second restarting", obj{"spec": obj{"initContainers": unnamed(2), "containers": unnamed(1)}, "status": obj{"phase": "podPhase",
			"initContainerStatuses": []obj{{"state": obj{"terminated": obj{}}}, {"restartCount": 3, "state": running(), "lastState": finishedAgo(10 * time.Second)}},
			"containerStatuses":     []obj{{"state": obj{"waiting": obj{}}}}}},
			podRow{"0/1", "Init:1/2", "3 (10s ago)"}},
		{"init restarts add up", obj{"spec": obj{"initContainers": unnamed(2), "containers": unnamed(1)}, "status": obj{"phase": "podPhase",
			"initContainerStatuses": []obj{
				{"restartCount": 2, "state": obj{"terminated": obj{}}, "lastState": finishedAgo(2 * time.Minute)},
				{"restartCount": 3, "state": running(), "lastState": finishedAgo(10 * time.Second)}},
			"containerStatuses": []obj{{"state": obj{"waiting": obj{}}}}}},
			podRow{"0/1", "Init:1/2", "5 (10s ago)"}},
		{"initialized: only the containers' restarts", obj{"spec": obj{"initContainers": unnamed(1), "containers": unnamed(1)}, "status": obj{"phase": "Running",
			"initContainerStatuses": []obj{{"restartCount": 2, "state": obj{"terminated": obj{}}, "lastState": finishedAgo(2 * time.Minute)}},
			"containerStatuses":     []obj{{"restartCount": 4, "state": running(), "lastState": finishedAgo(20 * time.Second)}}}},
			podRow{"0/1", "Running", "4 (20s ago)"}},
		{"restarted 5d ago", obj{"spec": obj{"containers": unnamed(1)}, "status": obj{"phase": "Running", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running(), "lastState": finishedAgo(5 * 24 * time.Hour)}}}},
			podRow{"1/1", "Running", "3 (5d ago)"}},
		{"the last restart of all", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Running", "containerStatuses": []obj{
			{"ready": true, "restartCount": 6, "state": running(), "lastState": finishedAgo(5 * 24 * time.Hour)},
			{"ready": true, "restartCount": 3, "state": running(), "lastState": finishedAgo(20 * 24 * time.Hour)}}}},
			podRow{"2/2", "Running", "9 (5d ago)"}},
		{"scheduling gated", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "podPhase", "conditions": []obj{
			{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}}}},
			podRow{"0/2", "SchedulingGated", "0"}},
		{"succeeded", obj{"spec": obj{"containers": unnamed(1)}, "status": obj{"phase": "Succeeded", "containerStatuses": []obj{{"state": terminated("Completed", 0)}}}},
			podRow{"0/1", "Completed", "0"}},
		{"failed", obj{"spec": obj{"containers": unnamed(1)}, "status": obj{"phase": "Failed", "containerStatuses": []obj{{"state": terminated("Error", 1)}}}},
			podRow{"0/1", "Error", "0"}},
		{"succeeded, deleted", obj{"metadata": obj{"deletionTimestamp": ago(10 * time.Second)}, "spec": obj{"containers": unnamed(1)},
			"status": obj{"phase": "Succeeded", "containerStatuses": []obj{{"state": terminated("Completed", 0)}}}},
			podRow{"0/1", "Completed", "0"}},
		{"running, deleted", obj{"metadata": obj{"deletionTimestamp": ago(10 * time.Second)}, "spec": obj{"containers": unnamed(1)},
			"status": obj{"phase": "Running", "containerStatuses": []obj{{"state": running()}}}},
			podRow{"0/1", "Terminating", "0"}},
		{"pending, deleted", obj{"metadata": obj{"deletionTimestamp": ago(10 * time.Second)}, "spec": obj{"containers": unnamed(1)}, "status": obj{"phase": "Pending"}},
			podRow{"0/1", "Terminating", "0"}},
		{"node lost, deleted", obj{"metadata": obj{"deletionTimestamp": ago(10 * time.Second)}, "spec": obj{"containers": unnamed(1)}, "status": obj{"phase": "Running", "reason": "NodeLost"}},
			podRow{"0/1", "Unknown", "0"}},
		{"crashed and running", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Failed", "containerStatuses": []obj{
			{"state": terminated("podCrash", 1)}, {"ready": true, "state": running()}}}},
			podRow{"1/2", "podCrash", "0"}},
		{"running and crashed", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Failed", "containerStatuses": []obj{
			{"ready": true, "state": running()}, {"state": terminated("podCrash", 1)}}}},
			podRow{"1/2", "podCrash", "0"}},
		{"running, crashed and completed", obj{"spec": obj{"containers": unnamed(3)}, "status": obj{"phase": "Failed", "containerStatuses": []obj{
			{"ready": true, "state": running()}, {"ready": true, "state": terminated("podCrash", 1)}, {"ready": true, "state": obj{"terminated": obj{"exitCode": 0}}}}}},
			podRow{"1/3", "podCrash", "0"}},
		{"not ready: running, crashed and completed", obj{"spec": obj{"containers": unnamed(3)}, "status": obj{"phase": "Failed", "containerStatuses": []obj{
			{"state": running()}, {"state": terminated("podCrash", 1)}, {"state": obj{"terminated": obj{"exitCode": 0}}}}}},
			podRow{"0/3", "podCrash", "0"}},
		{"exit code and signal", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Running", "containerStatuses": []obj{
			{"state": obj{"terminated": obj{"exitCode": 2}}}, {"state": obj{"terminated": obj{"exitCode": 137, "signal": 9}}}}}},
			podRow{"0/2", "ExitCode:2", "0"}},
		{"init container failed", obj{"spec": obj{"initContainers": unnamed(1), "containers": unnamed(1)}, "status": obj{"phase": "Pending",
			"initContainerStatuses": []obj{{"state": obj{"terminated": obj{"exitCode": 1}}}}}},
			podRow{"0/1", "Init:ExitCode:1", "0"}},
		{"init container crash looping", obj{"spec": obj{"initContainers": unnamed(1), "containers": unnamed(1)}, "status": obj{"phase": "Pending",
			"initContainerStatuses": []obj{{"restartCount": 5, "state": waiting("CrashLoopBackOff")}}}},
			podRow{"0/1", "Init:CrashLoopBackOff", "5"}},
		{"container creating", obj{"spec": obj{"containers": unnamed(1)}, "status": obj{"phase": "Pending", "containerStatuses": []obj{{"state": waiting("ContainerCreating")}}}},
			podRow{"0/1", "ContainerCreating", "0"}},
		// Sidecars.
		{"sidecars: the first running, not started", obj{"spec": obj{"initContainers": sidecars("s1", "s2"), "containers": unnamed(1)}, "status": obj{"phase": "Pending",
			"initContainerStatuses": []obj{
				{"name": "s1", "restartCount": 3, "state": running(), "started": false, "lastState": finishedAgo(10 * time.Second)},
				{"name": "s2", "state": obj{"waiting": obj{}}, "started": false}},
			"containerStatuses": []obj{{"state": obj{"waiting": obj{}}}},
			"conditions":        []obj{{"type": "Initialized", "status": "False"}}}},
			podRow{"0/3", "Init:0/2", "3 (10s ago)"}},
		{"sidecars: the first started", obj{"spec": obj{"initContainers": sidecars("s1", "s2"), "containers": unnamed(1)}, "status": obj{"phase": "Pending",
			"initContainerStatuses": []obj{
				{"name": "s1", "restartCount": 3, "state": running(), "started": true, "lastState": finishedAgo(10 * time.Second)},
				{"name": "s2", "state": running(), "started": false}},
			"containerStatuses": []obj{{"state": obj{"waiting": obj{}}}},
			"conditions":        []obj{{"type": "Initialized", "status": "False"}}}},
			podRow{"0/3", "Init:1/2", "3 (10s ago)"}},
		{"sidecars started, container running", obj{"spec": obj{"initContainers": sidecars("s1", "s2"), "containers": unnamed(1)}, "status": obj{"phase": "Running",
			"initContainerStatuses": []obj{
				{"name": "s1", "restartCount": 3, "state": running(), "started": true, "lastState": finishedAgo(10 * time.Second)},
				{"name": "s2", "state": running(), "started": true}},
			"containerStatuses": []obj{{"ready": true, "restartCount": 4, "state": running(), "lastState": finishedAgo(20 * time.Second)}},
			"conditions":        []obj{{"type": "Initialized", "status": "True"}}}},
			podRow{"1/3", "Running", "7 (10s ago)"}},
		{"sidecars failed, container completed", obj{"spec": obj{"initContainers": sidecars("s1", "s2"), "containers": unnamed(1)}, "status": obj{"phase": "Succeeded",
			"initContainerStatuses": []obj{
				{"name": "s1", "restartCount": 3, "state": terminated("Error", 137), "started": false, "lastState": finishedAgo(10 * time.Second)},
				{"name": "s2", "state": terminated("Error", 137), "started": false}},
			"containerStatuses": []obj{{"restartCount": 4, "state": terminated("Completed", 0), "lastState": finishedAgo(20 * time.Second)}},
			"conditions":        []obj{{"type": "Initialized", "status": "True"}}}},
			podRow{"0/3", "Completed", "7 (10s ago)"}},
		{"statuses of containers not in the spec", obj{"spec": obj{
			"initContainers": []obj{{"name": "init1", "image": "initimage"}, {"name": "sidecar1", "image": "sidecarimage", "restartPolicy": "Always"}},
			"containers":     []obj{{"name": "container1", "image": "containerimage"}}}, "status": obj{"phase": "Running",
			"initContainerStatuses": []obj{{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}},
			"containerStatuses":     []obj{{"name": "containerinvalid"}, {"name": "container1"}}}},
			podRow{"0/2", "Init:0/2", "0"}},
		// Phases.
		{"pending", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Pending", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running()}, {"restartCount": 3}}}},
			podRow{"1/2", "Pending", "6"}},
		{"unknown", obj{"spec": obj{"containers": unnamed(2)}, "status": obj{"phase": "Unknown", "containerStatuses": []obj{
			{"ready": true, "restartCount": 3, "state": running()}, {"restartCount": 3}}}},
			podRow{"1/2", "Unknown", "6"}},
		{"new", obj{"metadata": obj{"name": "web"}, "spec": obj{"containers": unnamed(1)}}, podRow{"0/1", "", "0"}},
	}
	for _, test := range tests {
		data, err := json.Marshal(test.pod)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]raw, len(podPaths))
		compile(podPaths).capture(data, v)
		if got := summarizePod(v, podNow); got != test.want {
			t.Errorf("%s: %s:\n got %+v\nwant %+v", test.name, data, got, test.want)
		}
	}
}

func TestPodRow(t *testing.T) {
	gates := []obj{{"conditionType": "condition1"}, {"conditionType": "condition2"}, {"conditionType": "condition3"}}
	conditions := []obj{{"type": "condition1", "status": "False"}, {"type": "condition2", "status": "True"}}
	tests := []struct {
		pod  obj
		want []any
	}{
		{obj{"metadata": obj{"name": "test1", "creationTimestamp": ago(90 * time.Second)},
			"spec": obj{"containers": unnamed(2), "nodeName": "test1", "readinessGates": gates},
			"status": obj{"conditions": conditions, "phase": "podPhase", "podIPs": []obj{{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}}, "nominatedNodeName": "node1",
				"containerStatuses": []obj{{"ready": true, "restartCount": 3, "state": running()}, {"restartCount": 3}}}},
			[]any{"test1", "1/2", "podPhase", "6", "90s", "1.1.1.1", "test1", "node1", "1/3"}},
		{obj{"metadata": obj{"name": "test2"}, "spec": obj{"containers": unnamed(2)},
			"status": obj{"phase": "podPhase", "containerStatuses": []obj{{"ready": true, "restartCount": 3, "state": running()}, {"state": waiting("ContainerWaitingReason"), "restartCount": 3}}}},
			[]any{"test2", "1/2", "ContainerWaitingReason", "6", "<unknown>", "<none>", "<none>", "<none>", "<none>"}},
		{obj{"metadata": obj{"name": "v1ip"}, "spec": obj{"containers": unnamed(1)}, "status": obj{"podIP": "10.0.0.3"}},
			[]any{"v1ip", "0/1", "", "0", "<unknown>", "10.0.0.3", "<none>", "<none>", "<none>"}},
	}
	for _, test := range tests {
		data, _ := json.Marshal(test.pod)
		got := cells(t, "", "pods", string(data), podNow)
		if len(got) != len(test.want) {
			t.Fatalf("%s: got %v, want %v", data, got, test.want)
		}
		for i := range got {
			if got[i] != test.want[i] {
				t.Errorf("%s: cell %d: got %v, want %v", data, i, got[i], test.want[i])
			}
		}
	}
}

// TestTypedObjects prints objects written by k8s.io/api's types, so that
// the JSON names the cells read are those of the API.
func TestTypedObjects(t *testing.T) {
	finished := metav1.NewTime(podNow.Add(-3 * time.Minute))
	always, started := corev1.ContainerRestartPolicyAlways, true
	tests := []struct {
		resource string
		obj      any
		want     []any
	}{
		{"pods", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(podNow.Add(-time.Hour))},
			Spec: corev1.PodSpec{
				NodeName:       "node-1",
				InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always}},
				Containers:     []corev1.Container{{Name: "web"}, {Name: "log"}},
				ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}},
			},
			Status: corev1.PodStatus{
				Phase: corev1.PodRunning, NominatedNodeName: "node-2", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: "example.com/gate", Status: corev1.ConditionTrue}},
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "sidecar", Ready: true, Started: &started, RestartCount: 1,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
				ContainerStatuses: []corev1.ContainerStatus{
					{Name: "web", Ready: true, RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: finished}}},
					{Name: "log", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
				},
			},
		}, []any{"web", "2/3", "CrashLoopBackOff", "3 (3m ago)", "60m", "10.0.0.5", "node-1", "node-2", "1/1"}},
		{"nodes", corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.0", OSImage: "Debian", KernelVersion: "6.1", Architecture: "arm64", ContainerRuntimeVersion: "cri-o://1"},
			},
		}, []any{"n", "NotReady", "worker", "<unknown>", "v1.37.0", "<none>", "1.2.3.4", "Debian", "6.1 (arm64)", "cri-o://1"}},
		{"events", corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "e"},
			InvolvedObject:      corev1.ObjectReference{Kind: "Node", Name: "n", FieldPath: "status"},
			Reason:              "Rebooted",
			Message:             "rebooted",
			Type:                corev1.EventTypeWarning,
			EventTime:           metav1.NewMicroTime(podNow.Add(-time.Minute)),
			Series:              &corev1.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(podNow.Add(-2 * time.Second))},
			ReportingController: "kubelet",
			ReportingInstance:   "n",
		}, []any{"2s", "Warning", "Rebooted", "node/n", "status", "kubelet, n", "rebooted", "60s", 5.0, "e"}},
	}
	for _, test := range tests {
		data, err := json.Marshal(test.obj)
		if err != nil {
			t.Fatal(err)
		}
		if got := cells(t, "", test.resource, string(data), podNow); !reflect.DeepEqual(got, test.want) {
			t.Errorf("%s: %s:\n got %#v\nwant %#v", test.resource, data, got, test.want)
		}
	}
}
