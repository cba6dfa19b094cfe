// The kubelet-auth scenario's setup: a token per kubelet in a
// --token-auth-file, the ClusterRoles and bindings of kubelets and of the
// nodes scenario, and the kubelet scenario run with bearer tokens and RBAC.

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/watchcache/watchcache/pkg/benchdata"
)

// kubeletTokensFile, in the work directory, is every server's
// --token-auth-file: a bearer token per node for its kubelet user.
const kubeletTokensFile = "kubelet-tokens.csv"

// kubeletUser and kubeletToken are node's kubelet's user name and token.
func kubeletUser(node string) string  { return "system:node:" + node }
func kubeletToken(node string) string { return "bench-token-" + node }

// writeKubeletTokens writes the token file before any server starts: a
// token for every node of the shared scenarios, and of the nodes scenario
// if it runs.
func (b *bench) writeKubeletTokens() error {
	nodes := b.cfg.Nodes
	if b.cfg.runs("nodes") {
		nodes = max(nodes, b.cfg.ClusterNodes)
	}
	var lines strings.Builder
	for i := range nodes {
		node := benchdata.Node(i, nodes)
		fmt.Fprintf(&lines, "%s,%s,uid-%s,\"system:nodes\"\n", kubeletToken(node), kubeletUser(node), node)
	}
	return os.WriteFile(filepath.Join(b.dir, kubeletTokensFile), []byte(lines.String()), 0o600)
}

// kubeletRole lets a kubelet user read pods; bound once per node.
const kubeletRole = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"bench-kubelet"},` +
	`"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]}]}`

// kubeletBinding binds node's kubelet user to kubeletRole.
func kubeletBinding(node string) []byte {
	return []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"bench-kubelet-` + node + `"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"bench-kubelet"},` +
		`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"` + kubeletUser(node) + `"}]}`)
}

// nodesRole is what the nodes scenario's kubelets do, allowed to the group
// of every kubelet user by nodesBinding (kube-apiserver's Node authorizer
// would allow it, and more).
const nodesRole = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"bench-nodes"},"rules":[` +
	`{"apiGroups":[""],"resources":["pods","nodes"],"verbs":["get","list","watch"]},` +
	`{"apiGroups":[""],"resources":["nodes/status"],"verbs":["patch","update"]},` +
	`{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","create","update"]}]}`

// nodesBinding binds the group system:nodes to nodesRole.
const nodesBinding = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"bench-nodes"},` +
	`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"bench-nodes"},` +
	`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:nodes"}]}`

// kubeletAuth is the kubelet scenario with authentication and
// authorization in the way: on the cache-on server each client is its
// node's kubelet user (a static token), allowed by RBAC through one
// ClusterRoleBinding per node; the baseline is the same server started
// with --authorization-mode=AlwaysAllow, its clients anonymous (no
// credentials beyond TLS). The difference is what authentication and RBAC
// cost.
func (b *bench) kubeletAuth(ctx context.Context) (err error) {
	if _, err := b.cache.create(ctx, "/apis/rbac.authorization.k8s.io/v1/clusterroles", []byte(kubeletRole)); err != nil {
		return err
	}
	if _, _, err := b.createVia(ctx, b.cache, "kubelet bindings", b.cfg.Nodes, func(i int) (string, []byte) {
		return "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", kubeletBinding(benchdata.Node(i, b.cfg.Nodes))
	}); err != nil {
		return err
	}
	if b.allow, err = b.startServerAs(ctx, "allow", true, "--authorization-mode", "AlwaysAllow"); err != nil {
		return err
	}
	defer func() {
		b.allow.stop()
		b.allow = nil
	}()
	sc := Scenario{
		ID:    "kubelet-auth",
		Title: "Kubelets with authentication and RBAC",
		Workload: fmt.Sprintf("The kubelet scenario (%s pods on %s nodes, each client LISTing a node's pods consistently, closed loop, %s per side) against two cache-on servers: "+
			"**RBAC**, each request from its node's kubelet user (a bearer token of --token-auth-file) allowed by RBAC through one of %s ClusterRoleBindings; "+
			"and **AlwaysAllow**, a server with --authorization-mode=AlwaysAllow whose clients send no credentials. The advantage column is RBAC/AlwaysAllow: "+
			"below 1× is what authentication and authorization cost.",
			FormatValue(Count, float64(b.cfg.Pods)), FormatValue(Count, float64(b.cfg.Nodes)), b.cfg.Duration, FormatValue(Count, float64(b.cfg.Nodes))),
		Sides: []string{"RBAC", "AlwaysAllow"},
	}
	kubelets := make([]*apiClient, b.cfg.Nodes)
	for i := range kubelets {
		kubelets[i] = b.cache.as(kubeletToken(benchdata.Node(i, b.cfg.Nodes)))
	}
	anonymous := b.allow.as("")
	for _, clients := range b.cfg.KubeletClients {
		sides, err := b.closedLoopPair(ctx, b.cache, b.allow, clients, b.cfg.Duration, 1, func(ctx context.Context, s *server, client, i int) error {
			n := client*7919 + i*31
			c := anonymous
			if s == b.cache {
				c = kubelets[n%b.cfg.Nodes]
			}
			return c.listNodePods(ctx, b.cfg.Pods, b.cfg.Nodes, n)
		})
		if err != nil {
			return err
		}
		sc.Rows = append(sc.Rows, Row{Label: fmt.Sprintf("%d clients", clients), Metrics: latencyMetrics(sides["cache"], sides["allow"]),
			Incomplete: failures(map[string]*outcome{"RBAC": sides["cache"], "AlwaysAllow": sides["allow"]})})
	}
	return b.finish(sc)
}
