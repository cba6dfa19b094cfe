// The benchmark's child processes (etcd, the two servers): start, wait for
// serving, failure with the log's end, CPU and RSS from /proc, pause, stop.

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a child process of the benchmark: the etcd or one of the two
// API servers. Each runs in its own process so that its CPU time and
// resident memory can be read from the OS on their own.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// url is what the process serves, read from the first line it prints.
	url string
	// started is when the process was started; ready is when url was known.
	started time.Time
	exited  chan struct{}
	waitErr error
	// attached says the benchmark did not start the process (see
	// attachProcess); exited is then nil.
	attached bool
}

// startProcess runs exe with args, logging its stderr to dir/name.log, and
// waits until it prints a line matching serving, whose first group is the
// URL it serves.
func startProcess(ctx context.Context, dir, name, exe string, env, args []string, serving *regexp.Regexp) (*process, error) {
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = logFile
	// If the benchmark dies without stopping its children (SIGKILL, a
	// crash), the kernel ends them too, rather than leaving an etcd and two
	// servers running. (It fires when the thread that started the child
	// exits; the Go runtime does not end threads that are not locked.)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	urls := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := serving.FindStringSubmatch(lines.Text()); m != nil {
				urls <- m[1]
				break
			}
		}
		for lines.Scan() { // keep draining so the child never blocks on stdout
		}
	}()
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.url = <-urls:
		return p, nil
	case <-p.exited:
		return nil, p.failure("exited before serving")
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	case <-time.After(2 * time.Minute):
		p.stop()
		return nil, p.failure("did not start serving within 2 minutes")
	}
}

// attachProcess is the running process pid, which the benchmark did not
// start (an external server of the writepath scenario): its CPU time and
// memory are read as a child's are, but it is never paused or stopped, and
// alive reports whether it still exists.
func attachProcess(name string, pid int) (*process, error) {
	if err := syscall.Kill(pid, 0); err != nil {
		return nil, fmt.Errorf("%s: process %d: %w", name, pid, err)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return nil, err
	}
	return &process{name: name, cmd: &exec.Cmd{Process: proc}, attached: true}, nil
}

// failure describes how the process failed, with the end of its log.
func (p *process) failure(what string) error {
	log, _ := os.ReadFile(p.logPath)
	if len(log) > 2000 {
		log = log[len(log)-2000:]
	}
	return fmt.Errorf("%s %s (%v); end of %s:\n%s", p.name, what, p.waitErr, p.logPath, log)
}

// alive returns an error if the process has exited.
func (p *process) alive() error {
	if p.attached {
		if err := syscall.Kill(p.cmd.Process.Pid, 0); err != nil {
			return fmt.Errorf("%s (process %d) has exited: %w", p.name, p.cmd.Process.Pid, err)
		}
		return nil
	}
	select {
	case <-p.exited:
		return p.failure("exited")
	default:
		return nil
	}
}

// cpuTicksPerSecond is Linux's USER_HZ, the unit of /proc/<pid>/stat's
// times; it is 100 on every architecture Linux supports today.
const cpuTicksPerSecond = 100

// cpuSeconds returns the processor time the process has used so far, user
// and system, from /proc/<pid>/stat.
func (p *process) cpuSeconds() (float64, error) {
	return cpuSecondsOf(p.cmd.Process.Pid, p.name)
}

// cpuSecondsOf returns the processor time process pid (named name in
// errors) has used so far, user and system, from /proc/<pid>/stat.
func cpuSecondsOf(pid int, name string) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it are
	// space-separated: state is field 3, utime 14, stime 15.
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("%s: unexpected /proc stat %q", name, stat)
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(utime+stime) / cpuTicksPerSecond, nil
}

// residentSet is a process's resident memory: the whole (VmRSS), the
// anonymous part (Go's heap and stacks: RssAnon) and the file-backed part
// (the binary, and etcd's bbolt database, which etcd maps into memory:
// RssFile), as /proc/<pid>/status reports them.
type residentSet struct{ total, anon, file int64 }

// residentSet reads p's resident set from /proc/<pid>/status.
func (p *process) residentSet() (residentSet, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return residentSet{}, err
	}
	var r residentSet
	fields := map[string]*int64{"VmRSS:": &r.total, "RssAnon:": &r.anon, "RssFile:": &r.file}
	for _, line := range strings.Split(string(status), "\n") {
		for prefix, dst := range fields {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return r, fmt.Errorf("%s: /proc status: %s %w", p.name, prefix, err)
				}
				*dst = kb * 1024
				delete(fields, prefix)
			}
		}
	}
	if len(fields) > 0 {
		return r, fmt.Errorf("%s: no VmRSS, RssAnon or RssFile in /proc status", p.name)
	}
	return r, nil
}

// pause stops the process (SIGSTOP) so that it uses no processor time while
// the other server is measured; resume continues it.
func (p *process) pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *process) resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// stop asks the process to shut down (SIGTERM) and kills it if it has not
// within 30 seconds.
func (p *process) stop() {
	if p.attached {
		return // not the benchmark's to stop
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}
