// Acting as kube-apiserver and etcd: started under one of their names (a
// copy or link of the binary called kube-apiserver or etcd), watchcache
// takes their flags, so that a folder holding it under both names is a
// KUBEBUILDER_ASSETS for controller-runtime's envtest. The flags of
// kube-apiserver 1.37 that watchcache does not implement are accepted, under
// any name, with a warning.

package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/etcdembed"
)

// The names watchcache answers to besides its own.
const (
	asKubeAPIServer = "kube-apiserver"
	asEtcd          = "etcd"
)

// kubeAPIServerFlags are kube-apiserver 1.37.2's flags, one a line: the name
// and the type its --help shows (bool: given without a value). Recorded with
// `kube-apiserver --help` (-h, --help left out).
//
//go:embed kube-apiserver-flags.txt
var kubeAPIServerFlags string

// actingAs is the program watchcache acts as, by the base name of its
// argv[0]: kube-apiserver, etcd, or else watchcache.
func actingAs(argv0 string) string {
	switch name := filepath.Base(argv0); name {
	case asKubeAPIServer, asEtcd:
		return name
	}
	return "watchcache"
}

// throwawayMemberTicks gives a member started as etcd alone (without
// --initial-cluster, as envtest starts its throwaway etcd) the short raft
// ticks of `watchcache etcd`'s single member (10 ms heartbeats, 100 ms
// elections), unless given: it then serves within tens of milliseconds
// rather than most of a second. etcd itself keeps its 100 ms and 1 s: the
// member may be grown into a cluster later (as `watchcache etcd` with peer
// URLs also keeps them).
func throwawayMemberTicks(cfg *etcdembed.Config) {
	if cfg.InitialCluster == "" && cfg.HeartbeatInterval == 0 && cfg.ElectionTimeout == 0 {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 10*time.Millisecond, 100*time.Millisecond
	}
}

// ignoredFlag is a kube-apiserver flag watchcache does not implement: any
// value is accepted, and a warning says it is ignored.
type ignoredFlag struct {
	fs      *flag.FlagSet
	name    string
	boolean bool
}

func (f ignoredFlag) String() string   { return "" }
func (f ignoredFlag) IsBoolFlag() bool { return f.boolean }
func (f ignoredFlag) Set(v string) error {
	fmt.Fprintf(f.fs.Output(), "warning: --%s=%s is a kube-apiserver flag that watchcache does not implement: ignored\n", f.name, v)
	return nil
}

// addKubeAPIServerFlags adds kube-apiserver's --cert-dir, and every other
// flag of kubeAPIServerFlags that fs does not define yet as an ignored one:
// call it after the real flags, which win. fs's usage lists the flags
// as kube-apiserver's --help does (envtest reads it to find out which flags
// the binary has). finish, called after parsing, applies --cert-dir.
//
// Under the name kube-apiserver, --cert-dir defaults to kube-apiserver's
// /var/run/kubernetes, and --data-dir (where watchcache writes its generated
// credentials and kubeconfig, and an embedded etcd its data) defaults to
// --cert-dir: kube-apiserver has no data directory, and envtest starts it
// with a temporary --cert-dir it removes afterwards.
func addKubeAPIServerFlags(fs *flag.FlagSet, c *app.Config) (finish func() error) {
	defaultCertDir := ""
	if fs.Name() == asKubeAPIServer {
		defaultCertDir = "/var/run/kubernetes"
	}
	certDir := fs.String("cert-dir", defaultCertDir, "directory of the serving certificate: apiserver.crt and apiserver.key, used when both are there and --tls-cert-file is not given (else the generated serving certificate is)")
	for _, line := range strings.Split(strings.TrimSpace(kubeAPIServerFlags), "\n") {
		name, typ, _ := strings.Cut(line, " ")
		if fs.Lookup(name) == nil {
			fs.Var(ignoredFlag{fs: fs, name: name, boolean: typ == "bool"}, name, "")
		}
	}
	fs.Usage = func() { printFlags(fs) }
	return func() error {
		if fs.Name() == asKubeAPIServer && !flagGiven(fs, "data-dir") {
			c.DataDir = *certDir
		}
		if *certDir == "" || c.TLSCertFile != "" {
			return nil
		}
		cert, key := filepath.Join(*certDir, "apiserver.crt"), filepath.Join(*certDir, "apiserver.key")
		certErr, keyErr := statErr(cert), statErr(key)
		switch {
		case certErr == nil && keyErr == nil:
			c.TLSCertFile, c.TLSPrivateKeyFile = cert, key
		case !errors.Is(certErr, os.ErrNotExist):
			return fmt.Errorf("--cert-dir: %w", certErr)
		case !errors.Is(keyErr, os.ErrNotExist):
			return fmt.Errorf("--cert-dir: %w", keyErr)
		}
		return nil
	}
}

// statErr is os.Stat's error for path.
func statErr(path string) error {
	_, err := os.Stat(path)
	return err
}

// printFlags is the usage of fs as kube-apiserver's and etcd's --help
// write it, a flag a line starting with its --name (which envtest looks
// for), then the names of the ignored kube-apiserver flags.
func printFlags(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
	var ignored []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(ignoredFlag); ok {
			ignored = append(ignored, f.Name)
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(out, "      --%s %s\n    \t%s\n", f.Name, typ, usage)
	})
	if len(ignored) > 0 {
		slices.Sort(ignored)
		fmt.Fprintf(out, "\nAccepted and ignored, with a warning (kube-apiserver's, not implemented): %s\n", strings.Join(ignored, ", "))
	}
}
