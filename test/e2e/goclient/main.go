// Command goclient lists the namespaces of the cluster a ClusterProfile describes, authenticating through the
// exec plugin that a providers file names — exactly what a controller built on cluster-inventory-api does.
//
//	goclient --providers-file providers.json --clusterprofile profile.yaml
//
// It prints one namespace name per line on stdout. Any failure goes to stderr with a non-zero exit code:
// 2 for bad usage or input files, 1 when the cluster could not be reached or refused the request.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	"sigs.k8s.io/yaml"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("goclient", flag.ContinueOnError)
	flags.SetOutput(stderr)
	providersFile := flags.String("providers-file", "", "providers file (JSON) as read by access.NewFromFile")
	profileFile := flags.String("clusterprofile", "", "ClusterProfile object (YAML or JSON)")
	timeout := flags.Duration("timeout", 60*time.Second, "overall deadline for the request")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *providersFile == "" || *profileFile == "" {
		fmt.Fprintln(stderr, "goclient: --providers-file and --clusterprofile are required")
		return 2
	}

	cfg, err := access.NewFromFile(*providersFile)
	if err != nil {
		fmt.Fprintf(stderr, "goclient: %v\n", err)
		return 2
	}
	profile, err := readClusterProfile(*profileFile)
	if err != nil {
		fmt.Fprintf(stderr, "goclient: %v\n", err)
		return 2
	}
	restConfig, err := cfg.BuildConfigFromCP(profile)
	if err != nil {
		fmt.Fprintf(stderr, "goclient: build rest config: %v\n", err)
		return 2
	}

	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		fmt.Fprintf(stderr, "goclient: create client: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	namespaces, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "goclient: list namespaces: %v\n", err)
		return 1
	}
	for _, ns := range namespaces.Items {
		fmt.Fprintln(stdout, ns.Name)
	}
	return 0
}

func readClusterProfile(path string) (*v1alpha1.ClusterProfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read ClusterProfile: %w", err)
	}
	var profile v1alpha1.ClusterProfile
	// sigs.k8s.io/yaml converts YAML to JSON first, so the json tags of the API types apply to both formats.
	if err := yaml.UnmarshalStrict(data, &profile); err != nil {
		return nil, fmt.Errorf("parse ClusterProfile %s: %w", path, err)
	}
	return &profile, nil
}
