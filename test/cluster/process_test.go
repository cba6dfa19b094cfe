package cluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a child process whose output goes to dir/name.log; it is
// killed when the test ends (or with the test binary, by Pdeathsig).
type process struct {
	name, logPath string
	cmd           *exec.Cmd
	exited        chan struct{}
}

// startProcess starts exe with args, its output in dir/name.log.
func startProcess(t testing.TB, dir, name, exe string, args ...string) *process {
	t.Helper()
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	check(t, err)
	fmt.Fprintf(logFile, "=== %s %s\n", exe, strings.Join(args, " "))
	p.cmd = exec.Command(exe, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	check(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log: %s", name, p.logPath)
		}
	})
	return p
}

// stop kills the process (as a kubelet or a machine dies) and waits for it.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// freePort is a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
