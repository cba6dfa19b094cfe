// --etcd-servers-overrides: parsing its entries, a client per override, and
// the client of the etcd cluster that stores a resource.

package app

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/watchcache/watchcache/pkg/resource"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdOverride is one entry of --etcd-servers-overrides: a resource stored
// on an etcd cluster of its own.
type etcdOverride struct {
	group, resource string
	servers         []string
}

// parseEtcdOverrides reads --etcd-servers-overrides in kube-apiserver's
// format: entries "group/resource#server;server" ("/events" for the core
// group), given as a list or comma-separated.
func parseEtcdOverrides(values []string) ([]etcdOverride, error) {
	var out []etcdOverride
	for _, value := range values {
		for _, entry := range strings.Split(value, ",") {
			if entry = strings.TrimSpace(entry); entry == "" {
				continue
			}
			gr, servers, ok := strings.Cut(entry, "#")
			group, res, hasSlash := strings.Cut(gr, "/")
			if !ok || !hasSlash || res == "" || servers == "" {
				return nil, fmt.Errorf("--etcd-servers-overrides: %q is not group/resource#servers (core resources: /events#...)", entry)
			}
			out = append(out, etcdOverride{group: group, resource: res, servers: strings.Split(servers, ";")})
		}
	}
	return out, nil
}

// connectOverrides makes a client per override, with the TLS of
// --etcd-servers for https servers, and notes one per distinct set of
// servers (in any order), as kube-apiserver tells clusters apart.
func (a *App) connectOverrides(cfg Config) error {
	overrides, err := parseEtcdOverrides(cfg.EtcdServersOverrides)
	if err != nil {
		return err
	}
	clusters := map[string]bool{}
	for _, o := range overrides {
		var tlsConfig *tls.Config
		if strings.HasPrefix(o.servers[0], "https://") {
			info := transport.TLSInfo{CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile, TrustedCAFile: cfg.EtcdCAFile}
			if tlsConfig, err = info.ClientConfig(); err != nil {
				return fmt.Errorf("etcd TLS for %s/%s: %w", o.group, o.resource, err)
			}
		}
		client, err := newEtcdClient(o.servers, tlsConfig)
		if err != nil {
			return fmt.Errorf("etcd of %s/%s: %w", o.group, o.resource, err)
		}
		if a.overrides == nil {
			a.overrides = map[resource.GroupResource]*clientv3.Client{}
		}
		a.overrides[resource.GroupResource{Group: o.group, Plural: o.resource}] = client
		if servers := strings.Join(slices.Sorted(slices.Values(o.servers)), ";"); !clusters[servers] {
			clusters[servers] = true
			a.overrideClusters = append(a.overrideClusters, client)
		}
	}
	return nil
}

// etcdClient is the client of the etcd cluster that stores res.
func (a *App) etcdClient(res *resource.Resource) *clientv3.Client {
	if c := a.overrides[resource.GroupResource{Group: res.Group, Plural: res.Plural}]; c != nil {
		return c
	}
	return a.client
}
