// The real node's NetworkPolicy engine (docs/real-node.md "NetworkPolicies"): the controller of
// sigs.k8s.io/kube-network-policies run as a host process. Its own command reads only the in-cluster
// config (a token under /var/run/secrets on the host); this one takes a kubeconfig. Everything else
// is the library's, unchanged.
package main

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	nodeName := flag.String("hostname-override", "", "the node whose pods are filtered")
	queueID := flag.Int("nfqueue-id", 100, "the nfqueue used")
	table := flag.String("nftables-table", "kube-network-policies", "the nftables table (inet family)")
	metrics := flag.String("metrics-bind-address", "127.0.0.1:0", "metrics address")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer cancel()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig %s: %v", *kubeconfig, err)
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)

	http.Handle("/metrics", promhttp.Handler())
	go func() { klog.Info(http.ListenAndServe(*metrics, nil)) }()

	controller, err := networkpolicy.NewController(
		clientset,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			QueueID:             *queueID,
			NodeName:            *nodeName,
			NFTableName:         *table,
			NetfilterBug1766Fix: true,
			// Left on: containerd 1.6 has no NRI socket, so the plugin's stub exits at once and pods are
			// known from the API server alone (with it off, the library dereferences a nil plugin for an
			// address that is no pod's, e.g. the node's).
			NRIdisabled: false,
		},
	)
	if err != nil {
		klog.Fatalf("network policy controller: %v", err)
	}
	go func() {
		if err := controller.Run(ctx); err != nil {
			klog.Errorf("network policy controller: %v", err)
		}
		cancel()
	}()
	factory.Start(ctx.Done())
	<-ctx.Done()
	// The controller removes its nftables table on the way out.
	time.Sleep(2 * time.Second)
}
