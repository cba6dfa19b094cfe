// kube-controller-manager's certificate and bootstrap token controllers
// (package certificates), as the controller manager runs them: signing
// with --cluster-signing-cert-file's CA or the generated one.

package app

import (
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/watchcache/watchcache/pkg/auth/authorizer"
	"github.com/watchcache/watchcache/pkg/controller"
	"github.com/watchcache/watchcache/pkg/controller/certificates"
	"github.com/watchcache/watchcache/pkg/pki"
	"github.com/watchcache/watchcache/pkg/resource"
)

// certificateControllers are the signer, approver, request cleaner and
// token cleaner. A signing CA given that cannot be read refuses the start
// (kube-controller-manager does not start then either); one that is not a
// client CA is warned about: the client certificates it signs would not
// authenticate here.
func (a *App) certificateControllers(cfg Config, registry *resource.Registry, z authorizer.Authorizer) ([]controller.Named, error) {
	signer := &certificates.Signer{Registry: registry, CACert: a.PKI.CACert, CAKey: a.PKI.CAKey, Duration: cfg.ClusterSigningDuration, Log: cfg.Log}
	if (cfg.ClusterSigningCertFile == "") != (cfg.ClusterSigningKeyFile == "") {
		return nil, errors.New("--cluster-signing-cert-file and --cluster-signing-key-file go together")
	}
	if cfg.ClusterSigningCertFile != "" {
		signer.CACert, signer.CAKey = cfg.ClusterSigningCertFile, cfg.ClusterSigningKeyFile
	}
	ca, _, err := pki.LoadCA(signer.CACert, signer.CAKey)
	if err != nil {
		return nil, fmt.Errorf("--cluster-signing-cert-file: %w", err)
	}
	if !trustedCA(ca, a.ClientCAs) {
		cfg.Log.Warn("the CA signing CertificateSigningRequests is not a client CA: the client certificates it signs will not authenticate "+
			"(add it to --client-ca-file)", "cluster-signing-cert-file", signer.CACert)
	}
	approver := &certificates.Approver{Registry: registry, Authorizer: z, Log: cfg.Log}
	cleaner := &certificates.Cleaner{Registry: registry, Log: cfg.Log}
	tokens := &certificates.TokenCleaner{Registry: registry, Log: cfg.Log}
	return []controller.Named{
		{Name: controller.CSRSigningController, Run: signer.Run},
		{Name: controller.CSRApprovingController, Run: approver.Run},
		{Name: controller.CSRCleanerController, Run: cleaner.Run},
		{Name: controller.TokenCleanerController, Run: tokens.Run},
	}, nil
}

// trustedCA reports whether ca itself verifies against pool.
func trustedCA(ca *x509.Certificate, pool *x509.CertPool) bool {
	_, err := ca.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}
