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

// The modules the control plane is built from: k8s.io/kubernetes pinned
// with every staging module it replaces locally, and etcd's server.
//
//go:embed module/k8s.go.mod module/k8s.go.sum module/tools.go.txt module/etcd.go.mod module/etcd.go.sum module/etcd.main.go.txt
var module embed.FS

// Binaries are the control plane's programs, in the order they are built.
var Binaries = []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl"}

// program is how one binary is built: from which embedded module (its
// files and where they go), as which package.
type program struct {
	src     string            // the module's directory, beside the assets
	files   map[string]string // embedded file -> name in src
	pkg     string
	version string
}

func programOf(b string) program {
	if b == "etcd" {
		return program{src: "src-etcd-" + EtcdVersion(), pkg: ".", version: EtcdVersion(),
			files: map[string]string{"module/etcd.go.mod": "go.mod", "module/etcd.go.sum": "go.sum", "module/etcd.main.go.txt": "main.go"}}
	}
	return program{src: "src-" + Version(), pkg: "k8s.io/kubernetes/cmd/" + b, version: Version(),
		files: map[string]string{"module/k8s.go.mod": "go.mod", "module/k8s.go.sum": "go.sum", "module/tools.go.txt": "tools.go"}}
}

// EtcdVersion is the etcd version built (v3.6.x: Kubernetes v1.34 supports
// etcd 3.5 and 3.6, and its clients' streaming lists need them).
func EtcdVersion() string { return required("module/etcd.go.mod", "go.etcd.io/etcd/server/v3") }

// Version is the Kubernetes version built (v1.34.3).
func Version() string { return required("module/k8s.go.mod", "k8s.io/kubernetes") }

// required is the version an embedded go.mod requires of a module, on a
// line of its own.
func required(file, path string) string {
	data, err := module.ReadFile(file)
	if err != nil {
		panic(err) // embedded
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		if f := strings.Fields(scanner.Text()); len(f) == 3 && f[0] == "require" && f[1] == path {
			return f[2]
		}
	}
	panic(file + " requires no " + path + " on a line of its own")
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
		if !built(dir, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("control-plane binaries missing from " + dir + ": " + strings.Join(missing, ", ") +
		"; `nodewright sim` installs them (or hack/controlplane.sh in a checkout, which make test runs)")
}

// built reports a binary dir holds as a file of its own (a link to a
// system etcd, as earlier versions made, does not count: it is replaced).
func built(dir, name string) bool {
	fi, err := os.Lstat(filepath.Join(dir, name))
	return err == nil && fi.Mode().IsRegular()
}

// HasAssets reports whether dir holds every binary the simulator needs.
func HasAssets(dir string) bool {
	return checkAssets(dir, []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}) == nil
}

// Requirements says what installing needs that this machine lacks: the Go
// toolchain, to build the control plane. Nil when it has it.
func Requirements() error {
	if _, err := goTool(); err != nil {
		return errors.New("the local control plane needs the Go toolchain (go 1.26 or newer on PATH, from https://go.dev/dl/) to build etcd " +
			EtcdVersion() + ", kube-apiserver, kube-scheduler, kube-controller-manager and kubectl " + Version() + " once")
	}
	return nil
}

// goTool is the go command on PATH.
func goTool() (string, error) { return exec.LookPath("go") }

// Install makes dir hold the control plane: each binary missing built
// from its pinned module with the Go toolchain (minutes each, the first
// time), saying what it does on progress.
func Install(ctx context.Context, dir string, progress io.Writer) error {
	missing := missingBinaries(dir)
	if len(missing) == 0 {
		return nil
	}
	if err := Requirements(); err != nil {
		return err
	}
	goCmd, _ := goTool()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return buildBinaries(ctx, goCmd, dir, missing, progress)
}

// missingBinaries are the control-plane binaries dir lacks, in the order
// of Binaries.
func missingBinaries(dir string) []string {
	var missing []string
	for _, b := range Binaries {
		if !built(dir, b) {
			missing = append(missing, b)
		}
	}
	return missing
}

// buildBinaries builds the missing binaries into dir, each from its
// pinned module, which is written beside dir and built there.
func buildBinaries(ctx context.Context, goCmd, dir string, missing []string, progress io.Writer) error {
	ldflags := versionLDFlags()
	for i, b := range missing {
		prog := programOf(b)
		src := filepath.Join(filepath.Dir(dir), prog.src)
		if err := writeModule(src, prog.files); err != nil {
			return err
		}
		flags := ldflags
		if b == "etcd" {
			flags = "-s -w"
		}
		fmt.Fprintf(progress, "controlplane: building %s %s into %s (%d of %d; the first build takes several minutes)\n", b, prog.version, dir, i+1, len(missing))
		start := time.Now()
		if err := buildBinary(ctx, goCmd, src, dir, b, prog.pkg, flags, progress); err != nil {
			return fmt.Errorf("building %s %s with %s: %w", b, prog.version, goCmd, err)
		}
		fmt.Fprintf(progress, "controlplane: built %s in %s\n", b, time.Since(start).Round(time.Second))
	}
	return nil
}

// writeModule writes an embedded module's files into src.
func writeModule(src string, files map[string]string) error {
	if err := os.MkdirAll(src, 0o750); err != nil {
		return err
	}
	for from, to := range files {
		data, _ := module.ReadFile(from)
		if err := os.WriteFile(filepath.Join(src, to), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// versionLDFlags stamp the version into the Kubernetes binaries, so that
// kubectl version and discovery report it.
func versionLDFlags() string {
	minor := strings.Split(Version(), ".")[1]
	pkg := "k8s.io/component-base/version"
	return fmt.Sprintf("-s -w -X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean", pkg, Version(), pkg, pkg, minor, pkg)
}

// buildBinary builds package pkg of the module in src into dir as b,
// through a temporary file so that a failed build leaves no binary.
func buildBinary(ctx context.Context, goCmd, src, dir, b, pkg, ldflags string, progress io.Writer) error {
	tmp := filepath.Join(dir, b+".tmp")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp, pkg) //nolint:gosec // the pinned modules' commands
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return err
	}
	target := filepath.Join(dir, b)
	_ = os.Remove(target) // a link to a system etcd
	return os.Rename(tmp, target)
}
