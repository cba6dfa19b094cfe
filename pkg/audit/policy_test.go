package audit

import (
	"strings"
	"testing"

	"github.com/watchcache/watchcache/pkg/auth/user"
	"github.com/watchcache/watchcache/pkg/requestinfo"
)

// testPolicy follows the example policy of kube-apiserver's auditing
// documentation, in its order (the first matching rule wins).
const testPolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services"]
- level: None
  userGroups: ["system:nodes"]
  verbs: ["get"]
  resources:
  - group: ""
    resources: ["nodes"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods/log", "*/status"]
- level: Request
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["controller-leader"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
  - group: "authentication.k8s.io"
    resources: ["tokenreviews"]
- level: RequestResponse
  resources:
  - group: "apps"
    resources: ["deployments/*"]
- level: None
  resources:
  - group: "apps"
- level: Request
  namespaces: ["kube-system"]
  omitStages: [ResponseStarted]
  omitManagedFields: false
- level: RequestResponse
  verbs: ["create"]
  resources:
  - group: "batch"
    resources: ["*"]
- level: Metadata
  nonResourceURLs: ["/metrics"]
- level: Metadata
  omitStages: [ResponseComplete]
`

func TestPolicyMatching(t *testing.T) {
	p, err := ParsePolicy([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &user.Info{Name: "system:kube-proxy", Groups: []string{"system:authenticated"}}
	node := &user.Info{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	alice := &user.Info{Name: "alice", Groups: []string{"devs", "system:authenticated"}}
	res := func(verb, group, resource, sub, ns, name string) *requestinfo.Info {
		return &requestinfo.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	nonRes := func(verb, path string) *requestinfo.Info { return &requestinfo.Info{Verb: verb, Path: path} }
	for _, tc := range []struct {
		name  string
		user  *user.Info
		info  *requestinfo.Info
		level Level
	}{
		{"kube-proxy watches endpoints", proxy, res("watch", "", "endpoints", "", "", ""), LevelNone},
		{"kube-proxy lists endpoints: not the verb", proxy, res("list", "", "endpoints", "", "", ""), LevelMetadata},
		{"alice watches services: not the user", alice, res("watch", "", "services", "", "ns", ""), LevelMetadata},
		{"a node gets a node: by group", node, res("get", "", "nodes", "", "", "n1"), LevelNone},
		{"unauthenticated get of a node: no groups", nil, res("get", "", "nodes", "", "", "n1"), LevelMetadata},
		{"/healthz/etcd: prefix", alice, nonRes("get", "/healthz/etcd"), LevelNone},
		{"/healthz: prefix without the rest", alice, nonRes("get", "/healthz"), LevelNone},
		{"/version exactly", alice, nonRes("get", "/version"), LevelNone},
		{"/version/x: no wildcard", alice, nonRes("get", "/version/x"), LevelMetadata},
		{"/metrics", alice, nonRes("get", "/metrics"), LevelMetadata},
		{"pods/log", alice, res("get", "", "pods", "log", "ns", "p"), LevelRequestResponse},
		{"pods without subresource: not pods/log", alice, res("get", "", "pods", "", "ns", "p"), LevelMetadata},
		{"*/status of pods", alice, res("update", "", "pods", "status", "ns", "p"), LevelRequestResponse},
		{"*/status of nodes", alice, res("patch", "", "nodes", "status", "", "n1"), LevelRequestResponse},
		{"*/status of deployments: another group", alice, res("update", "apps", "deployments", "status", "ns", "d"), LevelRequestResponse},
		{"configmap by name", alice, res("update", "", "configmaps", "", "kube-system", "controller-leader"), LevelRequest},
		{"other configmap", alice, res("update", "", "configmaps", "", "kube-system", "other"), LevelMetadata},
		{"list of configmaps: no name", alice, res("list", "", "configmaps", "", "ns", ""), LevelMetadata},
		{"secrets", alice, res("get", "", "secrets", "", "ns", "s"), LevelMetadata},
		{"tokenreviews in their group", alice, res("create", "authentication.k8s.io", "tokenreviews", "", "", ""), LevelMetadata},
		{"deployments/*: the resource itself", alice, res("get", "apps", "deployments", "", "ns", "d"), LevelRequestResponse},
		{"deployments/*: its scale", alice, res("update", "apps", "deployments", "scale", "ns", "d"), LevelRequestResponse},
		{"the rest of apps: group without resources", alice, res("get", "apps", "daemonsets", "", "kube-system", "x"), LevelNone},
		{"kube-system namespace", alice, res("get", "", "serviceaccounts", "", "kube-system", "x"), LevelRequest},
		{"namespaces rule skips cluster scope", alice, res("get", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), LevelMetadata},
		{"batch * creates", alice, res("create", "batch", "jobs", "", "ns", ""), LevelRequestResponse},
		{"batch * matches subresources", alice, res("create", "batch", "jobs", "status", "ns", "j"), LevelRequestResponse},
		{"batch deletes: not the verb", alice, res("delete", "batch", "jobs", "", "ns", "j"), LevelMetadata},
		{"pods/log rule is of the core group only", alice, res("get", "example.com", "pods", "log", "ns", "p"), LevelMetadata},
	} {
		if got := p.evaluate(tc.user, tc.info); got.level != tc.level {
			t.Errorf("%s: level %s, want %s", tc.name, got.level, tc.level)
		}
	}

	// The stages left out are the policy's and the matching rule's.
	if cfg := p.evaluate(alice, res("get", "", "serviceaccounts", "", "kube-system", "x")); strings.Join(stageNames(cfg.omitStages), ",") != "RequestReceived,ResponseStarted" {
		t.Errorf("omitStages: %v", cfg.omitStages)
	}
	// A request no rule matches is not logged.
	empty, _ := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  users: [bob]\n"))
	if cfg := empty.evaluate(alice, nonRes("get", "/api")); cfg.level != LevelNone {
		t.Errorf("no rule matched: %s", cfg.level)
	}
}

func stageNames(s []Stage) []string {
	var out []string
	for _, st := range s {
		out = append(out, string(st))
	}
	return out
}

func TestPolicyOmitManagedFields(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitManagedFields":true,"rules":[
		{"level":"Request","namespaces":["keep"],"omitManagedFields":false},
		{"level":"Request"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	info := &requestinfo.Info{IsResourceRequest: true, Verb: "create", Resource: "configmaps"}
	info.Namespace = "keep"
	if p.evaluate(nil, info).omitManagedFields {
		t.Error("the rule's false did not win over the policy's true")
	}
	info.Namespace = "other"
	if !p.evaluate(nil, info).omitManagedFields {
		t.Error("the policy's true was not the default")
	}
	list := `{"kind":"ConfigMapList","items":[{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}},{"metadata":{"name":"b"}}]}`
	if got := string(objectJSON([]byte(list), "application/json", true)); strings.Contains(got, "managedFields") || !strings.Contains(got, `"name":"b"`) {
		t.Errorf("list without managedFields: %s", got)
	}
	if got := string(objectJSON([]byte("metadata:\n  name: cm\n  managedFields: []\n"), "application/apply-patch+yaml", false)); got != `{"metadata":{"managedFields":[],"name":"cm"}}` {
		t.Errorf("YAML body: %s", got)
	}
}

func TestPolicyErrors(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"rules: [{level: Metadata}]", "Object 'Kind' is missing"},
		{"apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: Metadata}]", "unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\n", "loaded illegal policy with 0 rules"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]", `rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"`},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{users: [a]}]", "rules[0].level: Required value"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None}]", `omitStages[0]: Unsupported value: "Done"`},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [healthz]}]", "non-resource URL rules must begin with a '/' character"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ['/a*/b']}]", "wildcards '*' must be the final character"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, namespaces: [a], nonResourceURLs: ['/a']}]", "rules cannot apply to both regular resources and non-resource URLs"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: x, resourceNames: [a]}]}]", "using resourceNames requires at least one resource"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: rbac.authorization.k8s.io/v1}]}]", "rules[0].resources.group: Invalid value"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: {level: None}", "failed decoding"},
	} {
		if _, err := ParsePolicy([]byte(tc.policy)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.policy, err, tc.want)
		}
	}
	if _, err := LoadPolicy("/nonexistent/policy.yaml"); err == nil || !strings.Contains(err.Error(), `failed to read file path "/nonexistent/policy.yaml"`) {
		t.Errorf("missing file: %v", err)
	}
}
