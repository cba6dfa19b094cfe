package main

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/controller"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.WatchCache || !c.ConsistentListFromCache || !c.ConsistentGetFromCache || c.ConsistentReadsExplicit ||
		c.WaitWhileInitializing || c.ConsistentReadFallback || c.DisableShardedListAndWatch || c.SecurePort != 6443 || c.BindAddress != "127.0.0.1" || c.StorageInitializationTimeout != time.Minute ||
		c.RequestTimeout != time.Minute || c.EventTTL != time.Hour || c.MaxRequestsInflight != 400 || c.MaxMutatingRequestsInflight != 200 ||
		c.ShutdownDelay != 0 || c.ShutdownSendRetryAfter || c.ShutdownWatchTerminationGracePeriod != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = parseFlags([]string{"--feature-gates=ConsistentGetFromCache=false,ResilientWatchCacheInitialization=false",
		"--consistent-read-fallback=etcd", "--watch-cache-sizes=pods#0,widgets.example.com#100"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.ConsistentListFromCache || c.ConsistentGetFromCache || !c.ConsistentReadsExplicit || !c.WaitWhileInitializing ||
		!c.ConsistentReadFallback || c.WatchCacheSizes["pods"] != 0 || c.WatchCacheSizes["widgets.example.com"] != 100 {
		t.Fatalf("parsed: %+v", c)
	}
	c, err = parseFlags([]string{"--max-requests-inflight=3", "--max-mutating-requests-inflight=0", "--request-timeout=5s"})
	if err != nil || c.MaxRequestsInflight != 3 || c.MaxMutatingRequestsInflight != 0 || c.RequestTimeout != 5*time.Second {
		t.Fatalf("limits: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--shutdown-delay-duration=5s", "--shutdown-send-retry-after", "--shutdown-watch-termination-grace-period=3s"})
	if err != nil || c.ShutdownDelay != 5*time.Second || !c.ShutdownSendRetryAfter || c.ShutdownWatchTerminationGracePeriod != 3*time.Second {
		t.Fatalf("shutdown flags: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--tls-san=a.example.com, 10.0.0.1", "--tls-san", "b.example.com"})
	if err != nil || strings.Join(c.TLSSANs, " ") != "a.example.com 10.0.0.1 b.example.com" {
		t.Fatalf("--tls-san: %q, %v", c.TLSSANs, err)
	}
	c, err = parseFlags([]string{"--feature-gates=ResilientWatchCacheInitialization=true,ShardedListAndWatch=false"})
	if err != nil || c.ConsistentReadsExplicit || !c.DisableShardedListAndWatch {
		t.Fatalf("the resilience and sharding gates are not an explicit consistent-read setting; sharding off: %+v, %v", c, err)
	}
	c, err = parseFlags(nil)
	if err != nil || c.AuditPolicyFile != "" || c.AuditWebhook.Mode != "batch" || c.AuditWebhook.BatchMaxSize != 400 ||
		c.AuditWebhook.BatchMaxWait != 30*time.Second || c.AuditWebhook.BatchBufferSize != 10000 || c.AuditWebhook.InitialBackoff != 10*time.Second {
		t.Fatalf("audit defaults (kube-apiserver's): %+v, %v", c.AuditWebhook, err)
	}
	c, err = parseFlags([]string{"--audit-policy-file=p.yaml", "--audit-webhook-config-file=w.kubeconfig", "--audit-webhook-mode=blocking",
		"--audit-webhook-batch-max-size=10", "--audit-webhook-batch-max-wait=5s"})
	if err != nil || c.AuditPolicyFile != "p.yaml" || c.AuditWebhook.ConfigFile != "w.kubeconfig" || c.AuditWebhook.Mode != "blocking" ||
		c.AuditWebhook.BatchMaxSize != 10 || c.AuditWebhook.BatchMaxWait != 5*time.Second {
		t.Fatalf("audit flags: %+v, %v", c.AuditWebhook, err)
	}
	for _, bad := range [][]string{
		{"--feature-gates=Bogus=true"}, {"--feature-gates=ConsistentGetFromCache=maybe"},
		{"--consistent-read-fallback=sometimes"}, {"--watch-cache-sizes=pods"}, {"--watch-cache-sizes=pods#-1"},
		{"--etcd-prefix=registry"}, {"--event-ttl=-1s"}, {"--etcd-certfile=x"}, {"--tls-cert-file=x"}, {"--port=8080"}, {"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%v) succeeded", bad)
		}
	}
}

func TestParseBenchFlags(t *testing.T) {
	cfg, out, err := parseBenchFlags(nil)
	if err != nil || out != "" || len(cfg.ListSizes) != 5 || cfg.MaxListBytes != 250e6 || cfg.Pods != 50000 || cfg.Watchers != 1000 {
		t.Fatalf("defaults: %+v, %q, %v", cfg, out, err)
	}
	cfg, out, err = parseBenchFlags([]string{"--large", "--out", "docs/bench", "--object-sizes", "1000, 2000"})
	if err != nil || out != "docs/bench" || cfg.ListSizes[len(cfg.ListSizes)-1] != 100000 || cfg.MaxListBytes != 600e6 ||
		len(cfg.ObjectSizes) != 2 || cfg.ObjectSizes[1] != 2000 {
		t.Fatalf("--large: %+v, %q, %v", cfg, out, err)
	}
	if cfg, _, err = parseBenchFlags([]string{"--large", "--max-list-bytes", "1000"}); err != nil || cfg.MaxListBytes != 1000 {
		t.Fatalf("--max-list-bytes given with --large: %d, %v", cfg.MaxListBytes, err)
	}
	for _, bad := range [][]string{
		{"--list-sizes", "10,x"}, {"--object-sizes", "0"}, {"--pods", "0"}, {"--watchers", "-1"},
		{"--nodes", "100", "--pods", "10"}, {"--nothing-rate", "0"}, {"extra"},
		{"--writepath-server", "kubeconfig"}, {"--writepath-pids", "1"}, {"--writepath-server", "kubeconfig", "--writepath-pids", "1,2,3"},
	} {
		if _, _, err := parseBenchFlags(bad); err == nil {
			t.Errorf("parseBenchFlags(%v) succeeded", bad)
		}
	}
}

