package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// encryptionConfig writes an EncryptionConfiguration of secrets with
// providers (a YAML flow list) and returns its path.
func encryptionConfig(t *testing.T, providers string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers: " + providers + "\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEncryptionAtRest: a secret created through the API is stored with
// the k8s:enc: prefix and read back in plaintext; after a restart with a
// new key first, the old secret and a new one both read, each stored
// under its own key.
func TestEncryptionAtRest(t *testing.T) {
	const (
		key1 = "dGhpcyBpcyBrZXkgb25lLCB0aGlydHktdHdvIGJ5dGU=" // 32 bytes
		key2 = "YW5kIHRoaXMgaXMga2V5IHR3bywgMzIgYnl0ZXMgb2s="
	)
	dir := t.TempDir()
	start := func(config string) (*App, *kubernetes.Clientset) {
		a, err := Start(Config{DataDir: dir, EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
			ConsistentListFromCache: true, ConsistentGetFromCache: true, EncryptionProviderConfig: config, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return a, kubernetes.NewForConfigOrDie(rc)
	}
	ctx := context.Background()
	raw := func(a *App, name string) []byte {
		resp, err := a.client.Get(ctx, "/registry/secrets/default/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw read of %s: %v", name, err)
		}
		return resp.Kvs[0].Value
	}
	create := func(cs *kubernetes.Clientset, name string) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"password": []byte("hunter2-" + name)}}
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(cs *kubernetes.Clientset, name string) {
		s, err := cs.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || string(s.Data["password"]) != "hunter2-"+name {
			t.Errorf("secret %s: %v %v", name, s, err)
		}
	}

	a, cs := start(encryptionConfig(t, "[{aescbc: {keys: [{name: key1, secret: "+key1+"}]}}, {identity: {}}]"))
	create(cs, "old")
	read(cs, "old")
	if v := raw(a, "old"); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) || bytes.Contains(v, []byte("hunter2")) ||
		bytes.Contains(v, []byte("aHVudGVyMi")) {
		t.Errorf("stored secret: %q", v)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := a.client.Get(ctx, "/registry/configmaps/default/plain"); len(resp.Kvs) != 1 || !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s\x00")) {
		t.Errorf("a config map, not listed in the configuration, is not stored in plain protobuf: %v", resp)
	}
	a.Close()

	a, cs = start(encryptionConfig(t, "[{aesgcm: {keys: [{name: key2, secret: "+key2+"}]}}, {aescbc: {keys: [{name: key1, secret: "+key1+"}]}}]"))
	defer a.Close()
	create(cs, "new")
	read(cs, "old")
	read(cs, "new")
	if v := raw(a, "new"); !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key2:")) {
		t.Errorf("new secret stored as %q", v[:24])
	}
	list, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Errorf("list after rotation: %v %v", list, err)
	}
}

// TestEncryptionConfigErrors: a bad configuration refuses the start,
// naming the file and the field.
func TestEncryptionConfigErrors(t *testing.T) {
	path := encryptionConfig(t, "[{aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}}]")
	_, err := Start(Config{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, EncryptionProviderConfig: path, Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "aesgcm.keys[0].secret") {
		t.Errorf("Start with a short key: %v", err)
	}
}
