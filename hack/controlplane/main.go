// Command controlplane builds the Kubernetes control plane nodewright's
// tests and simulation run (etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, kubectl) into DIR/k8s-<version>, each from its
// pinned module, and prints that directory (KUBEBUILDER_ASSETS).
//
//	go run ./hack/controlplane -dir bin
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
)

func main() {
	root := flag.String("dir", "bin", "directory to build into (the binaries go into DIR/k8s-<version>)")
	flag.Parse()
	dir, err := install(controlplane.AssetsIn(*root))
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}

// install builds the control plane into dir, unless interrupted.
func install(dir string) (string, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return dir, controlplane.Install(ctx, dir, os.Stderr)
}
