package etcd3_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/encryption"
	"github.com/watchcache/watchcache/pkg/storage"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	"github.com/watchcache/watchcache/pkg/storage/storagetest"
)

// Keys of the encryption tests (base64 of 32 bytes).
const (
	key1 = "dGhpcyBpcyBrZXkgb25lLCB0aGlydHktdHdvIGJ5dGU="
	key2 = "YW5kIHRoaXMgaXMga2V5IHR3bywgMzIgYnl0ZXMgb2s="
)

// transformer loads an EncryptionConfiguration covering pods with
// providers (YAML list items).
func transformer(t *testing.T, providers string) etcd3.Transformer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [pods]\n  providers:\n" + providers
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := encryption.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.For("", "pods")
}

// TestConformanceEncrypted: the whole storage contract holds with values
// encrypted in etcd (aesgcm; identity reads the suite's raw puts).
func TestConformanceEncrypted(t *testing.T) {
	tr := transformer(t, "  - aesgcm: {keys: [{name: key1, secret: "+key1+"}]}\n  - identity: {}\n")
	storagetest.Run(t, func(t *testing.T, cfg etcd3.Config) storage.Interface {
		cfg.Transformer = tr
		return etcd3.New(cfg)
	})
}

func TestEncryptedAtRest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := storagetest.Client()
	prefix := "/encryption-test/pods"
	newStore := func(providers string) *etcd3.Store {
		return etcd3.New(etcd3.Config{Client: c, Prefix: prefix, Schema: storagetest.PodSchema,
			Transformer: transformer(t, providers)})
	}
	first := newStore("  - aescbc: {keys: [{name: key1, secret: " + key1 + "}]}\n")
	pod := func(name string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"nodeName":"plaintext-marker"}}`)
	}
	w, err := first.Watch(ctx, "ns/", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := first.Create(ctx, "ns/old", pod("old")); err != nil {
		t.Fatal(err)
	}
	raw, err := c.Get(ctx, prefix+"/ns/old")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatal(err)
	}
	if v := raw.Kvs[0].Value; !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) || bytes.Contains(v, []byte("plaintext-marker")) {
		t.Errorf("stored value: %q", v)
	}
	if got, err := first.Get(ctx, "ns/old", storage.GetOptions{}); err != nil || !strings.Contains(string(got.JSON()), "plaintext-marker") {
		t.Errorf("Get: %v %v", got, err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Object == nil || !strings.Contains(string(ev.Object.JSON()), "plaintext-marker") {
			t.Errorf("watch event: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}

	// Rotation: a new key first, the old one still listed.
	rotated := newStore("  - secretbox: {keys: [{name: key2, secret: " + key2 + "}]}\n  - aescbc: {keys: [{name: key1, secret: " + key1 + "}]}\n")
	if _, err := rotated.Create(ctx, "ns/new", pod("new")); err != nil {
		t.Fatal(err)
	}
	list, err := rotated.GetList(ctx, "ns/", storage.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list after rotation: %v %v", list, err)
	}
	raw, _ = c.Get(ctx, prefix+"/ns/new")
	if !bytes.HasPrefix(raw.Kvs[0].Value, []byte("k8s:enc:secretbox:v1:key2:")) {
		t.Errorf("new value: %q", raw.Kvs[0].Value[:30])
	}
	// The old store, without the new key, cannot read the new value: an
	// internal error, never ciphertext served as an object.
	if _, err := first.Get(ctx, "ns/new", storage.GetOptions{}); storage.CodeOf(err) != storage.ErrInternal {
		t.Errorf("reading a value of an unlisted key: %v", err)
	}

	// aesgcm binds a value to its key: moved elsewhere it does not read.
	gcm := newStore("  - aesgcm: {keys: [{name: key1, secret: " + key1 + "}]}\n")
	if _, err := gcm.Create(ctx, "ns/bound", pod("bound")); err != nil {
		t.Fatal(err)
	}
	raw, _ = c.Get(ctx, prefix+"/ns/bound")
	if _, err := c.Put(ctx, prefix+"/ns/moved", string(raw.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	if _, err := gcm.Get(ctx, "ns/moved", storage.GetOptions{}); storage.CodeOf(err) != storage.ErrInternal {
		t.Errorf("a value moved to another key: %v", err)
	}
}
