// Flags of authentication, authorization, encryption at rest and audit, named
// and defaulted as kube-apiserver's, and the repeatable list flag they use.

package main

import (
	"flag"
	"strings"
	"time"

	"github.com/watchcache/watchcache/pkg/app"
	"github.com/watchcache/watchcache/pkg/audit"
)

// addSecurityFlags adds kube-apiserver's flags of authentication,
// authorization, encryption at rest and audit, with its defaults.
func addSecurityFlags(fs *flag.FlagSet, c *app.Config) {
	c.AuthorizationModes = []string{app.ModeRBAC}
	fs.Func("authorization-mode", "comma-separated authorizers, asked in order: RBAC (default; kube-apiserver's is AlwaysAllow), Node, AlwaysAllow, AlwaysDeny", func(v string) error {
		c.AuthorizationModes = nil
		return listFlag(&c.AuthorizationModes)(v)
	})
	fs.Func("enable-admission-plugins", "comma-separated admission plugins to run besides kube-apiserver's defaults (kube-apiserver's names; watchcache runs LimitRanger, ServiceAccount, NodeRestriction, Priority, DefaultStorageClass, DefaultIngressClass and the admission policies and webhooks; others are accepted with a warning)", listFlag(&c.EnableAdmissionPlugins))
	fs.Func("disable-admission-plugins", "comma-separated admission plugins not to run, of kube-apiserver's defaults", listFlag(&c.DisableAdmissionPlugins))
	fs.BoolVar(&c.AnonymousAuth, "anonymous-auth", true, "serve requests without credentials as system:anonymous (group system:unauthenticated), which RBAC lets reach only /version and the health checks")
	fs.StringVar(&c.TokenAuthFile, "token-auth-file", "", "static bearer tokens, one per line: token,user,uid[,\"group1,group2\"]")
	fs.BoolVar(&c.EnableBootstrapTokenAuth, "enable-bootstrap-token-auth", false, "accept bootstrap tokens <id>.<secret> of bootstrap.kubernetes.io/token Secrets bootstrap-token-<id> in kube-system, as user system:bootstrap:<id> in group system:bootstrappers, for kubelets' TLS bootstrap")
	fs.StringVar(&c.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "private key (PEM) that signs ServiceAccount tokens (default: <data-dir>/pki/sa.key, generated)")
	fs.Func("service-account-key-file", "public or private key (PEM) that verifies ServiceAccount tokens besides the signing key (repeatable)", listFlag(&c.ServiceAccountKeyFiles))
	fs.Func("service-account-issuer", "issuer of ServiceAccount tokens; the first issues, all are accepted (repeatable; default https://kubernetes.default.svc.cluster.local)", listFlag(&c.ServiceAccountIssuers))
	fs.Func("api-audiences", "comma-separated audiences of the API; a ServiceAccount token must be for one of them (default: the issuer)", listFlag(&c.APIAudiences))
	fs.StringVar(&c.EncryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file (apiserver.config.k8s.io/v1): how resources are encrypted in etcd")
	fs.StringVar(&c.AuditLogPath, "audit-log-path", "", "write audit.k8s.io/v1 events as JSON lines to this file ('-': standard output)")
	fs.StringVar(&c.AuditPolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy (YAML or JSON) deciding each request's audit level and stages (default: every request at Metadata, without RequestReceived; kube-apiserver logs nothing without one)")
	fs.StringVar(&c.AuditWebhook.ConfigFile, "audit-webhook-config-file", "", "kubeconfig of the audit webhook, to which events are POSTed as an audit.k8s.io/v1 EventList")
	fs.StringVar(&c.AuditWebhook.Mode, "audit-webhook-mode", audit.ModeBatch, "how events are sent to the webhook: batch (in the background, dropped if the buffer is full) or blocking (each before the request goes on)")
	fs.IntVar(&c.AuditWebhook.BatchBufferSize, "audit-webhook-batch-buffer-size", 10000, "events buffered for the webhook's batches; more are dropped")
	fs.IntVar(&c.AuditWebhook.BatchMaxSize, "audit-webhook-batch-max-size", 400, "most events in one webhook batch")
	fs.DurationVar(&c.AuditWebhook.BatchMaxWait, "audit-webhook-batch-max-wait", 30*time.Second, "longest a webhook batch waits to fill")
	fs.DurationVar(&c.AuditWebhook.InitialBackoff, "audit-webhook-initial-backoff", 10*time.Second, "wait before the first retry of a failed webhook request (then 1.5 times longer, 4 retries)")
	fs.IntVar(&c.AuditLogMaxSize, "audit-log-maxsize", 0, "megabytes of the audit log before it is rotated (0: 100)")
	fs.IntVar(&c.AuditLogMaxBackups, "audit-log-maxbackup", 0, "rotated audit logs to keep (0: all)")
	fs.IntVar(&c.AuditLogMaxAge, "audit-log-maxage", 0, "days to keep rotated audit logs (0: forever)")
}

// listFlag is a repeatable flag of comma-separated values appended to dst.
func listFlag(dst *[]string) func(string) error {
	return func(v string) error {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*dst = append(*dst, item)
			}
		}
		return nil
	}
}
