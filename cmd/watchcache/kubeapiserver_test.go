package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
)

// envtestArgs are the arguments controller-runtime v0.25.2's envtest
// passes kube-apiserver (recorded from a run with a wrapper script), with
// dir its temporary --cert-dir.
func envtestArgs(dir string) []string {
	return []string{"--allow-privileged=true", "--authorization-mode=RBAC", "--bind-address=127.0.0.1", "--cert-dir=" + dir,
		"--client-ca-file=" + dir + "/client-cert-auth-ca.crt", "--disable-admission-plugins=ServiceAccount",
		"--etcd-servers=http://127.0.0.1:34643", "--secure-port=34117", "--service-account-issuer=https://127.0.0.1:34117/",
		"--service-account-key-file=" + dir + "/sa-signer.crt", "--service-account-signing-key-file=" + dir + "/sa-signer.key",
		"--service-cluster-ip-range=10.0.0.0/24"}
}

func TestActingAs(t *testing.T) {
	for argv0, want := range map[string]string{
		"/tmp/assets/kube-apiserver": "kube-apiserver", "etcd": "etcd", "./watchcache": "watchcache",
		"/usr/bin/kube-apiserver-1.37": "watchcache", "/tmp/go-build1/b001/watchcache.test": "watchcache",
	} {
		if got := actingAs(argv0); got != want {
			t.Errorf("actingAs(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// TestKubeAPIServerFlags: as kube-apiserver, envtest's arguments parse into
// their meaning: the serving certificate of --cert-dir, which also holds
// the generated files; kube-apiserver flags watchcache does not implement
// are accepted (bare booleans too, and values as separate arguments),
// under either name; others are still errors.
func TestKubeAPIServerFlags(t *testing.T) {
	dir := t.TempDir()
	c, err := parseFlagsAs(asKubeAPIServer, envtestArgs(dir))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != dir || c.TLSCertFile != "" || c.ClientCAFile != dir+"/client-cert-auth-ca.crt" || c.SecurePort != 34117 ||
		strings.Join(c.EtcdServers, ",") != "http://127.0.0.1:34643" || c.ServiceClusterIPRange != "10.0.0.0/24" ||
		c.ServiceAccountSigningKeyFile != dir+"/sa-signer.key" || strings.Join(c.ServiceAccountKeyFiles, ",") != dir+"/sa-signer.crt" ||
		strings.Join(c.ServiceAccountIssuers, ",") != "https://127.0.0.1:34117/" || strings.Join(c.AuthorizationModes, ",") != "RBAC" {
		t.Fatalf("envtest's arguments without a serving certificate: %+v", c)
	}
	for _, name := range []string{"apiserver.crt", "apiserver.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if c, err = parseFlagsAs(asKubeAPIServer, envtestArgs(dir)); err != nil || c.TLSCertFile != dir+"/apiserver.crt" || c.TLSPrivateKeyFile != dir+"/apiserver.key" {
		t.Fatalf("--cert-dir's serving certificate: %q %q, %v", c.TLSCertFile, c.TLSPrivateKeyFile, err)
	}
	c, err = parseFlagsAs(asKubeAPIServer, append(envtestArgs(dir), "--tls-cert-file=s.crt", "--tls-private-key-file=s.key", "--data-dir=d"))
	if err != nil || c.TLSCertFile != "s.crt" || c.DataDir != "d" {
		t.Fatalf("--tls-cert-file and --data-dir win over --cert-dir: %+v, %v", c, err)
	}
	if c, err = parseFlagsAs(asKubeAPIServer, nil); err != nil || c.DataDir != "/var/run/kubernetes" {
		t.Fatalf("kube-apiserver's default --cert-dir: %q, %v", c.DataDir, err)
	}
	// Under its own name, --cert-dir has no default and leaves --data-dir.
	if c, err = parseFlags([]string{"--cert-dir=" + dir}); err != nil || c.DataDir != "watchcache-data" || c.TLSCertFile != dir+"/apiserver.crt" {
		t.Fatalf("watchcache --cert-dir: %+v, %v", c, err)
	}
	if c, err = parseFlags(nil); err != nil || c.TLSCertFile != "" {
		t.Fatalf("watchcache without --cert-dir: %q, %v", c.TLSCertFile, err)
	}

	ignored := []string{"--allow-privileged", "--enable-aggregator-routing", "--min-request-timeout", "30",
		"--runtime-config=api/all=true", "--v=4", "--storage-backend", "etcd3", "--secure-port=1"}
	for _, name := range []string{asKubeAPIServer, "watchcache"} {
		c, err := parseFlagsAs(name, ignored)
		if err != nil || c.SecurePort != 1 {
			t.Errorf("%s: ignored kube-apiserver flags: %v (a value taken for an argument?)", name, err)
		}
		for _, bad := range [][]string{{"--port=8080"}, {"--no-such-flag"}, {"--allow-privileged", "extra"}} {
			if _, err := parseFlagsAs(name, bad); err == nil {
				t.Errorf("%s: %v accepted", name, bad)
			}
		}
	}
}

// TestIgnoredFlagWarns: an ignored flag says so, and a flag watchcache
// defines (here --authorization-mode) is its own, not an ignored one.
func TestIgnoredFlagWarns(t *testing.T) {
	var out bytes.Buffer
	var modes string
	fs := flag.NewFlagSet(asKubeAPIServer, flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.StringVar(&modes, "authorization-mode", "", "")
	addKubeAPIServerFlags(fs, &app.Config{})
	if err := fs.Parse([]string{"--allow-privileged", "--authorization-mode=Node,RBAC", "--audit-log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning: --allow-privileged=true is a kube-apiserver flag that watchcache does not implement: ignored\n",
		"warning: --audit-log-format=json is a kube-apiserver flag that watchcache does not implement: ignored\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	if modes != "Node,RBAC" || strings.Contains(out.String(), "authorization-mode") {
		t.Errorf("--authorization-mode: %q, output %q", modes, out.String())
	}
}

// TestHelpAsEnvtestReadsIt: started as kube-apiserver or etcd, --help
// exits 0 and lists the flags as envtest's probe (a line starting with
// --name) finds them: etcd's --unsafe-no-fsync is there, kube-apiserver's
// --insecure-port (gone since 1.24) is not.
func TestHelpAsEnvtestReadsIt(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name          string
		present, gone []string
	}{
		{asKubeAPIServer, []string{"secure-port", "cert-dir", "client-ca-file", "etcd-servers"}, []string{"insecure-port", "allow-privileged"}},
		{asEtcd, []string{"unsafe-no-fsync", "listen-peer-urls", "advertise-client-urls", "data-dir"}, []string{"secure-port"}},
	} {
		link := filepath.Join(dir, c.name)
		if err := os.Symlink(exe, link); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(link, "--help")
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", c.name, err, out)
		}
		for _, name := range c.present {
			if !regexp.MustCompile(`(?m)^\s*--` + name + `\b`).Match(out) {
				t.Errorf("%s --help does not list --%s:\n%s", c.name, name, out)
			}
		}
		for _, name := range c.gone {
			if regexp.MustCompile(`(?m)^\s*--` + name + `\b`).Match(out) {
				t.Errorf("%s --help lists --%s", c.name, name)
			}
		}
	}
}

// TestThrowawayMemberTicks: as etcd, envtest's member (peer URLs, no
// --initial-cluster) gets the short ticks; a member of a cluster, or one
// given its ticks, keeps them.
func TestThrowawayMemberTicks(t *testing.T) {
	for _, c := range []struct {
		args                []string
		heartbeat, election time.Duration
	}{
		{[]string{"--listen-peer-urls=http://127.0.0.1:2380", "--listen-client-urls=http://127.0.0.1:2379", "--unsafe-no-fsync=true"}, 10 * time.Millisecond, 100 * time.Millisecond},
		{[]string{"--name=a", "--initial-cluster=a=http://127.0.0.1:2380"}, 0, 0},
		{[]string{"--listen-peer-urls=http://127.0.0.1:2380", "--heartbeat-interval=50"}, 50 * time.Millisecond, time.Second},
	} {
		cfg, err := parseEtcdFlags(c.args)
		if err != nil {
			t.Fatal(err)
		}
		throwawayMemberTicks(&cfg)
		if cfg.HeartbeatInterval != c.heartbeat || cfg.ElectionTimeout != c.election {
			t.Errorf("%v: ticks %v %v, want %v %v", c.args, cfg.HeartbeatInterval, cfg.ElectionTimeout, c.heartbeat, c.election)
		}
	}
}
