// The description of the machine a report comes from, read from /proc.

package bench

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// describeMachine reads what the report says about the computer.
func describeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if mem := procField("/proc/meminfo", "MemTotal"); mem != "" {
		kb, _ := strconv.ParseInt(strings.TrimSuffix(mem, " kB"), 10, 64)
		m.MemoryBytes = kb * 1024
	}
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += " " + strings.TrimSpace(string(release))
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "go.etcd.io/etcd/server/v3" {
				m.Etcd = dep.Version
			}
		}
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file, or "" if there is none.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), ":")
		if ok && strings.TrimSpace(name) == key {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