// TestWithPortHint: a start that found a port taken names the flag that
// moves it; other errors are left as they are.
func TestWithPortHint(t *testing.T) {
	cfg := app.Config{SecurePort: 6443, EtcdClientPort: 2379}
	for _, c := range []struct {
		err  error
		want string // "": unchanged
	}{
		{fmt.Errorf("listen tcp 127.0.0.1:6443: %w", syscall.EADDRINUSE), "--secure-port for the API (now 6443), or 0"},
		{errors.New("etcdembed: start: listen tcp 127.0.0.1:2379: bind: address already in use"), "--etcd-client-port for the embedded etcd (now 2379), or 0"},
		{errors.New("listen tcp 127.0.0.1:9999: bind: address already in use"), "--secure-port for the API (now 6443), --etcd-client-port"},
		{errors.New("--resources: no such file"), ""},
	} {
		got := withPortHint(c.err, cfg).Error()
		if c.want == "" && got != c.err.Error() || c.want != "" && (!strings.HasPrefix(got, c.err.Error()+"; a port is in use: choose another with ") || !strings.Contains(got, c.want)) {
			t.Errorf("withPortHint(%q) = %q, want it to say %q", c.err, got, c.want)
		}
	}
	cfg.EtcdServers = []string{"https://etcd:2379"}
	if got := withPortHint(errors.New("listen tcp 127.0.0.1:2379: bind: address already in use"), cfg).Error(); strings.Contains(got, "--etcd-client-port") {
		t.Errorf("with --etcd-servers there is no embedded etcd to move: %q", got)
	}
}

// TestControllersFlag: --controllers as kube-controller-manager's: "*" by
// default, names and aliases, "-name", the first entry naming a controller
// decides, an unknown name is an error naming the flag, and a known
// kube-controller-manager controller watchcache does not run is accepted.
func TestControllersFlag(t *testing.T) {
	const (
		ns, sa, rootCA, gc = controller.NamespaceController, controller.ServiceAccountController,
			controller.RootCACertificatePublisherController, controller.GarbageCollectorController
	)
	for _, c := range []struct {
		args           []string
		on             []string // of ns, sa, rootCA, gc
		notImplemented string
		err            string
	}{
		{args: nil, on: []string{ns, sa, rootCA, gc}},
		{args: []string{"--controllers=*"}, on: []string{ns, sa, rootCA, gc}},
		{args: []string{"--controllers="}, on: nil},
		{args: []string{"--controllers=*,-namespace-controller"}, on: []string{sa, rootCA, gc}},
		{args: []string{"--controllers=*,-namespace,-garbagecollector,-serviceaccount,-root-ca-cert-publisher"}, on: nil},
		{args: []string{"--controllers=-namespace-controller,*,namespace"}, on: []string{sa, rootCA, gc}},
		{args: []string{"--controllers=namespace,*,-namespace-controller"}, on: []string{ns, sa, rootCA, gc}},
		{args: []string{"--controllers=garbage-collector-controller"}, on: []string{gc}},
		{args: []string{"--controllers=namespace", "--controllers", "root-ca-cert-publisher"}, on: []string{ns, rootCA}},
		// kube-controller-manager's own: accepted; those named on are left to it.
		{args: []string{"--controllers=*,-namespace-controller,-garbage-collector-controller,-serviceaccount-controller,-root-ca-certificate-publisher-controller,bootstrapsigner,tokencleaner,-ttl"},
			notImplemented: "bootstrap-signer-controller"},
		{args: []string{"--controllers=deployment,-job-controller,selinux-warning-controller"}, notImplemented: "deployment-controller selinux-warning-controller"},
		{args: []string{"--controllers=*,nosuch"}, err: `--controllers: "nosuch" is not in the list of known controllers`},
		{args: []string{"--controllers=-namespaces"}, err: `--controllers: "namespaces" is not in the list of known controllers`},
		{args: []string{"--controllers=all"}, err: `"all" is not in the list of known controllers`},
	} {
		cfg, err := parseFlags(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		sel, err := controller.ParseControllers(cfg.Controllers)
		if err != nil {
			t.Fatal(err)
		}
		var on []string
		for _, name := range []string{ns, sa, rootCA, gc} {
			if sel.Enabled(name) {
				on = append(on, name)
			}
		}
		if strings.Join(on, " ") != strings.Join(c.on, " ") {
			t.Errorf("%v: on %v, want %v", c.args, on, c.on)
		}
		if got := strings.Join(sel.NotImplemented(), " "); got != c.notImplemented {
			t.Errorf("%v: not implemented %q, want %q", c.args, got, c.notImplemented)
		}
	}
	// "*" leaves kube-controller-manager's off-by-default controllers off.
	sel, _ := controller.ParseControllers(nil)
	if sel.Enabled("bootstrap-signer-controller") || sel.Enabled(controller.TokenCleanerController) || !sel.Enabled("deployment-controller") ||
		!sel.Enabled(controller.CSRSigningController) || len(sel.NotImplemented()) != 0 {
		t.Errorf("default: %+v", sel)
	}
	if (controller.Selection{}).Enabled(ns) != true {
		t.Error("the zero Selection is the default, *")
	}
}
