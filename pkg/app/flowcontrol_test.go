package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchcache/watchcache/pkg/flowcontrol"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// startAPF starts a server with API Priority and Fairness (the default)
// and AlwaysAllow, so that any impersonated user's request is served.
func startAPF(t *testing.T) (*App, *rest.Config, *kubernetes.Clientset) {
	t.Helper()
	a, err := Start(Config{DataDir: t.TempDir(), EtcdPrefix: "/registry", EtcdUnsafeNoFsync: true, WatchCache: true,
		AuthorizationModes: []string{ModeAlwaysAllow}, AnonymousAuth: true, RequestTimeout: time.Minute, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	admin, cs := adminClient(t, a)
	return a, admin, cs
}

// apfNames maps the FlowSchemas' and priority levels' uids to their names.
func apfNames(t *testing.T, cs *kubernetes.Clientset) map[types.UID]string {
	t.Helper()
	ctx := context.Background()
	names := map[types.UID]string{}
	fss, err := cs.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		names[fs.UID] = fs.Name
	}
	pls, err := cs.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.Items {
		names[pl.UID] = pl.Name
	}
	return names
}

// as is a request as imp (no UserName: the administrator; nil: anonymous).
func as(t *testing.T, a *App, admin *rest.Config, imp *rest.ImpersonationConfig, method, path string) *http.Response {
	t.Helper()
	cfg := rest.AnonymousClientConfig(admin)
	if imp != nil {
		cfg = rest.CopyConfig(admin)
		cfg.Impersonate = *imp
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, a.URL+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestAPFClassification: requests of kube-apiserver's kinds of users get
// the FlowSchema and priority level kube-apiserver 1.37 picks for them
// (recorded from the reference with the same requests and users), named
// by uid in the response headers; the bootstrap objects are
// kube-apiserver's, each FlowSchema with its Dangling condition.
func TestAPFClassification(t *testing.T) {
	a, admin, cs := startAPF(t)
	names := apfNames(t, cs)
	var fs []string
	for _, n := range names {
		fs = append(fs, n)
	}
	slices.Sort(fs)
	want := []string{"catch-all", "catch-all", "exempt", "exempt", "global-default", "global-default", "kube-controller-manager",
		"kube-scheduler", "kube-system-service-accounts", "leader-election", "node-high", "probes", "service-accounts", "system",
		"system-leader-election", "system-node-high", "system-nodes", "workload-high", "workload-low"}
	if !slices.Equal(fs, want) {
		t.Errorf("bootstrap objects %v, want kube-apiserver's %v", fs, want)
	}
	user := func(name string, groups ...string) *rest.ImpersonationConfig {
		return &rest.ImpersonationConfig{UserName: name, Groups: groups}
	}
	for _, tc := range []struct {
		who          string
		imp          *rest.ImpersonationConfig
		method, path string
		schema, lvl  string
	}{
		{"admin", &rest.ImpersonationConfig{}, "GET", "/api/v1/namespaces/default/configmaps", "exempt", "exempt"},
		{"admin", &rest.ImpersonationConfig{}, "GET", "/readyz", "exempt", "exempt"},
		{"anonymous", nil, "GET", "/api/v1/namespaces/default/configmaps", "global-default", "global-default"},
		{"anonymous", nil, "GET", "/readyz", "probes", "exempt"},
		{"anonymous", nil, "GET", "/livez", "probes", "exempt"},
		{"anonymous", nil, "GET", "/healthz", "probes", "exempt"},
		{"anonymous", nil, "GET", "/version", "global-default", "global-default"},
		{"alice", user("alice"), "GET", "/api/v1/namespaces/default/configmaps", "global-default", "global-default"},
		{"alice", user("alice"), "GET", "/readyz", "probes", "exempt"},
		{"alice", user("alice"), "GET", "/api", "global-default", "global-default"},
		{"a ServiceAccount", user("system:serviceaccount:apf:sa1"), "GET", "/api/v1/namespaces/apf/configmaps", "service-accounts", "workload-low"},
		{"a kube-system ServiceAccount", user("system:serviceaccount:kube-system:sa1"), "GET", "/api/v1/namespaces/kube-system/configmaps",
			"kube-system-service-accounts", "workload-high"},
		{"a node", user("system:node:n1", "system:nodes"), "GET", "/api/v1/nodes/n1", "system-node-high", "node-high"},
		{"a node", user("system:node:n1", "system:nodes"), "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
			"system-node-high", "node-high"},
		{"kube-controller-manager", user("system:kube-controller-manager"), "GET", "/api/v1/namespaces/default/pods", "kube-controller-manager",
			"workload-high"},
		{"kube-controller-manager", user("system:kube-controller-manager"), "PUT",
			"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", "system-leader-election", "leader-election"},
		{"kube-scheduler", user("system:kube-scheduler"), "GET", "/api/v1/pods", "kube-scheduler", "workload-high"},
	} {
		resp := as(t, a, admin, tc.imp, tc.method, tc.path)
		gotFS, gotPL := names[types.UID(resp.Header.Get(flowcontrol.HeaderFlowSchemaUID))], names[types.UID(resp.Header.Get(flowcontrol.HeaderPriorityLevelUID))]
		if gotFS != tc.schema || gotPL != tc.lvl {
			t.Errorf("%s %s %s: FlowSchema %q, priority level %q; kube-apiserver: %q, %q (%d %v)", tc.who, tc.method, tc.path, gotFS, gotPL, tc.schema, tc.lvl, resp.StatusCode, resp.Header)
		}
	}
	metrics, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{ // kube-apiserver's with 400 + 200 seats
		`apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 49`,
		`apiserver_flowcontrol_nominal_limit_seats{priority_level="workload-low"} 245`,
		`apiserver_flowcontrol_dispatched_requests_total{flow_schema="probes",priority_level="exempt"} 4`,
	} {
		if !strings.Contains(string(metrics), line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	fss, err := cs.FlowcontrolV1().FlowSchemas().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		waitDangling(t, cs, fs.Name, metav1.ConditionFalse, "Found",
			`This FlowSchema references the PriorityLevelConfiguration object named "`+fs.Spec.PriorityLevelConfiguration.Name+`" and it exists`)
	}
}

// waitDangling waits for a FlowSchema's Dangling condition.
func waitDangling(t *testing.T, cs *kubernetes.Clientset, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	var last []flowcontrolv1.FlowSchemaCondition
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		fs, err := cs.FlowcontrolV1().FlowSchemas().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = fs.Status.Conditions
		for _, c := range last {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && string(c.Status) == string(status) && c.Reason == reason && c.Message == message {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("FlowSchema %s: conditions %+v, want Dangling %s %s %q", name, last, status, reason, message)
}

// TestAPFConfiguration: FlowSchemas and priority levels a user creates
// classify requests at once and are served as kube-apiserver serves them
// (create, get, list, update, status, delete: upstream's e2e operations);
// a FlowSchema naming a missing level is Dangling and ignored; a queuing
// level without seats answers 429 after a quarter of the request's
// timeout, in kube-apiserver's words; the mandatory objects are restored
// when changed or deleted, a suggested one its user took over is left
// alone.
func TestAPFConfiguration(t *testing.T) {
	a, admin, cs := startAPF(t)
	ctx := context.Background()
	fc := cs.FlowcontrolV1()
	allResources := []flowcontrolv1.PolicyRulesWithSubjects{{
		Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "apf-queued"}}},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
			Namespaces: []string{"*"}, ClusterScope: true}},
	}}
	schema := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "apf-queue", Labels: map[string]string{"e2e": "apf"}},
		Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 501, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "apf-queue"},
			Rules: allResources}}
	created, err := fc.FlowSchemas().Create(ctx, schema, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	missing := `This FlowSchema references the PriorityLevelConfiguration object named "apf-queue" but there is no such object`
	waitDangling(t, cs, "apf-queue", metav1.ConditionTrue, "NotFound", missing)
	queued := &rest.ImpersonationConfig{UserName: "apf-queued"}
	names := apfNames(t, cs)
	if resp := as(t, a, admin, queued, "GET", "/api/v1/pods"); names[types.UID(resp.Header.Get(flowcontrol.HeaderFlowSchemaUID))] != "global-default" {
		t.Errorf("a request matching only a dangling FlowSchema went to %q, want global-default as kube-apiserver",
			names[types.UID(resp.Header.Get(flowcontrol.HeaderFlowSchemaUID))])
	}
	level := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "apf-queue", Labels: map[string]string{"e2e": "apf"}},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0),
				BorrowingLimitPercent: ptr.To[int32](0), LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 1}}}}}
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, level, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDangling(t, cs, "apf-queue", metav1.ConditionFalse, "Found",
		`This FlowSchema references the PriorityLevelConfiguration object named "apf-queue" and it exists`)

	// A level without seats: kube-apiserver 1.37 answered this request 429
	// after 1 s (a quarter of its 4 s), in plain text.
	start := time.Now()
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = *queued
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(a.URL + "/api/v1/pods?timeout=4s")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	names = apfNames(t, cs)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || string(body) != "Too many requests, please try again later.\n" ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || names[types.UID(resp.Header.Get(flowcontrol.HeaderFlowSchemaUID))] != "apf-queue" {
		t.Errorf("a request of a level without seats: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond || waited > 3*time.Second {
		t.Errorf("answered after %v, want about a quarter of its 4s timeout", waited)
	}

	// The operations of upstream's e2e test.
	got, err := fc.FlowSchemas().Get(ctx, "apf-queue", metav1.GetOptions{})
	if err != nil || got.UID != created.UID || got.Spec.DistinguisherMethod != nil || got.Spec.MatchingPrecedence != 501 {
		t.Errorf("get: %+v, %v", got, err)
	}
	list, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{LabelSelector: "e2e=apf"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("list by label: %v, %v", list, err)
	}
	got.Annotations = map[string]string{"patched": "true"}
	if got, err = fc.FlowSchemas().Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Annotations["patched"] != "true" {
		t.Errorf("update: %v", err)
	}
	got.Status.Conditions = append(got.Status.Conditions, flowcontrolv1.FlowSchemaCondition{Type: "StatusUpdated", Status: flowcontrolv1.ConditionTrue,
		Reason: "E2E", Message: "Set from an e2e test"})
	if got, err = fc.FlowSchemas().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || findCond(got.Status.Conditions, "StatusUpdated") == nil {
		t.Errorf("update status: %v %+v", err, got.Status)
	}
	if got, err = fc.FlowSchemas().Patch(ctx, "apf-queue", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`),
		metav1.PatchOptions{}); err != nil || got.Labels["patched"] != "yes" {
		t.Errorf("patch: %v", err)
	}
	if got, err = fc.FlowSchemas().Patch(ctx, "apf-queue", types.MergePatchType, []byte(`{"metadata":{"labels":{"ignored":"yes"}},"status":{"conditions":[{"type":"StatusPatched","status":"True","reason":"E2E"}]}}`),
		metav1.PatchOptions{}, "status"); err != nil || findCond(got.Status.Conditions, "StatusPatched") == nil || got.Labels["ignored"] != "" {
		t.Errorf("patch status: %v %+v", err, got)
	}
	pl, err := fc.PriorityLevelConfigurations().Get(ctx, "apf-queue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "StatusUpdated", Status: flowcontrolv1.ConditionTrue, Reason: "E2E"}}
	if pl, err = fc.PriorityLevelConfigurations().UpdateStatus(ctx, pl, metav1.UpdateOptions{}); err != nil || len(pl.Status.Conditions) != 1 {
		t.Errorf("priority level update status: %v %+v", err, pl)
	}

	// Mandatory objects come back; a suggested one its user took over stays.
	gd, err := fc.PriorityLevelConfigurations().Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gd.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	gd.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](21)
	if _, err := fc.PriorityLevelConfigurations().Update(ctx, gd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ca, err := fc.PriorityLevelConfigurations().Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](50)
	ca.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	if _, err := fc.PriorityLevelConfigurations().Update(ctx, ca, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fc.FlowSchemas().Delete(ctx, "exempt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, func() bool {
		ca, err := fc.PriorityLevelConfigurations().Get(ctx, "catch-all", metav1.GetOptions{})
		_, exemptErr := fc.FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{})
		return err == nil && *ca.Spec.Limited.NominalConcurrencyShares == 5 && ca.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] == "true" &&
			exemptErr == nil
	})
	if gd, err := fc.PriorityLevelConfigurations().Get(ctx, "global-default", metav1.GetOptions{}); err != nil || *gd.Spec.Limited.NominalConcurrencyShares != 21 {
		t.Errorf("global-default, taken over by its user, was changed: %v %v", gd.Spec.Limited, err)
	}

	if err := fc.FlowSchemas().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "e2e=apf"}); err != nil {
		t.Fatal(err)
	}
	if err := fc.PriorityLevelConfigurations().Delete(ctx, "apf-queue", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{LabelSelector: "e2e=apf"}); err != nil || len(list.Items) != 0 {
		t.Errorf("after delete collection: %v %v", list, err)
	}
}

func findCond(conds []flowcontrolv1.FlowSchemaCondition, typ flowcontrolv1.FlowSchemaConditionType) *flowcontrolv1.FlowSchemaCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// TestAPFWatchInitialization: a watch holds its seats only until it has
// sent its initial events: with a level of 3 seats held by 3 open
// watches, the same user's GET is served, not refused.
func TestAPFWatchInitialization(t *testing.T) {
	a, admin, cs := startAPF(t)
	ctx := context.Background()
	fc := cs.FlowcontrolV1()
	// One share of 246: ceil(600/246) = 3 seats, none lent or borrowed.
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "apf-three"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1), LendablePercent: ptr.To[int32](0),
				BorrowingLimitPercent: ptr.To[int32](0), LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 10}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "apf-three"},
		Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 400, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "apf-three"},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "watcher"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watcher := &rest.ImpersonationConfig{UserName: "watcher"}
	waitUntil(t, 10*time.Second, func() bool {
		resp := as(t, a, admin, watcher, "GET", "/api/v1/namespaces/default/configmaps")
		return apfNames(t, cs)[types.UID(resp.Header.Get(flowcontrol.HeaderFlowSchemaUID))] == "apf-three"
	})
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = *watcher
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := c.Get(a.URL + "/api/v1/namespaces/default/configmaps?watch=true")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %v %v", resp, err)
		}
		defer resp.Body.Close()
	}
	resp, err := c.Get(a.URL + "/api/v1/namespaces/default/configmaps?timeout=4s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a GET beside 3 open watches on a level of 3 seats: %d; the watches kept their seats", resp.StatusCode)
	}
}
