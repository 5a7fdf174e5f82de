// Command liqo runs Liqo v1.2.0's own consumer-side code of the Tenant/Identity handshake for
// test/e2e/tenant-cert-liqo.test.ts: the CSR and nonce signature of `liqoctl generate tenant`
// (pkg/liqo-controller-manager/authentication), the Tenant it forges (…/authentication/forge.TenantForRemoteCluster),
// the provider's CSR check and the authorizer's control-plane test (CheckCSRForControlPlane, IsControlPlaneUser), and
// the kubeconfig Secret the Identity controller forges from an Identity (forge.MutateKubeconfigSecret).
//
//	liqo < request.json > response.json
//
// One JSON request on stdin, one JSON response on stdout; a Liqo error is reported as {"error": "..."} with exit 0,
// a driver failure (bad request) exits 1. Keys are PKCS#8 PEM, as `clusterprofile keygen` writes them.
// Built by ../controlplane/build.mjs.
package main

import (
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	"github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication"
	"github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication/forge"
)

type request struct {
	// "tenant": the consumer's Tenant for Key, ClusterID, Nonce (and ProxyURL, Namespace).
	// "check-csr": the provider's check of CSR (PEM) against PublicKey (PEM) for ClusterID, and the organizations.
	// "authorize": whether a certificate (PEM) is a Liqo control-plane user by its organizations.
	// "kubeconfig": the kubeconfig Secret forged from Identity (a Liqo Identity object) and Key.
	Kind        string          `json:"kind"`
	Key         string          `json:"key,omitempty"`
	ClusterID   string          `json:"clusterID,omitempty"`
	Nonce       string          `json:"nonce,omitempty"`
	ProxyURL    string          `json:"proxyURL,omitempty"`
	Namespace   string          `json:"namespace,omitempty"`
	CSR         string          `json:"csr,omitempty"`
	PublicKey   string          `json:"publicKey,omitempty"`
	Certificate string          `json:"certificate,omitempty"`
	Identity    json.RawMessage `json:"identity,omitempty"`
}

type response struct {
	Error         string              `json:"error,omitempty"`
	Tenant        *authv1beta1.Tenant `json:"tenant,omitempty"`
	Organizations []string            `json:"organizations,omitempty"`
	ControlPlane  *bool               `json:"controlPlane,omitempty"`
	Kubeconfig    string              `json:"kubeconfig,omitempty"`
	Labels        map[string]string   `json:"labels,omitempty"`
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail(fmt.Errorf("decoding the request: %w", err))
	}
	res, err := answer(req)
	if err != nil {
		res = response{Error: err.Error()}
	}
	out, err := json.Marshal(res)
	if err != nil {
		fail(err)
	}
	_, _ = os.Stdout.Write(append(out, '\n'))
}

func answer(req request) (response, error) {
	switch req.Kind {
	case "tenant":
		key := privateKey(req.Key)
		csr, err := authentication.GenerateCSRForControlPlane(key, liqov1beta1.ClusterID(req.ClusterID))
		if err != nil {
			return response{}, err
		}
		signature, err := authentication.SignNonce(key, []byte(req.Nonce))
		if err != nil {
			return response{}, err
		}
		publicDER, err := x509.MarshalPKIXPublicKey(key.(interface{ Public() crypto.PublicKey }).Public())
		if err != nil {
			return response{}, err
		}
		tenant := forge.TenantForRemoteCluster(liqov1beta1.ClusterID(req.ClusterID), publicDER, csr, signature,
			&req.Namespace, &req.ProxyURL)
		return response{Tenant: tenant}, nil
	case "check-csr":
		block, _ := pem.Decode([]byte(req.PublicKey))
		if block == nil {
			fail(fmt.Errorf("publicKey is not PEM"))
		}
		csrBlock, _ := pem.Decode([]byte(req.CSR))
		if csrBlock == nil {
			fail(fmt.Errorf("csr is not PEM"))
		}
		parsed, err := x509.ParseCertificateRequest(csrBlock.Bytes)
		if err != nil {
			fail(err)
		}
		res := response{Organizations: parsed.Subject.Organization}
		if err := authentication.CheckCSRForControlPlane([]byte(req.CSR), block.Bytes,
			liqov1beta1.ClusterID(req.ClusterID)); err != nil {
			res.Error = err.Error()
		}
		return res, nil
	case "authorize":
		block, _ := pem.Decode([]byte(req.Certificate))
		if block == nil {
			fail(fmt.Errorf("certificate is not PEM"))
		}
		certificate, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			fail(err)
		}
		controlPlane := authentication.IsControlPlaneUser(certificate.Subject.Organization)
		return response{Organizations: certificate.Subject.Organization, ControlPlane: &controlPlane}, nil
	case "kubeconfig":
		var identity authv1beta1.Identity
		if err := json.Unmarshal(req.Identity, &identity); err != nil {
			fail(fmt.Errorf("decoding the Identity: %w", err))
		}
		secret := forge.KubeconfigSecret(&identity)
		var namespace *string
		if req.Namespace != "" {
			namespace = &req.Namespace
		}
		if err := forge.MutateKubeconfigSecret(secret, &identity, []byte(req.Key), namespace); err != nil {
			return response{}, err
		}
		return response{Kubeconfig: string(secret.Data[consts.KubeconfigSecretField]), Labels: secret.Labels}, nil
	}
	fail(fmt.Errorf("unknown kind %q", req.Kind))
	return response{}, nil
}

func privateKey(text string) crypto.Signer {
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		fail(fmt.Errorf("key is not PEM"))
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		fail(err)
	}
	return key.(crypto.Signer)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "liqo driver: %s\n", err)
	os.Exit(1)
}
