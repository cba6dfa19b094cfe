// WriteAdminKubeconfig: the administrator's kubeconfig with the client
// certificate and, if asked, the CA.

package pki

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteAdminKubeconfig writes path (mode 0600): a kubeconfig for server
// (https://host:port) authenticating with the administrator's certificate
// and key, embedded, in namespace default. With trustCA the cluster's
// certificate-authority-data is the generated CA; without it (a serving
// certificate not made here) it is left out, for the user to add.
func (f Files) WriteAdminKubeconfig(path, server string, trustCA bool) error {
	cert, err := os.ReadFile(f.AdminCert)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	key, err := os.ReadFile(f.AdminKey)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	cluster := clientcmdapi.NewCluster()
	cluster.Server = server
	if trustCA {
		if cluster.CertificateAuthorityData, err = os.ReadFile(f.CACert); err != nil {
			return fmt.Errorf("pki: %w", err)
		}
	}
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData, user.ClientKeyData = cert, key
	context := clientcmdapi.NewContext()
	context.Cluster, context.AuthInfo, context.Namespace = "watchcache", AdminUser, "default"
	config := clientcmdapi.NewConfig()
	config.Clusters["watchcache"] = cluster
	config.AuthInfos[AdminUser] = user
	config.Contexts["watchcache"] = context
	config.CurrentContext = "watchcache"
	data, err := clientcmd.Write(*config)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := writeFile(path, data, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}
