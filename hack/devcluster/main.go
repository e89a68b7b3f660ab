// Command devcluster starts a local control plane with nodewright's CRDs
// installed (kube-scheduler and kube-controller-manager too) and keeps it
// running until interrupted, for trying the API with kubectl.
//
// Usage: go run ./hack/devcluster [-dir bin/devcluster]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
)

func main() {
	dir := flag.String("dir", filepath.Join("bin", "devcluster"), "directory for the kubeconfig, certificates and component logs")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	logf.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Scheduler: true, ControllerManager: true, WorkDir: abs})
	if err != nil {
		return err
	}
	fmt.Printf("control plane running; component logs in %s\n\n  export KUBECONFIG=%s\n\nPress Ctrl-C to stop.\n", cp.WorkDir(), cp.KubeconfigPath)
	<-ctx.Done()
	fmt.Println("stopping")
	return cp.Stop()
}
