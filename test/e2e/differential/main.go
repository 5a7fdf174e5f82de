// Command differential answers, for the cases of test/e2e/differential.test.ts, what the Go reference does:
// cluster-inventory-api v0.1.0 pkg/access (NewFromFile, BuildConfigFromCP) for a providers file and ClusterProfiles,
// and client-go's exec authenticator for what a plugin prints.
//
//	differential < cases.jsonl > results.jsonl
//
// One JSON request per line on stdin, one JSON response per line on stdout, in order:
//
//	{"id":"a","kind":"resolve","providersFile":"<text>","profiles":["<json>",...],"shared":false}
//	{"id":"b","kind":"output","apiVersion":"client.authentication.k8s.io/v1","stdout":"<text>"}
//
// A resolve request loads the providers file with access.NewFromFile and calls BuildConfigFromCP for each profile in
// order: with "shared" false from a fresh load each time, with "shared" true on one loaded Config (what a controller
// does, and where upstream's mutation of the Config shows). An output request decodes the text with the decoder and
// the checks of exec.go's refreshCredsLocked and also runs a real exec.GetAuthenticator whose plugin (this binary,
// `differential --print FILE`) prints the same text; both answers are reported.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	"k8s.io/client-go/pkg/apis/clientauthentication/install"
	clientauthenticationv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientauthenticationv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"
	"k8s.io/client-go/plugin/pkg/client/auth/exec"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	kjson "sigs.k8s.io/json"
)

// The scheme and codecs of client-go's exec package, built the same way (they are unexported there).
var (
	scheme      = runtime.NewScheme()
	codecs      = serializer.NewCodecFactory(scheme)
	apiVersions = map[string]schema.GroupVersion{
		clientauthenticationv1beta1.SchemeGroupVersion.String(): clientauthenticationv1beta1.SchemeGroupVersion,
		clientauthenticationv1.SchemeGroupVersion.String():      clientauthenticationv1.SchemeGroupVersion,
	}
)

func init() {
	install.Install(scheme)
}

type request struct {
	ID            string   `json:"id"`
	Kind          string   `json:"kind"`
	ProvidersFile string   `json:"providersFile"`
	Profiles      []string `json:"profiles"`
	Shared        bool     `json:"shared"`
	APIVersion    string   `json:"apiVersion"`
	Stdout        string   `json:"stdout"`
}

type response struct {
	ID      string          `json:"id"`
	Resolve []resolveResult `json:"resolve,omitempty"`
	Output  *outputResult   `json:"output,omitempty"`
	// A request the driver could not serve (not an answer of the reference).
	DriverError string `json:"driverError,omitempty"`
}

// resolveResult: Stage is "providers" (NewFromFile failed), "profile" (the profile JSON does not decode into
// v1alpha1.ClusterProfile), "build" (BuildConfigFromCP failed), "panic" (BuildConfigFromCP panicked) or "ok".
type resolveResult struct {
	Stage  string      `json:"stage"`
	Error  string      `json:"error,omitempty"`
	Config *configView `json:"config,omitempty"`
}

type configView struct {
	Host               string `json:"host"`
	CAData             string `json:"caData"` // base64 of rest.Config.CAData
	ServerName         string `json:"serverName"`
	Insecure           bool   `json:"insecure"`
	DisableCompression bool   `json:"disableCompression"`
	// What rest.Config.Proxy answers for a request to Host (as rest.ConfigToExecCluster asks it).
	Proxy      string   `json:"proxy"`
	ProxyError string   `json:"proxyError,omitempty"`
	Exec       execView `json:"exec"`
	// KUBERNETES_EXEC_INFO exactly as exec.go encodes it for this config (interactive false).
	ExecInfo      json.RawMessage `json:"execInfo,omitempty"`
	ExecInfoError string          `json:"execInfoError,omitempty"`
	// rest.HTTPClientFor(config): what fails when the config is used (CA PEM, exec apiVersion, ...).
	ClientError string `json:"clientError,omitempty"`
}

