// multicluster-runtime's cluster-inventory-api provider (pinned in go.mod) engaging the ClusterProfiles of one hub
// namespace, for bench/fleet.bench.mjs: a multicluster manager whose provider builds each member with the
// providers file (access.Config.BuildConfigFromCP) and the default NewCluster. It counts every NewCluster call (one
// per engagement or re-engagement) and prints, every 200 ms, one JSON line: seconds since start, distinct members
// engaged, engagements in all.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	clusterinventoryapi "sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api"
	"sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api/kubeconfigstrategy"
)

func main() {
	kubeconfig := flag.String("hub-kubeconfig", "", "the hub's kubeconfig")
	namespace := flag.String("namespace", "", "the inventory namespace")
	providersFile := flag.String("providers-file", "", "the providers file")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	accessConfig, err := access.NewFromFile(*providersFile)
	if err != nil {
		fail(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fail(err)
	}
	if err := clusterinventoryv1alpha1.AddToScheme(scheme); err != nil {
		fail(err)
	}

	var lock sync.Mutex
	engagements := 0
	members := map[string]int{}
	provider, err := clusterinventoryapi.New(clusterinventoryapi.Options{
		KubeconfigStrategyOption: kubeconfigstrategy.Option{
			CredentialsProvider: &kubeconfigstrategy.CredentialsProviderOption{Provider: accessConfig},
		},
		NewCluster: func(ctx context.Context, clp *clusterinventoryv1alpha1.ClusterProfile, cfg *rest.Config, opts ...cluster.Option) (cluster.Cluster, error) {
			lock.Lock()
			engagements++
			members[clp.Name]++
			lock.Unlock()
			return cluster.New(cfg, opts...)
		},
	})
	if err != nil {
		fail(err)
	}
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}},
	})
	if err != nil {
		fail(err)
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		fail(err)
	}
	started := time.Now()
	go func() {
		if err := mgr.Start(context.Background()); err != nil {
			fail(err)
		}
	}()
	out := json.NewEncoder(os.Stdout)
	for range time.Tick(200 * time.Millisecond) {
		lock.Lock()
		line := map[string]any{"seconds": time.Since(started).Seconds(), "engaged": len(members), "engagements": engagements}
		lock.Unlock()
		_ = out.Encode(line)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
