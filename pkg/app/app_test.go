package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// debianEtcd is Debian's etcd-server (3.4.23, with the progress
// notification bug of etcd issue 15220); .ci/run installs it.
const debianEtcd = "/usr/bin/etcd"

// startOldEtcd runs Debian's etcd on free loopback ports and returns its
// client URL.
func startOldEtcd(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(debianEtcd); err != nil {
		t.Skipf("%s is not installed (Debian's etcd-server; .ci/run installs it)", debianEtcd)
	}
	client, peer := freeAddr(t), freeAddr(t)
	cmd := exec.Command(debianEtcd, "--data-dir", t.TempDir(), "--name", "old",
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "old=http://"+peer)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "http://" + client
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Status(ctx, url)
		cancel()
		if err == nil {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("Debian's etcd did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer collects log output from concurrent goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSafeguardAgainstOldEtcd: against etcd 3.4.23 the server turns
// consistent reads from the cache off with a warning, or, when they were
// set explicitly, refuses to start with a clear message.
func TestSafeguardAgainstOldEtcd(t *testing.T) {
	url := startOldEtcd(t)
	for _, explicit := range []bool{false, true} {
		t.Run(fmt.Sprintf("explicit=%v", explicit), func(t *testing.T) {
			var logs lockedBuffer
			cfg := Config{
				DataDir: t.TempDir(), EtcdServers: []string{url}, EtcdPrefix: fmt.Sprintf("/safeguard-%v", explicit),
				BindAddress: "127.0.0.1", WatchCache: true,
				ConsistentListFromCache: true, ConsistentGetFromCache: true, ConsistentReadsExplicit: explicit,
				Log: slog.New(slog.NewTextHandler(&logs, nil)),
			}
			a, err := Start(cfg)
			if explicit {
				if err == nil {
					a.Close()
					t.Fatal("the server started with consistent reads from the cache set explicitly on etcd 3.4.23")
				}
				if !strings.Contains(err.Error(), "enabled explicitly") || !strings.Contains(err.Error(), "3.4.23") {
					t.Fatalf("unclear refusal: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if !strings.Contains(logs.String(), "broken progress notifications") || !strings.Contains(logs.String(), "3.4.23") {
				t.Fatalf("no warning about etcd 3.4.23 in the log:\n%s", logs.String())
			}
			for _, c := range a.caches {
				if c.ConsistentReadsFromCache() {
					t.Fatalf("consistent reads from the cache still on")
				}
			}
		})
	}
}
