package ha

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a child process: an etcd member or a replica. It can be
// killed and started again with the same arguments.
type process struct {
	name, exe, logPath string
	args               []string
	// serving matches the line the process prints once it serves.
	serving *regexp.Regexp
	cmd     *exec.Cmd
	exited  chan struct{}
}

// start runs the process and waits until it prints its serving line.
func (p *process) start(t testing.TB) {
	t.Helper()
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s start %s\n", time.Now().Format(time.TimeOnly), strings.Join(p.args, " "))
	p.cmd = exec.Command(p.exe, p.args...)
	p.cmd.Stderr = logFile
	// Children die with the test's thread if the test is killed.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stdout)
		announced := false
		for lines.Scan() {
			if !announced && p.serving.MatchString(lines.Text()) {
				announced = true
				close(serving)
			}
		}
	}()
	exited := make(chan struct{})
	p.exited = exited
	cmd := p.cmd
	go func() {
		cmd.Wait()
		close(exited)
	}()
	select {
	case <-serving:
	case <-exited:
		t.Fatalf("%s exited before serving; log:\n%s", p.name, p.logTail())
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not serve within 2m; log:\n%s", p.name, p.logTail())
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *process) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// stop ends the process with SIGTERM (a clean shutdown) and waits for it.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// logTail is the end of the process's log, for failure messages.
func (p *process) logTail() string {
	data, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// buildWatchcache builds the command into dir and returns its path.
func buildWatchcache(dir string) (string, error) {
	exe := filepath.Join(dir, "watchcache")
	out, err := exec.Command("go", "build", "-o", exe, "../../cmd/watchcache").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return exe, nil
}

// freePorts returns n loopback ports nobody listens on now.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}
