package cli

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
)

// memberKubeconfig is the kubeconfig the hub gets for a member: its server, its CA and the ServiceAccount's
// token, all inline. It has no exec plugin, no file path and no proxy, so that it passes the manager's gate; the
// output is deterministic, so that joining again with the same token writes the same bytes.
func memberKubeconfig(member, server string, caData []byte, tlsServerName, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[member] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caData,
		TLSServerName:            tlsServerName,
	}
	cfg.AuthInfos[ServiceAccountName] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[member] = &clientcmdapi.Context{Cluster: member, AuthInfo: ServiceAccountName}
	cfg.CurrentContext = member
	return clientcmd.Write(*cfg)
}

// registeredToken is the token of a registration's kubeconfig, if the kubeconfig passes the gate.
func registeredToken(data []byte) string {
	cfg, err := kubeconfig.Validate(data, kubeconfig.Options{})
	if err != nil {
		return ""
	}
	return cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].Token
}
