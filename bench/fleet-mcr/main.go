// multicluster-runtime's cluster-inventory-api provider (pinned in go.mod) engaging the ClusterProfiles of one hub
// namespace, for bench/fleet.bench.mjs: a multicluster manager whose provider builds each member with the
// providers file (access.Config.BuildConfigFromCP) and the default NewCluster. It counts every NewCluster call (one
// per engagement or re-engagement) and prints, every 200 ms, one JSON line: seconds since start, distinct members
// engaged, engagements in all.
//
// With --peer-id, the manager runs multicluster-runtime's sharded coordinator (rendezvous hashing over peer Leases,
// a fence Lease per cluster) as one replica of several: then a counting component is engaged only for the members
// this replica owns, each start and stop is printed as its own JSON line ({"t": Unix ms, "event": "engaged" or
// "disengaged", "cluster": name}), and the 200 ms lines add "owned", the members whose engagement is live.
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	clusterinventoryapi "sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api"
	"sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api/kubeconfigstrategy"
)

func main() {
	kubeconfig := flag.String("hub-kubeconfig", "", "the hub's kubeconfig")
	namespace := flag.String("namespace", "", "the inventory namespace")
	providersFile := flag.String("providers-file", "", "the providers file")
	peerID := flag.String("peer-id", "", "run the sharded coordinator as this replica (empty: no sharding)")
	leaseNamespace := flag.String("lease-namespace", "", "the namespace of the peer and fence Leases")
	leaseDuration := flag.Duration("lease-duration", 20*time.Second, "the fence Leases' duration")
	leaseRenew := flag.Duration("lease-renew", 10*time.Second, "how often a fence Lease is renewed")
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
	out := &lines{encoder: json.NewEncoder(os.Stdout)}
	var mcOptions []mcmanager.Option
	owned := &ownership{out: out, live: map[string]int{}}
	if *peerID != "" {
		kube, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			fail(err)
		}
		log := logr.Discard()
		mcOptions = append(mcOptions, mcmanager.WithCoordinator(sharded.New(kube, log,
			sharded.WithPeerRegistry(peers.NewLeaseRegistry(kube, *leaseNamespace, "mcr-peer", *peerID, 1, log)),
			sharded.WithShardLease(*leaseNamespace, "mcr-shard"),
			sharded.WithPerClusterLease(true),
			sharded.WithLeaseTimings(*leaseDuration, *leaseRenew, 750*time.Millisecond),
		)))
	}
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}},
	}, mcOptions...)
	if err != nil {
		fail(err)
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		fail(err)
	}
	if *peerID != "" {
		if err := mgr.Add(owned); err != nil {
			fail(err)
		}
	}
	started := time.Now()
	go func() {
		if err := mgr.Start(context.Background()); err != nil {
			fail(err)
		}
	}()
	for range time.Tick(200 * time.Millisecond) {
		lock.Lock()
		line := map[string]any{"seconds": time.Since(started).Seconds(), "engaged": len(members), "engagements": engagements}
		lock.Unlock()
		if *peerID != "" {
			line["owned"] = owned.count()
		}
		out.write(line)
	}
}

// lines writes one JSON object per line from any goroutine.
type lines struct {
	mu      sync.Mutex
	encoder *json.Encoder
}

func (l *lines) write(v any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.encoder.Encode(v)
}

// ownership is the component the sharded coordinator engages for the members this replica owns: it records each
// start and each stop (the engagement's context ending) with the wall clock, for the bench to find overlaps.
type ownership struct {
	out  *lines
	mu   sync.Mutex
	live map[string]int // engagements not yet ended, per member
}

var _ mcmanager.Runnable = (*ownership)(nil)

func (o *ownership) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (o *ownership) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	key := name.String()
	o.mu.Lock()
	o.live[key]++
	o.mu.Unlock()
	o.out.write(map[string]any{"t": time.Now().UnixMilli(), "event": "engaged", "cluster": key})
	go func() {
		<-ctx.Done()
		o.mu.Lock()
		if o.live[key]--; o.live[key] == 0 {
			delete(o.live, key)
		}
		o.mu.Unlock()
		o.out.write(map[string]any{"t": time.Now().UnixMilli(), "event": "disengaged", "cluster": key})
	}()
	return nil
}

func (o *ownership) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.live)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