type execView struct {
	Command            string          `json:"command"`
	Args               []string        `json:"args"`
	Env                []envVar        `json:"env"`
	APIVersion         string          `json:"apiVersion"`
	InstallHint        string          `json:"installHint"`
	ProvideClusterInfo bool            `json:"provideClusterInfo"`
	InteractiveMode    string          `json:"interactiveMode"`
	Config             json.RawMessage `json:"config"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type outputResult struct {
	Decode        credentialView `json:"decode"`
	Authenticator credentialView `json:"authenticator"`
}

type credentialView struct {
	Error   string `json:"error,omitempty"`
	Token   string `json:"token"`
	HasCert bool   `json:"hasCert"`
	// Expiry in epoch milliseconds (decode only; the authenticator keeps it private), null when none.
	ExpiresAt *int64 `json:"expiresAt"`
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "--print" {
		// Plugin mode: print a case's stdout verbatim.
		data, err := os.ReadFile(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_, _ = os.Stdout.Write(data)
		return
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "differential: %v\n", err)
		os.Exit(1)
	}
}

func serve(in io.Reader, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "differential-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer)
	encoder.SetEscapeHTML(false)
	for n := 0; scanner.Scan(); n++ {
		var req request
		var res response
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			res.DriverError = fmt.Sprintf("bad request line %d: %v", n+1, err)
		} else {
			res.ID = req.ID
			switch req.Kind {
			case "resolve":
				res.Resolve = resolveCase(filepath.Join(dir, "providers-"+strconv.Itoa(n)+".json"), req)
			case "output":
				output := outputCase(self, filepath.Join(dir, "stdout-"+strconv.Itoa(n)), req)
				res.Output = &output
			default:
				res.DriverError = fmt.Sprintf("unknown kind %q", req.Kind)
			}
		}
		if err := encoder.Encode(res); err != nil {
			return err
		}
		if err := writer.Flush(); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func resolveCase(path string, req request) []resolveResult {
	if err := os.WriteFile(path, []byte(req.ProvidersFile), 0o600); err != nil {
		panic(err)
	}
	defer os.Remove(path)
	var shared *access.Config
	var sharedErr error
	if req.Shared {
		shared, sharedErr = access.NewFromFile(path)
	}
	results := make([]resolveResult, 0, len(req.Profiles))
	for _, text := range req.Profiles {
		cfg, err := shared, sharedErr
		if !req.Shared {
			cfg, err = access.NewFromFile(path)
		}
		if err != nil {
			results = append(results, resolveResult{Stage: "providers", Error: err.Error()})
			continue
		}
		// What a typed client does with the object the API server sends: kube's JSON serializer decodes with
		// sigs.k8s.io/json (case-sensitive field names, unknown fields dropped). The apiVersion is not checked: the
		// v1alpha2 cases use the same Go type, the only one BuildConfigFromCP takes.
		var profile v1alpha1.ClusterProfile
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(text), &profile); err != nil {
			results = append(results, resolveResult{Stage: "profile", Error: err.Error()})
			continue
		}
		config, err, panicked := buildConfig(cfg, &profile)
		if panicked != nil {
			results = append(results, resolveResult{Stage: "panic", Error: fmt.Sprint(panicked)})
			continue
		}
		if err != nil {
			results = append(results, resolveResult{Stage: "build", Error: err.Error()})
			continue
		}
		// Read now: a shared Config's next call may change what these slices hold.
		results = append(results, resolveResult{Stage: "ok", Config: viewConfig(config)})
	}
	return results
}

// buildConfig calls BuildConfigFromCP and turns a panic (it has some) into a result.
func buildConfig(cfg *access.Config, profile *v1alpha1.ClusterProfile) (config *rest.Config, err error, panicked any) {
	defer func() { panicked = recover() }()
	config, err = cfg.BuildConfigFromCP(profile)
	return config, err, nil
}

func viewConfig(config *rest.Config) *configView {
	view := &configView{
		Host:               config.Host,
		CAData:             base64.StdEncoding.EncodeToString(config.CAData),
		ServerName:         config.ServerName,
		Insecure:           config.Insecure,
		DisableCompression: config.DisableCompression,
	}
	if config.Proxy != nil {
		req, err := http.NewRequest("", config.Host, nil)
		if err != nil {
			view.ProxyError = err.Error()
		} else if proxy, err := config.Proxy(req); err != nil {
			view.ProxyError = err.Error()
		} else if proxy != nil {
			view.Proxy = proxy.String()
		}
	}
	ep := config.ExecProvider
	view.Exec = execView{
		Command:            ep.Command,
		Args:               append([]string{}, ep.Args...),
		Env:                []envVar{},
		APIVersion:         ep.APIVersion,
		InstallHint:        ep.InstallHint,
		ProvideClusterInfo: ep.ProvideClusterInfo,
		InteractiveMode:    string(ep.InteractiveMode),
		Config:             json.RawMessage("null"),
	}
	for _, v := range ep.Env {
		view.Exec.Env = append(view.Exec.Env, envVar{Name: v.Name, Value: v.Value})
	}
	if ep.Config != nil {
		if unknown, ok := ep.Config.(*runtime.Unknown); ok {
			view.Exec.Config = json.RawMessage(unknown.Raw)
		} else {
			view.Exec.Config = json.RawMessage(strconv.Quote(fmt.Sprintf("unexpected %T", ep.Config)))
		}
	}

	// exec.go refreshCredsLocked: the cluster from rest.ConfigToExecCluster (rest/transport.go), encoded with the
	// legacy codec of the configured version.
	if gv, ok := apiVersions[ep.APIVersion]; !ok {
		view.ExecInfoError = fmt.Sprintf("exec plugin: invalid apiVersion %q", ep.APIVersion)
	} else if cluster, err := rest.ConfigToExecCluster(config); err != nil {
		view.ExecInfoError = err.Error()
	} else {
		cred := &clientauthentication.ExecCredential{Spec: clientauthentication.ExecCredentialSpec{Interactive: false}}
		if ep.ProvideClusterInfo {
			cred.Spec.Cluster = cluster
		}
		data, err := runtime.Encode(codecs.LegacyCodec(gv), cred)
		if err != nil {
			view.ExecInfoError = fmt.Sprintf("encode ExecCredentials: %v", err)
		} else {
			view.ExecInfo = json.RawMessage(strings.TrimSpace(string(data)))
		}
	}
	if _, err := rest.HTTPClientFor(config); err != nil {
		view.ClientError = err.Error()
	}
	return view
}

func outputCase(self, path string, req request) outputResult {
	return outputResult{
		Decode:        decodeLikeExecGo(req.APIVersion, []byte(req.Stdout)),
		Authenticator: runAuthenticator(self, path, req),
	}
}

// decodeLikeExecGo is exec.go refreshCredsLocked from the decode of stdout on, without the process.
func decodeLikeExecGo(apiVersion string, stdout []byte) credentialView {
	gv, ok := apiVersions[apiVersion]
	if !ok {
		return credentialView{Error: fmt.Sprintf("exec plugin: invalid apiVersion %q", apiVersion)}
	}
	cred := &clientauthentication.ExecCredential{}
	_, gvk, err := codecs.UniversalDecoder(gv).Decode(stdout, nil, cred)
	if err != nil {
		return credentialView{Error: fmt.Sprintf("decoding stdout: %v", err)}
	}
	if gvk.Group != gv.Group || gvk.Version != gv.Version {
		return credentialView{Error: fmt.Sprintf("exec plugin is configured to use API version %s, plugin returned version %s",
			gv, schema.GroupVersion{Group: gvk.Group, Version: gvk.Version})}
	}
	if cred.Status == nil {
		return credentialView{Error: "exec plugin didn't return a status field"}
	}
	if cred.Status.Token == "" && cred.Status.ClientCertificateData == "" && cred.Status.ClientKeyData == "" {
		return credentialView{Error: "exec plugin didn't return a token or cert/key pair"}
	}
	if (cred.Status.ClientCertificateData == "") != (cred.Status.ClientKeyData == "") {
		return credentialView{Error: "exec plugin returned only certificate or key, not both"}
	}
	view := credentialView{Token: cred.Status.Token}
	if cred.Status.ExpirationTimestamp != nil {
		ms := cred.Status.ExpirationTimestamp.Time.UnixMilli()
		view.ExpiresAt = &ms
	}
	if cred.Status.ClientKeyData != "" && cred.Status.ClientCertificateData != "" {
		cert, err := tls.X509KeyPair([]byte(cred.Status.ClientCertificateData), []byte(cred.Status.ClientKeyData))
		if err != nil {
			return credentialView{Error: fmt.Sprintf("failed parsing client key/certificate: %v", err)}
		}
		if _, err := x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return credentialView{Error: fmt.Sprintf("failed parsing client leaf certificate: %v", err)}
		}
		view.HasCert = true
	}
	return view
}

type recorder struct{ authorization string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.authorization = req.Header.Get("Authorization")
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// runAuthenticator asks a real exec authenticator for credentials; its plugin prints the case's stdout.
func runAuthenticator(self, path string, req request) credentialView {
	if err := os.WriteFile(path, []byte(req.Stdout), 0o600); err != nil {
		panic(err)
	}
	defer os.Remove(path)
	// A distinct path per case: GetAuthenticator caches authenticators by config.
	config := &clientcmdapi.ExecConfig{
		Command:         self,
		Args:            []string{"--print", path},
		APIVersion:      req.APIVersion,
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}
	authenticator, err := exec.GetAuthenticator(config, &clientauthentication.Cluster{})
	if err != nil {
		return credentialView{Error: err.Error()}
	}
	tc := &transport.Config{}
	if err := authenticator.UpdateTransportConfig(tc); err != nil {
		return credentialView{Error: err.Error()}
	}
	base := &recorder{}
	httpReq, _ := http.NewRequest(http.MethodGet, "https://cluster.invalid/api", nil)
	if _, err := tc.WrapTransport(base).RoundTrip(httpReq); err != nil {
		return credentialView{Error: strings.TrimPrefix(err.Error(), "getting credentials: ")}
	}
	view := credentialView{Token: strings.TrimPrefix(base.authorization, "Bearer ")}
	cert, err := tc.TLS.GetCertHolder.GetCert()
	if err != nil {
		return credentialView{Error: err.Error()}
	}
	view.HasCert = cert != nil
	return view
}
