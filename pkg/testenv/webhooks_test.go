package testenv

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// webhookManifests are a kubebuilder project's config/webhook: the
// configurations, naming a service path each, beside a kustomization and
// a Service that are not installed.
const webhookManifests = `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating}
webhooks:
- name: mlabel.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating}
webhooks:
- name: vname.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {service: {name: webhook-service, namespace: system, path: /validate}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
`

func writeWebhookDir(t *testing.T, manifests string) string {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"manifests.yaml":     manifests,
		"kustomization.yaml": "resources: [manifests.yaml, service.yaml]\n",
		"service.yaml":       "apiVersion: v1\nkind: Service\nmetadata: {name: webhook-service, namespace: system}\n",
		"README.md":          "not a manifest",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serveWebhooks serves, as the test's webhook server would, /mutate (adds
// the label webhook=called) and /validate (refuses the name "denied") on
// the options' host and port with their certificate.
func serveWebhooks(t *testing.T, o *WebhookInstallOptions) {
	review := func(w http.ResponseWriter, r *http.Request, answer func(*admissionv1.AdmissionRequest, *admissionv1.AdmissionResponse)) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
		answer(in.Request, resp)
		in.Response, in.Request = resp, nil
		json.NewEncoder(w).Encode(in)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(_ *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType, resp.Patch = &pt, []byte(`[{"op":"add","path":"/metadata/labels","value":{"webhook":"called"}}]`)
		})
	})
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			if req.Name == "denied" {
				resp.Allowed, resp.Result = false, &metav1.Status{Message: "the name is denied", Code: http.StatusForbidden}
			}
		})
	})
	l, err := net.Listen("tcp", net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.ServeTLS(l, filepath.Join(o.LocalServingCertDir, "tls.crt"), filepath.Join(o.LocalServingCertDir, "tls.key"))
	t.Cleanup(func() { srv.Close() })
}

// TestWebhookInstallOptions: the configurations of the paths are
// installed pointed at the local server, which the API server calls with
// the generated certificate; other documents are skipped; Stop removes
// the certificate.
func TestWebhookInstallOptions(t *testing.T) {
	env := &Environment{WebhookInstallOptions: WebhookInstallOptions{
		Paths: []string{writeWebhookDir(t, webhookManifests), "missing"}, IgnoreErrorIfPathMissing: true}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	o := &env.WebhookInstallOptions
	if o.LocalServingHost != "127.0.0.1" || o.LocalServingPort == 0 || len(o.MutatingWebhooks) != 1 || len(o.ValidatingWebhooks) != 1 {
		t.Fatalf("options after start: %+v", o)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stored, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "validating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc := stored.Webhooks[0].ClientConfig
	if want := "https://127.0.0.1:" + strconv.Itoa(o.LocalServingPort) + "/validate"; cc.URL == nil || *cc.URL != want || cc.Service != nil || string(cc.CABundle) != string(o.LocalServingCAData) {
		t.Fatalf("stored client config %+v, want the URL %s and the CA", cc, want)
	}

	serveWebhooks(t, o)
	configMaps := client.CoreV1().ConfigMaps("default")
	created, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowed"}}, metav1.CreateOptions{})
	if err != nil || created.Labels["webhook"] != "called" {
		t.Fatalf("created %v, %v: the mutating webhook was not called", created.Labels, err)
	}
	_, err = configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `admission webhook "vname.example.com" denied the request: the name is denied`) {
		t.Fatalf("denied: %v", err)
	}

	certDir := o.LocalServingCertDir
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(certDir); !os.IsNotExist(err) {
		t.Errorf("the serving certificate's directory is left: %v", err)
	}
}

// TestWebhookInstallOptionsErrors: a missing path (unless ignored) and a
// configuration of another version fail the start.
func TestWebhookInstallOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		o    WebhookInstallOptions
		want string
	}{
		{WebhookInstallOptions{Paths: []string{"missing"}}, "missing: no such file"},
		{WebhookInstallOptions{Paths: []string{writeWebhookDir(t, strings.Replace(webhookManifests, "admissionregistration.k8s.io/v1\n", "admissionregistration.k8s.io/v1beta1\n", 1))}},
			"MutatingWebhookConfiguration is admissionregistration.k8s.io/v1beta1, not admissionregistration.k8s.io/v1"},
	} {
		env := &Environment{WebhookInstallOptions: c.o}
		if _, err := env.Start(); err == nil || !strings.Contains(err.Error(), c.want) {
			env.Stop()
			t.Errorf("%v: %v, want %q", c.o.Paths, err, c.want)
		}
	}
}
