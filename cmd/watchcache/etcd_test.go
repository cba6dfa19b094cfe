package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestParseEtcdFlags(t *testing.T) {
	cfg, err := parseEtcdFlags(nil)
	if err != nil || cfg.ClientPort != 2379 || cfg.Name != "watchcache" || cfg.InitialCluster != "" || cfg.HeartbeatInterval != 0 ||
		cfg.ElectionTimeout != 0 || cfg.InitialClusterState != "new" || cfg.InitialClusterToken != "etcd-cluster" {
		t.Fatalf("defaults (a single member with short ticks): %+v, %v", cfg, err)
	}
	cfg, err = parseEtcdFlags([]string{"--name", "b", "--initial-cluster", "a=http://127.0.0.1:2380,b=http://127.0.0.1:2480",
		"--initial-cluster-state", "existing", "--initial-cluster-token", "t1", "--listen-peer-urls", "http://0.0.0.0:2480",
		"--initial-advertise-peer-urls", "http://127.0.0.1:2480", "--listen-client-urls", "http://127.0.0.1:2479, http://127.0.0.1:2579",
		"--advertise-client-urls", "http://127.0.0.1:2479", "--heartbeat-interval", "20", "--snapshot-count", "500", "--snapshot-catchup-entries", "50"})
	if err != nil || cfg.Name != "b" || cfg.InitialClusterState != "existing" || cfg.InitialClusterToken != "t1" ||
		strings.Join(cfg.ListenPeerURLs, " ") != "http://0.0.0.0:2480" || strings.Join(cfg.AdvertisePeerURLs, " ") != "http://127.0.0.1:2480" ||
		strings.Join(cfg.ListenClientURLs, " ") != "http://127.0.0.1:2479 http://127.0.0.1:2579" || len(cfg.AdvertiseClientURLs) != 1 ||
		cfg.HeartbeatInterval != 20*time.Millisecond || cfg.ElectionTimeout != time.Second || cfg.SnapshotCount != 500 || cfg.SnapshotCatchUpEntries != 50 {
		t.Fatalf("cluster flags: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{
		{"--listen-client-urls", "127.0.0.1:2379"},                      // no scheme
		{"--listen-client-urls", "ftp://127.0.0.1:2379"},                // not http(s)
		{"--listen-client-urls", "http://127.0.0.1:2379/path"},          // a path
		{"--listen-client-urls", "http://127.0.0.1:1,"},                 // an empty URL
		{"--advertise-client-urls", "http://127.0.0.1:2379"},            // without --listen-client-urls
		{"--listen-peer-urls", "http://example.com:2380"},               // binding needs an IP
		{"--initial-cluster", "a=http://127.0.0.1:2380"},                // --name watchcache is not in it
		{"--name", "b", "--initial-cluster", "a=http://127.0.0.1:2380"}, // nor b
		{"--name", "a", "--initial-cluster", "a=http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2381"},
		{"--name", "a", "--initial-cluster", "a=http://127.0.0.1:2380", "--initial-cluster-state", "maybe"},
		{"--initial-cluster-state", "existing"},                                                                  // joining needs --initial-cluster
		{"--name", "a", "--initial-cluster", "a=https://127.0.0.1:2380"},                                         // https without --peer-cert-file
		{"--peer-cert-file", "c.pem"},                                                                            // without --peer-key-file
		{"--peer-trusted-ca-file", "ca.pem"},                                                                     // without --peer-cert-file
		{"--peer-client-cert-auth"},                                                                              // likewise
		{"--key-file", "k.pem"},                                                                                  // without --cert-file
		{"--trusted-ca-file", "ca.pem"},                                                                          // likewise
		{"--listen-peer-urls", "http://127.0.0.1:2380", "--peer-cert-file", "c.pem", "--peer-key-file", "k.pem"}, // http with a certificate
		{"--heartbeat-interval", "0"}, {"--election-timeout", "20"}, {"--heartbeat-interval", "300"},             // election < 5 heartbeats
		{"--snapshot-count", "-1"}, {"extra"},
	} {
		if _, err := parseEtcdFlags(bad); err == nil {
			t.Errorf("parseEtcdFlags(%q) succeeded", bad)
		}
	}
}

// TestEtcdBadFlagsExit: the command exits non-zero naming the flag.
func TestEtcdBadFlagsExit(t *testing.T) {
	cmd := watchcacheCommand(t, "etcd", "--name", "x", "--initial-cluster", "y=http://127.0.0.1:2380", "--data-dir", t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil || cmd.ProcessState.ExitCode() == 0 || !strings.Contains(stderr.String(), `--name "x" is not in --initial-cluster`) {
		t.Fatalf("exit: %v, stderr: %s", err, stderr.String())
	}
}

func watchcacheCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// child is a process of the test binary run as watchcache: a `watchcache
// etcd` member or a server.
type child struct {
	args    []string // watchcache's arguments
	serving string   // the start of the stdout line saying it serves
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	done    chan struct{} // closed once cmd has exited
}

// etcdMember is `watchcache etcd` with args.
func etcdMember(args ...string) *child {
	return &child{args: append([]string{"etcd"}, args...), serving: "etcd is serving on "}
}

// start runs the process and reports on ready once it prints its serving
// line, or has exited before.
func (m *child) start(t *testing.T, ready chan<- error) {
	m.cmd = watchcacheCommand(t, m.args...)
	m.stderr = new(bytes.Buffer)
	m.cmd.Stderr = m.stderr
	stdout, err := m.cmd.StdoutPipe()
	if err == nil {
		err = m.cmd.Start()
	}
	if err != nil {
		ready <- err
		return
	}
	m.done = make(chan struct{})
	go func() {
		serving := false
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			if !serving && strings.HasPrefix(sc.Text(), m.serving) {
				serving = true
				ready <- nil
			}
		}
		err := m.cmd.Wait()
		if !serving {
			ready <- fmt.Errorf("%s exited before serving: %v\n%s", m.args[0], err, m.stderr)
		}
		close(m.done)
	}()
}

// startAll starts the processes at once (a member serves only once a
// quorum does) and waits until each serves.
func startAll(t *testing.T, children ...*child) {
	t.Helper()
	ready := make(chan error, len(children))
	for _, m := range children {
		m.start(t, ready)
	}
	for range children {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("not serving within a minute")
		}
	}
}

