package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenVolumeName matches the ServiceAccount plugin's projected volume.
var tokenVolumeName = regexp.MustCompile(`kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}`)

// TestServiceAccountAdmission: the ServiceAccount admission plugin as
// kube-apiserver 1.37's (recorded from one with the plugin on, kubectl
// and client-go): the default ServiceAccount and the projected credentials
// in every container and init container that mounts nothing at their
// path, the opt-outs of the pod and of the ServiceAccount, the
// ServiceAccount's imagePullSecrets, the refusal of a missing
// ServiceAccount, and of mirror pods that reference ServiceAccounts or
// Secrets. A pod created right after its namespace waits for the
// namespace controller's default ServiceAccount.
func TestServiceAccountAdmission(t *testing.T) {
	k := newKubectl(t, "sa")
	// Recorded: kubectl create -f of this pod.
	k.must("create", "-f", k.file("p1.yaml", `apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  initContainers: [{name: i, image: busybox}]
  containers: [{name: c, image: busybox}, {name: d, image: busybox, volumeMounts: [{name: x, mountPath: /var/run/secrets/kubernetes.io/serviceaccount}]}]
  volumes: [{name: x, emptyDir: {}}]
`))
	out := k.must("get", "pod", "p1", "-o", "json")
	var p1 struct{ Spec json.RawMessage }
	if err := json.Unmarshal([]byte(out), &p1); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal([]byte(tokenVolumeName.ReplaceAllString(string(p1.Spec), "kube-api-access-XXXXX")), &got)
	var want map[string]any
	json.Unmarshal([]byte(`{"serviceAccountName":"default","serviceAccount":"default","volumes":[{"emptyDir":{},"name":"x"},{"name":"kube-api-access-XXXXX","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"items":[{"key":"ca.crt","path":"ca.crt"}],"name":"kube-root-ca.crt"}},{"downwardAPI":{"items":[{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"},"path":"namespace"}]}}]}}],"c":[[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-XXXXX","readOnly":true}],[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-XXXXX","readOnly":true}],[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"x"}]],"imagePullSecrets":null}`), &want)
	var mounts []any
	for _, kind := range []string{"initContainers", "containers"} {
		for _, c := range got[kind].([]any) {
			mounts = append(mounts, c.(map[string]any)["volumeMounts"])
		}
	}
	got = map[string]any{"serviceAccountName": got["serviceAccountName"], "serviceAccount": got["serviceAccount"],
		"volumes": got["volumes"], "c": mounts, "imagePullSecrets": got["imagePullSecrets"]}
	for _, d := range jsonDiff("spec", want, got) {
		t.Error(d)
	}

	if msg := k.fail("run", "p2", "--image=x", `--overrides={"spec":{"serviceAccountName":"nope"}}`); !strings.Contains(msg,
		`Error from server (Forbidden): pods "p2" is forbidden: error looking up service account `+k.ns+`/nope: serviceaccount "nope" not found`) {
		t.Errorf("a missing ServiceAccount: %s", msg)
	}

	cs := clientset(t, cgConfig(nil))
	ctx := context.Background()
	no := false
	if _, err := cs.CoreV1().ServiceAccounts(k.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "noauto"},
		AutomountServiceAccountToken: &no, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, sa string, automount *bool, pullSecrets ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: automount,
			Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		for _, s := range pullSecrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		return p
	}
	yes := true
	for _, c := range []struct {
		pod         *corev1.Pod
		volume      bool
		pullSecrets string
	}{
		{pod("p3", "", &no), false, ""},
		{pod("p5", "noauto", nil), false, "reg"},
		{pod("p6", "noauto", &yes, "mine"), true, "mine"},
	} {
		created, err := cs.CoreV1().Pods(k.ns).Create(ctx, c.pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var secrets []string
		for _, s := range created.Spec.ImagePullSecrets {
			secrets = append(secrets, s.Name)
		}
		hasVolume := len(created.Spec.Volumes) == 1 && tokenVolumeName.MatchString(created.Spec.Volumes[0].Name)
		if hasVolume != c.volume || (len(created.Spec.Volumes) > 0) != c.volume || strings.Join(secrets, ",") != c.pullSecrets ||
			(created.Spec.ServiceAccountName == "") {
			t.Errorf("%s: serviceAccountName %q, volumes %v, imagePullSecrets %v; want a token volume %v, imagePullSecrets %q",
				c.pod.Name, created.Spec.ServiceAccountName, created.Spec.Volumes, secrets, c.volume, c.pullSecrets)
		}
	}

	mirror := func(name string, spec string) string {
		return k.fail("run", name, "--image=x", "--annotations=kubernetes.io/config.mirror=abc", "--overrides="+spec)
	}
	for name, c := range map[string]struct{ spec, want string }{
		"m2": {`{"spec":{"serviceAccountName":"default"}}`, "a mirror pod may not reference service accounts"},
		"m3": {`{"spec":{"volumes":[{"name":"s","secret":{"secretName":"s"}}]}}`, "a mirror pod may not reference secrets"},
		"m4": {`{"spec":{"containers":[{"name":"m4","image":"x","env":[{"name":"A","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}}`,
			"a mirror pod may not reference secrets"},
		"m5": {`{"spec":{"volumes":[{"name":"s","projected":{"sources":[{"serviceAccountToken":{"path":"t"}}]}}]}}`,
			"a mirror pod may not use ServiceAccountToken volume projections"},
	} {
		if msg := mirror(name, c.spec); !strings.Contains(msg, `Error from server (Forbidden): pods "`+name+`" is forbidden: `+c.want) {
			t.Errorf("%s: %s", name, msg)
		}
	}

	// A namespace's first pod, at once: kube-apiserver waits for the
	// default ServiceAccount (kube-controller-manager makes it).
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sa-fresh-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	if created, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod("first", "", nil), metav1.CreateOptions{}); err != nil || created.Spec.ServiceAccountName != "default" {
		t.Fatalf("a fresh namespace's first pod: %v", err)
	}
	// A generated name is the generateName in the refusal.
	_, err = cs.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "g-"},
		Spec: corev1.PodSpec{ServiceAccountName: "missing", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "g-" is forbidden: error looking up service account `+ns.Name+`/missing: serviceaccount "missing" not found` {
		t.Errorf("a missing ServiceAccount, generated name: %v", err)
	}
}
