// Command kubeconfig-differential answers, for test/fuzz/kubeconfig-target.ts, what client-go's clientcmd makes of a
// kubeconfig: the deferred loading rules kubectl uses (an explicit file, else the KUBECONFIG list, else
// $HOME/.kube/config; merged, first file wins), then the rest.Config of the chosen context with its files loaded.
//
//	kubeconfig-differential < requests.jsonl > answers.jsonl
//
// One JSON request per line on stdin, one JSON answer per line on stdout, in order:
//
//	{"id":"1","cwd":"/tmp/x","explicit":"a.yaml","kubeconfig":"a.yaml:b.yaml","home":"/tmp/x/home","context":""}
//	{"id":"1","server":"https://...","ca":"<PEM>","tlsServerName":"","insecure":false,"proxy":"","credential":"token:...","namespace":"default"}
//	{"id":"1","error":"<clientcmd's message>"}
//
// Relative paths resolve against "cwd" (the process changes into it for each request, as kubectl would run there).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type request struct {
	ID         string `json:"id"`
	Cwd        string `json:"cwd"`
	Explicit   string `json:"explicit"`
	Kubeconfig string `json:"kubeconfig"`
	Home       string `json:"home"`
	Context    string `json:"context"`
}

type answer struct {
	ID            string `json:"id"`
	Error         string `json:"error,omitempty"`
	Server        string `json:"server,omitempty"`
	CA            string `json:"ca,omitempty"`
	TLSServerName string `json:"tlsServerName,omitempty"`
	Insecure      bool   `json:"insecure,omitempty"`
	Proxy         string `json:"proxy,omitempty"`
	Credential    string `json:"credential,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
}

// credentialOf says where the credential comes from, in the form the TypeScript side writes: an exec command, a
// client certificate (its PEM), a bearer token (as client-go's transport sends it: a token file's content trimmed), or
// none.
func credentialOf(config *rest.Config) string {
	switch {
	case config.ExecProvider != nil:
		return "exec:" + config.ExecProvider.Command + " " + strings.Join(config.ExecProvider.Args, " ")
	case config.AuthProvider != nil:
		return "auth-provider:" + config.AuthProvider.Name
	case len(config.TLSClientConfig.CertData) > 0:
		return "certificate:" + string(config.TLSClientConfig.CertData) + "|" + string(config.TLSClientConfig.KeyData)
	case config.BearerTokenFile != "":
		token, err := os.ReadFile(config.BearerTokenFile)
		if err != nil {
			return "token-file-unreadable"
		}
		return "token:" + strings.TrimSpace(string(token))
	case config.BearerToken != "":
		return "token:" + config.BearerToken
	case config.Username != "" || config.Password != "":
		return "basic"
	}
	return "none"
}

func load(req request) (out answer) {
	out.ID = req.ID
	defer func() {
		if r := recover(); r != nil {
			out = answer{ID: req.ID, Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	if err := os.Chdir(req.Cwd); err != nil {
		return answer{ID: req.ID, Error: err.Error()}
	}
	// NewDefaultClientConfigLoadingRules with the environment of the request instead of this process's.
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: req.Explicit}
	if req.Kubeconfig != "" {
		rules.Precedence = filepath.SplitList(req.Kubeconfig)
	} else {
		rules.Precedence = []string{filepath.Join(req.Home, ".kube", "config")}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: req.Context}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	config, err := loader.ClientConfig()
	if err != nil {
		return answer{ID: req.ID, Error: err.Error()}
	}
	if err := rest.LoadTLSFiles(config); err != nil {
		return answer{ID: req.ID, Error: err.Error()}
	}
	out.Server = config.Host
	out.CA = string(config.TLSClientConfig.CAData)
	out.TLSServerName = config.TLSClientConfig.ServerName
	out.Insecure = config.TLSClientConfig.Insecure
	if config.Proxy != nil {
		probe, _ := http.NewRequest(http.MethodGet, config.Host, nil)
		if probe != nil {
			if proxy, err := config.Proxy(probe); err == nil && proxy != nil {
				out.Proxy = proxy.String()
			}
		}
	}
	out.Credential = credentialOf(config)
	if out.Credential == "token-file-unreadable" {
		// client-go reads the file when the client is made (transport.NewCachedFileTokenSource) and fails there.
		return answer{ID: req.ID, Error: "cannot read the token file " + config.BearerTokenFile}
	}
	namespace, _, err := loader.Namespace()
	if err == nil {
		out.Namespace = namespace
	}
	return out
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(out)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "kubeconfig-differential: bad request:", err)
			os.Exit(2)
		}
		if err := encoder.Encode(load(req)); err != nil {
			os.Exit(2)
		}
		if err := out.Flush(); err != nil {
			os.Exit(2)
		}
	}
}
