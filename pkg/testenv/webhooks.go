// Admission webhook configurations installed at start and pointed at a
// webhook server of the test's own, as envtest's WebhookInstallOptions.

package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/watchcache/watchcache/pkg/pki"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WebhookInstallOptions are admission webhook configurations to install,
// with the fields and meaning of envtest's: at start, each webhook that
// names a service path is pointed at https://LocalServingHost:LocalServingPort/<path>
// (a webhook server the test runs, say a controller-runtime manager's,
// with LocalServingCertDir's certificate), and every webhook trusts
// LocalServingCAData.
type WebhookInstallOptions struct {
	// Paths are files, or directories of *.yaml, *.yml and *.json files,
	// whose MutatingWebhookConfigurations and
	// ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1) are
	// installed; other documents (a kustomization, a Service) are skipped.
	Paths []string
	// MutatingWebhooks and ValidatingWebhooks are more configurations.
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	// IgnoreErrorIfPathMissing skips a missing path (otherwise Start fails).
	IgnoreErrorIfPathMissing bool

	// LocalServingHost is the address the webhook server listens on
	// (default 127.0.0.1), LocalServingPort its port (default: a free one,
	// chosen at start).
	LocalServingHost string
	LocalServingPort int
	// LocalServingHostExternalName, if set, is the host the API server
	// calls instead of LocalServingHost.
	LocalServingHostExternalName string
	// LocalServingCertDir, set at start, holds tls.crt and tls.key: the
	// webhook server's certificate for localhost and the hosts above.
	// Stop removes it.
	LocalServingCertDir string
	// LocalServingCAData, set at start, is the PEM of the CA that signed
	// it, the webhooks' caBundle.
	LocalServingCAData []byte
}

// webhookInstallTimeout bounds the wait until the admission chain sees
// the installed configurations.
const webhookInstallTimeout = 30 * time.Second

// prepare reads the configurations of Paths, chooses the port, writes the
// serving certificate and points every webhook at the local server.
func (o *WebhookInstallOptions) prepare() error {
	for _, path := range o.Paths {
		files, err := manifestFiles(path)
		if errors.Is(err, os.ErrNotExist) && o.IgnoreErrorIfPathMissing {
			continue
		}
		if err != nil {
			return err
		}
		for _, file := range files {
			if err := o.readFile(file); err != nil {
				return err
			}
		}
	}
	if len(o.MutatingWebhooks) == 0 && len(o.ValidatingWebhooks) == 0 {
		return nil
	}
	if o.LocalServingHost == "" {
		o.LocalServingHost = "127.0.0.1"
	}
	if o.LocalServingPort == 0 {
		port, err := freePort(o.LocalServingHost)
		if err != nil {
			return fmt.Errorf("testenv: a port for the webhook server: %w", err)
		}
		o.LocalServingPort = port
	}
	dir, err := os.MkdirTemp("", "watchcache-testenv-webhook-")
	if err != nil {
		return err
	}
	o.LocalServingCertDir = dir
	hosts := []string{"localhost", o.LocalServingHost}
	if o.LocalServingHostExternalName != "" {
		hosts = append(hosts, o.LocalServingHostExternalName)
	}
	if o.LocalServingCAData, err = pki.NewServingCert(dir, hosts); err != nil {
		return err
	}
	host := o.LocalServingHost
	if o.LocalServingHostExternalName != "" {
		host = o.LocalServingHostExternalName
	}
	hostPort := net.JoinHostPort(host, strconv.Itoa(o.LocalServingPort))
	for _, c := range o.MutatingWebhooks {
		for i := range c.Webhooks {
			pointAt(&c.Webhooks[i].ClientConfig, hostPort, o.LocalServingCAData)
		}
	}
	for _, c := range o.ValidatingWebhooks {
		for i := range c.Webhooks {
			pointAt(&c.Webhooks[i].ClientConfig, hostPort, o.LocalServingCAData)
		}
	}
	return nil
}

// pointAt makes a webhook that names a service path call it on the local
// server instead, as envtest does (one with a URL keeps it), and trust ca.
func pointAt(cc *admissionregistrationv1.WebhookClientConfig, hostPort string, ca []byte) {
	cc.CABundle = ca
	if cc.Service != nil && cc.Service.Path != nil {
		url := "https://" + hostPort + *cc.Service.Path
		cc.URL, cc.Service = &url, nil
	}
}

// freePort is a port free on host now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readFile adds the webhook configurations of a file of YAML or JSON
// documents.
func (o *WebhookInstallOptions) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var doc json.RawMessage
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("testenv: %s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(doc, &meta); err != nil {
			continue // not an object (an empty document)
		}
		var into any
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			o.MutatingWebhooks, into = append(o.MutatingWebhooks, c), c
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			o.ValidatingWebhooks, into = append(o.ValidatingWebhooks, c), c
		default:
			continue
		}
		if meta.APIVersion != "admissionregistration.k8s.io/v1" {
			return fmt.Errorf("testenv: %s: %s is %s, not admissionregistration.k8s.io/v1", path, meta.Kind, meta.APIVersion)
		}
		if err := json.Unmarshal(doc, into); err != nil {
			return fmt.Errorf("testenv: %s: %w", path, err)
		}
	}
}

// install creates the configurations (in a new, empty server) and returns once the
// watch cache, which the admission chain reads, holds them all.
func (o *WebhookInstallOptions) install(ctx context.Context, cfg *rest.Config) error {
	if len(o.MutatingWebhooks) == 0 && len(o.ValidatingWebhooks) == 0 {
		return nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mutating := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	validating := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	pending := map[string]bool{} // kind/name
	for _, c := range o.MutatingWebhooks {
		pending["mutating/"+c.Name] = true
		if _, err := mutating.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("testenv: MutatingWebhookConfiguration %s: %w", c.Name, err)
		}
	}
	for _, c := range o.ValidatingWebhooks {
		pending["validating/"+c.Name] = true
		if _, err := validating.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("testenv: ValidatingWebhookConfiguration %s: %w", c.Name, err)
		}
	}
	// Lists at resourceVersion 0 are the watch cache's, as the admission
	// chain's reads are.
	any0 := metav1.ListOptions{ResourceVersion: "0"}
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, webhookInstallTimeout, true, func(ctx context.Context) (bool, error) {
		ms, err := mutating.List(ctx, any0)
		if err != nil {
			return false, err
		}
		vs, err := validating.List(ctx, any0)
		if err != nil {
			return false, err
		}
		seen := 0
		for _, c := range ms.Items {
			if pending["mutating/"+c.Name] {
				seen++
			}
		}
		for _, c := range vs.Items {
			if pending["validating/"+c.Name] {
				seen++
			}
		}
		return seen == len(pending), nil
	})
}
