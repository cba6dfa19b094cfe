// Command watchcache runs the watchcache storage layer: an etcd (embedded
// unless --etcd-servers is given) and, as the project grows, the
// Kubernetes REST server with the watch cache in front of it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/watchcache/watchcache/pkg/etcdembed"
	"github.com/watchcache/watchcache/pkg/storage/etcd3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// config is the parsed command line.
type config struct {
	dataDir            string
	etcdServers        []string
	etcdPrefix         string
	etcdClientPort     int
	compactionInterval time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	var servers string
	fs := flag.NewFlagSet("watchcache", flag.ContinueOnError)
	fs.StringVar(&c.dataDir, "data-dir", "watchcache-data", "where the embedded etcd keeps its data (ignored with --etcd-servers)")
	fs.StringVar(&servers, "etcd-servers", "", "comma-separated etcd client URLs; empty runs an embedded etcd")
	fs.StringVar(&c.etcdPrefix, "etcd-prefix", "/registry", "the prefix of every key this server writes in etcd")
	fs.IntVar(&c.etcdClientPort, "etcd-client-port", 2379, "loopback port of the embedded etcd (0: any free port)")
	fs.DurationVar(&c.compactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often to compact etcd's history (0: never)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if servers != "" {
		c.etcdServers = strings.Split(servers, ",")
	}
	if !strings.HasPrefix(c.etcdPrefix, "/") || strings.HasSuffix(c.etcdPrefix, "/") {
		return c, fmt.Errorf("--etcd-prefix %q must start with / and not end with /", c.etcdPrefix)
	}
	return c, nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Error("bad flags", "err", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("watchcache failed", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down: clients first, then etcd,
// so that every acknowledged write is flushed.
func run(ctx context.Context, cfg config, log *slog.Logger) error {
	endpoints := cfg.etcdServers
	if len(endpoints) == 0 {
		etcdLog, err := etcdLogger(cfg.dataDir)
		if err != nil {
			return err
		}
		defer etcdLog.Sync()
		srv, err := etcdembed.Start(etcdembed.Config{DataDir: cfg.dataDir, ClientPort: cfg.etcdClientPort, Logger: etcdLog})
		if err != nil {
			return err
		}
		defer srv.Close()
		endpoints = []string{srv.Endpoint}
		log.Info("embedded etcd is serving", "endpoint", srv.Endpoint, "data-dir", cfg.dataDir, "log", filepath.Join(cfg.dataDir, "etcd.log"))
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer client.Close()
	if cfg.compactionInterval > 0 {
		go etcd3.NewCompactor(client, cfg.etcdPrefix, cfg.compactionInterval, log).Run(ctx)
	}
	log.Info("watchcache is running; the HTTP server is not built yet (issue 3). Stop with Ctrl-C.", "etcd", endpoints)
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// etcdLogger sends the embedded etcd's warnings and errors to
// <data-dir>/etcd.log, out of the way of this server's own log.
func etcdLogger(dataDir string) (*zap.Logger, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	zc.OutputPaths = []string{filepath.Join(dataDir, "etcd.log")}
	zc.ErrorOutputPaths = zc.OutputPaths
	return zc.Build()
}