// stop ends the process with sig and waits for it.
func (m *child) stop(sig os.Signal) {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Signal(sig)
	<-m.done
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestEtcdClusterSurvivesSIGKILL runs three `watchcache etcd` processes
// forming one cluster with etcd's flags, kills the leader with SIGKILL,
// writes through the other two, and restarts it with the same flags and
// data dir: it rejoins and serves what it missed.
func TestEtcdClusterSurvivesSIGKILL(t *testing.T) {
	var initial, endpoints []string
	members := make([]*child, 3)
	for i := range members {
		peer := fmt.Sprintf("http://127.0.0.1:%d", freeLoopbackPort(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peer))
		endpoints = append(endpoints, fmt.Sprintf("http://127.0.0.1:%d", freeLoopbackPort(t)))
	}
	dir := t.TempDir()
	for i := range members {
		members[i] = etcdMember("--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprint(i)),
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "sigkill",
			"--listen-client-urls", endpoints[i], "--etcd-client-port", "1", // --listen-client-urls wins
			"--heartbeat-interval", "20", "--election-timeout", "200", "--unsafe-no-fsync")
	}
	startAll(t, members...)
	t.Cleanup(func() {
		// SIGKILL: members stopped at once with SIGTERM each wait seconds
		// for the others (leadership transfer, peer streams).
		for _, m := range members {
			m.stop(syscall.SIGKILL)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func(i int) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints[i : i+1], DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c0 := client(0)
	list, err := c0.MemberList(ctx)
	if err != nil || len(list.Members) != 3 {
		t.Fatalf("member list: %v, %v", list, err)
	}
	status, err := c0.Status(ctx, endpoints[0])
	if err != nil {
		t.Fatal(err)
	}
	leader := -1
	for _, m := range list.Members {
		for i, e := range endpoints {
			if m.ID == status.Leader && len(m.ClientURLs) == 1 && m.ClientURLs[0] == e {
				leader = i
			}
		}
	}
	if leader < 0 {
		t.Fatalf("no leader in %v", list.Members)
	}

	members[leader].stop(syscall.SIGKILL)
	a, b := client((leader+1)%3), client((leader+2)%3)
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
		_, err := a.Put(attempt, "/after-kill", "v")
		cancelAttempt()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("put with the leader killed: %v", err)
		}
	}
	if got, err := b.Get(ctx, "/after-kill"); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("linearizable read through the other member: %v, %v", got, err)
	}

	startAll(t, members[leader])
	if got, err := client(leader).Get(ctx, "/after-kill"); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("linearizable read through the restarted member: %v, %v", got, err)
	}
	// SIGTERM stops a member gracefully, with exit status 0.
	members[leader].stop(syscall.SIGTERM)
	if code := members[leader].cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, members[leader].stderr)
	}
}
