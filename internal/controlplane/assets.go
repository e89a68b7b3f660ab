package controlplane

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AssetsEnv names the directory holding the control-plane binaries, as
// controller-runtime's envtest reads it.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// FindAssets returns the directory of the control-plane binaries: $KUBEBUILDER_ASSETS
// when set, else bin/k8s-<version> of the enclosing nodewright checkout, with
// <version> the k8s.io/kubernetes version pinned in hack/controlplane/go.mod.
func FindAssets() (string, error) {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		return dir, nil
	}
	root, err := findCheckout()
	if err != nil {
		return "", err
	}
	version, err := pinnedVersion(filepath.Join(root, "hack", "controlplane", "go.mod"))
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "k8s-"+version), nil
}

// findCheckout walks up from the working directory to the directory holding
// hack/controlplane/go.mod.
func findCheckout() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "controlplane", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("control-plane binaries: %s is not set and no nodewright checkout (hack/controlplane/go.mod) encloses the working directory; run hack/controlplane.sh and set %s to the directory it prints", AssetsEnv, AssetsEnv)
		}
		dir = parent
	}
}

// pinnedVersion reads the k8s.io/kubernetes version a go.mod requires.
func pinnedVersion(goMod string) (string, error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 3 && fields[0] == "require" && fields[1] == "k8s.io/kubernetes" {
			return fields[2], nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s does not require k8s.io/kubernetes on a single line", goMod)
}

// checkAssets reports every missing binary at once, with the command that
// builds them.
func checkAssets(dir string, names []string) error {
	var missing []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("control-plane binaries missing from " + dir + ": " + strings.Join(missing, ", ") +
		"; run hack/controlplane.sh (or make test, which runs it) to install etcd and build the rest")
}

// HasAssets reports whether dir holds every binary the simulator needs.
func HasAssets(dir string) bool {
	return checkAssets(dir, []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}) == nil
}
