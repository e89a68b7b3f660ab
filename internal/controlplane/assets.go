package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// AssetsEnv names the directory holding the control-plane binaries, as
// controller-runtime's envtest reads it.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// The module the control plane is built from: k8s.io/kubernetes pinned
// with every staging module it replaces locally.
//
//go:embed module/k8s.go.mod module/k8s.go.sum module/tools.go.txt
var module embed.FS

// Binaries are the control plane's programs; etcd comes from the system.
var Binaries = []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl"}

// Version is the Kubernetes version built (v1.34.3).
func Version() string {
	data, err := module.ReadFile("module/k8s.go.mod")
	if err != nil {
		panic(err) // embedded
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		if f := strings.Fields(scanner.Text()); len(f) == 3 && f[0] == "require" && f[1] == "k8s.io/kubernetes" {
			return f[2]
		}
	}
	panic("module/k8s.go.mod requires no k8s.io/kubernetes on a line of its own")
}

// AssetsIn is the directory of the binaries under root: root/k8s-<version>.
func AssetsIn(root string) string { return filepath.Join(root, "k8s-"+Version()) }

// FindAssets returns the directory of the control-plane binaries:
// $KUBEBUILDER_ASSETS when set; else bin/k8s-<version> of the nodewright
// checkout enclosing the working directory, when it holds them; else
// k8s-<version> in the user's cache directory (~/.cache/nodewright), where
// Install puts them.
func FindAssets() (string, error) {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		return dir, nil
	}
	if root, ok := findCheckout(); ok {
		if dir := AssetsIn(filepath.Join(root, "bin")); HasAssets(dir) {
			return dir, nil
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("control-plane binaries: %s is not set and there is no cache directory (%w); set %s", AssetsEnv, err, AssetsEnv)
	}
	return AssetsIn(filepath.Join(cache, "nodewright")), nil
}

// findCheckout walks up from the working directory to a nodewright
// checkout (the directory holding hack/controlplane.sh).
func findCheckout() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "controlplane.sh")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// checkAssets reports every missing binary at once, with the command that
// installs them.
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
		"; `nodewright sim` installs them (or hack/controlplane.sh in a checkout, which make test runs)")
}

// HasAssets reports whether dir holds every binary the simulator needs.
func HasAssets(dir string) bool {
	return checkAssets(dir, []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}) == nil
}

// Requirements says what installing needs that this machine lacks: the Go
// toolchain to build the control plane, and etcd. Nil when it has both.
func Requirements() error {
	var lack []string
	if _, err := goTool(); err != nil {
		lack = append(lack, "the Go toolchain (go 1.25 or newer on PATH, from https://go.dev/dl/) to build kube-apiserver, kube-scheduler, kube-controller-manager and kubectl "+Version()+" once")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		lack = append(lack, "etcd on PATH (Debian and Ubuntu: sudo apt-get install etcd-server; elsewhere the etcd release binary from https://github.com/etcd-io/etcd/releases)")
	}
	if len(lack) == 0 {
		return nil
	}
	return errors.New("the local control plane needs " + strings.Join(lack, ", and "))
}

// goTool is the go command on PATH.
func goTool() (string, error) { return exec.LookPath("go") }

// Install makes dir hold the control plane: etcd linked from PATH, and
// each binary missing built from the pinned module with the Go toolchain
// (minutes each, the first time), saying what it does on progress.
func Install(ctx context.Context, dir string, progress io.Writer) error {
	missing := missingBinaries(dir)
	etcd, err := etcdPath()
	if err != nil || len(missing) > 0 {
		if err := Requirements(); err != nil {
			return err
		}
	}
	goCmd, _ := goTool()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := linkEtcd(dir, etcd); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	return buildBinaries(ctx, goCmd, dir, missing, progress)
}

// missingBinaries are the control-plane binaries dir lacks, in the order
// of Binaries.
func missingBinaries(dir string) []string {
	var missing []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// etcdPath is the absolute path of the etcd on PATH.
func etcdPath() (string, error) {
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		return etcd, err
	}
	return filepath.Abs(etcd)
}

// linkEtcd makes dir/etcd a link to etcd, unless it already is one.
func linkEtcd(dir, etcd string) error {
	link := filepath.Join(dir, "etcd")
	if target, err := os.Readlink(link); err == nil && target == etcd {
		return nil
	}
	_ = os.Remove(link)
	if err := os.Symlink(etcd, link); err != nil {
		return fmt.Errorf("linking etcd into %s: %w", dir, err)
	}
	return nil
}

// buildBinaries builds the missing binaries into dir from the pinned
// module, which is written beside dir and built there.
func buildBinaries(ctx context.Context, goCmd, dir string, missing []string, progress io.Writer) error {
	src := filepath.Join(filepath.Dir(dir), "src-"+Version())
	if err := writeModule(src); err != nil {
		return err
	}
	ldflags := versionLDFlags()
	for i, b := range missing {
		fmt.Fprintf(progress, "controlplane: building %s %s into %s (%d of %d; the first build takes several minutes)\n", b, Version(), dir, i+1, len(missing))
		start := time.Now()
		if err := buildBinary(ctx, goCmd, src, dir, b, ldflags, progress); err != nil {
			return err
		}
		fmt.Fprintf(progress, "controlplane: built %s in %s\n", b, time.Since(start).Round(time.Second))
	}
	return nil
}

// writeModule writes the pinned Kubernetes module into src.
func writeModule(src string) error {
	if err := os.MkdirAll(src, 0o750); err != nil {
		return err
	}
	for from, to := range map[string]string{"module/k8s.go.mod": "go.mod", "module/k8s.go.sum": "go.sum", "module/tools.go.txt": "tools.go"} {
		data, _ := module.ReadFile(from)
		if err := os.WriteFile(filepath.Join(src, to), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// versionLDFlags stamp the version into the binaries, so that kubectl
// version and discovery report it.
func versionLDFlags() string {
	minor := strings.Split(Version(), ".")[1]
	pkg := "k8s.io/component-base/version"
	return fmt.Sprintf("-s -w -X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean", pkg, Version(), pkg, pkg, minor, pkg)
}

// buildBinary builds the Kubernetes command b from the module in src into
// dir, through a temporary file so that a failed build leaves no binary.
func buildBinary(ctx context.Context, goCmd, src, dir, b, ldflags string, progress io.Writer) error {
	tmp := filepath.Join(dir, b+".tmp")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp, "k8s.io/kubernetes/cmd/"+b) //nolint:gosec // the pinned module's commands
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s %s with %s: %w", b, Version(), goCmd, err)
	}
	return os.Rename(tmp, filepath.Join(dir, b))
}
