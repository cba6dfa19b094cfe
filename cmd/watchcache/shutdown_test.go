package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// server is the binary run as a server with args.
func server(t *testing.T, args ...string) *child {
	dir := t.TempDir()
	return &child{args: append([]string{"--data-dir", dir, "--secure-port", strconv.Itoa(freeLoopbackPort(t)), "--etcd-client-port", "0"}, args...),
		serving: "watchcache is serving the Kubernetes API on "}
}

// TestSIGTERM: the binary, stopped with SIGTERM, fails /readyz at once and
// serves on for --shutdown-delay-duration, then logs kube-apiserver's
// lifecycle events in order and exits with status 0 within the delay +
// 10 s. A second signal ends it at once.
func TestSIGTERM(t *testing.T) {
	const delay = 2 * time.Second
	s := server(t, "--shutdown-delay-duration", delay.String(), "--shutdown-send-retry-after")
	startAll(t, s)
	defer s.stop(syscall.SIGKILL)
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.args[1], "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	readyz := func() (string, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return string(body), err
	}
	if body, err := readyz(); err != nil {
		t.Fatalf("/readyz before: %q %v", body, err)
	}
	began := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	for {
		body, err := readyz()
		if err != nil && strings.Contains(body, "[-]shutdown failed: reason withheld") {
			break
		}
		if time.Since(began) > delay/2 {
			t.Fatalf("/readyz after SIGTERM: %q %v", body, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("a request during the delay: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(delay + 10*time.Second):
		t.Fatalf("running %v after SIGTERM\n%s", delay+10*time.Second, s.stderr)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 || time.Since(began) < delay {
		t.Errorf("exit status %d %v after SIGTERM (delay %v)\n%s", code, time.Since(began), delay, s.stderr)
	}
	last := 0
	for _, event := range []string{"ShutdownInitiated", "AfterShutdownDelayDuration", "NotAcceptingNewRequest", "InFlightRequestsDrained",
		"HTTPServerStoppedListening", "graceful termination: done"} {
		i := strings.Index(s.stderr.String(), event)
		if i < last {
			t.Errorf("%s not logged after the events before it\n%s", event, s.stderr)
		}
		last = i
	}

	s = server(t, "--shutdown-delay-duration", "1m")
	startAll(t, s)
	defer s.stop(syscall.SIGKILL)
	s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(500 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not end the process")
	}
	if s.cmd.ProcessState.Success() {
		t.Errorf("exit after a second signal: %v, want the signal's", s.cmd.ProcessState)
	}
}
