// The etcd version safeguard of consistent reads from the cache (KEP-2340):
// the versions every endpoint reports and the decision whether to serve
// consistent reads from the cache.

package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// progressNotifyBroken reports whether an etcd version sends progress
// notifications that consistent reads from the cache cannot trust: before
// 3.4.31 (etcd issue 15220: a notification may run ahead of undelivered
// events) and 3.5.0 to 3.5.12 (issue 17507). ok is false when the version
// cannot be parsed.
func progressNotifyBroken(version string) (broken, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 3 {
		return false, false
	}
	var n [3]int
	for i, p := range parts {
		end := 0 // the patch may go on with "-rc.1" or "+git"
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 || (i < 2 && end != len(p)) {
			return false, false
		}
		n[i], _ = strconv.Atoi(p[:end])
	}
	major, minor, patch := n[0], n[1], n[2]
	switch {
	case major != 3:
		return major < 3, true
	case minor < 4:
		return true, true
	case minor == 4:
		return patch < 31, true
	case minor == 5:
		return patch <= 12, true
	}
	return false, true
}

// consistentReadDecision is what the etcd version safeguard decided.
type consistentReadDecision int

const (
	keepConsistentReads consistentReadDecision = iota
	disableConsistentReads
	refuseToStart
)

// safeguard applies KEP-2340's Beta rules to the versions of every etcd
// endpoint ("" when unknown): an unknown version warns and keeps the gates;
// a broken one turns consistent reads from the cache off with a warning,
// unless the gates were set explicitly: then the server refuses to start.
func safeguard(versions map[string]string, explicit bool) (consistentReadDecision, string) {
	var unknown, broken []string
	for endpoint, v := range versions {
		isBroken, ok := progressNotifyBroken(v)
		switch {
		case !ok:
			unknown = append(unknown, endpoint)
		case isBroken:
			broken = append(broken, fmt.Sprintf("%s (etcd %s)", endpoint, v))
		}
	}
	switch {
	case len(broken) > 0 && explicit:
		return refuseToStart, fmt.Sprintf("consistent reads from the watch cache were enabled explicitly (--feature-gates), but etcd %s has broken progress notifications (need ≥ 3.4.31, or ≥ 3.5.13 in 3.5): upgrade etcd or turn ConsistentListFromCache and ConsistentGetFromCache off", strings.Join(broken, ", "))
	case len(broken) > 0:
		return disableConsistentReads, fmt.Sprintf("etcd %s has broken progress notifications (need ≥ 3.4.31, or ≥ 3.5.13 in 3.5): consistent reads go to etcd instead of the watch cache", strings.Join(broken, ", "))
	case len(unknown) > 0:
		return keepConsistentReads, fmt.Sprintf("cannot tell the etcd version of %s: consistent reads from the watch cache stay on; they need etcd ≥ 3.4.31 or ≥ 3.5.13", strings.Join(unknown, ", "))
	}
	return keepConsistentReads, ""
}

// etcdVersions asks every endpoint its version ("" when it does not say).
func etcdVersions(client *clientv3.Client) map[string]string {
	versions := map[string]string{}
	for _, endpoint := range client.Endpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		status, err := client.Status(ctx, endpoint)
		cancel()
		if err == nil {
			versions[endpoint] = status.Version
		} else {
			versions[endpoint] = ""
		}
	}
	return versions
}

// applySafeguard checks etcd's versions when consistent reads from the
// cache are on, and turns them off, or fails, as safeguard says.
func applySafeguard(cfg *Config, client *clientv3.Client, log *slog.Logger) error {
	if !cfg.WatchCache || !cfg.ConsistentListFromCache && !cfg.ConsistentGetFromCache {
		return nil
	}
	decision, message := safeguard(etcdVersions(client), cfg.ConsistentReadsExplicit)
	switch decision {
	case refuseToStart:
		return fmt.Errorf("%s", message)
	case disableConsistentReads:
		cfg.ConsistentListFromCache, cfg.ConsistentGetFromCache = false, false
	}
	if message != "" {
		log.Warn(message)
	}
	return nil
}
