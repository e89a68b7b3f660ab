package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/rest"
)

// component is a control-plane process other than etcd and kube-apiserver.
type component struct {
	name    string
	port    int
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startComponent runs a component against the control plane's kubeconfig,
// serving its health endpoint on a free local port, and waits until it is
// healthy.
func (cp *ControlPlane) startComponent(ctx context.Context, assets, name string, timeout time.Duration, args ...string) error {
	port, err := FreePort(ctx)
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	certDir := filepath.Join(cp.workDir, name+"-certs")
	args = append(args,
		"--kubeconfig="+cp.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+certDir,
		// Its metrics and profiles are readable without credentials
		// (loopback only).
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*",
	)
	c := &component{
		name:    name,
		port:    port,
		logPath: filepath.Join(cp.workDir, name+".log"),
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(c.logPath)
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	// The process outlives ctx's caller on purpose: Stop ends it.
	c.cmd = exec.Command(filepath.Join(assets, name), args...) //nolint:gosec,noctx // the binary and flags are ours
	c.cmd.Stdout = logFile
	c.cmd.Stderr = logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		_ = logFile.Close()
		close(c.exited)
	}()
	cp.components = append(cp.components, c)
	return c.waitHealthy(ctx, port, timeout)
}

// loopback reaches a component's secure port: it serves a self-signed
// certificate on loopback.
var loopback = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback, the component's own self-signed certificate
}

// Metrics reads the /metrics of a program of the control plane
// ("kube-apiserver", "kube-scheduler", "kube-controller-manager"), by
// family name.
func (cp *ControlPlane) Metrics(ctx context.Context, name string) (map[string]*dto.MetricFamily, error) {
	body, err := cp.get(ctx, name, "/metrics", metricsTimeout)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of %s: %w", name, err)
	}
	defer func() { _ = body.Close() }()
	var parser expfmt.TextParser
	return parser.TextToMetricFamilies(body)
}

// metricsTimeout bounds a read of /metrics (kube-apiserver's is large
// and slow to write at 50,000 pods).
const metricsTimeout = 30 * time.Second

// Profile writes a CPU profile of a program of the control plane over
// the next d to w: its /debug/pprof/profile.
func (cp *ControlPlane) Profile(ctx context.Context, name string, d time.Duration, w io.Writer) error {
	seconds := max(1, int(d.Round(time.Second).Seconds())) // 0 would mean 30 s
	body, err := cp.get(ctx, name, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), 0)
	if err != nil {
		return fmt.Errorf("profiling %s: %w", name, err)
	}
	defer func() { _ = body.Close() }()
	if _, err := io.Copy(w, body); err != nil {
		return fmt.Errorf("profiling %s: %w", name, err)
	}
	return nil
}

// get answers a GET of path on a program of the control plane:
// kube-apiserver with the control plane's credentials, the others on
// their loopback secure port; timeout 0 waits as long as ctx.
func (cp *ControlPlane) get(ctx context.Context, name, path string, timeout time.Duration) (io.ReadCloser, error) {
	var base string
	httpClient := &http.Client{Transport: loopback.Transport, Timeout: timeout}
	if name == "kube-apiserver" {
		c, err := rest.HTTPClientFor(cp.Config)
		if err != nil {
			return nil, err
		}
		c.Timeout = timeout
		base, httpClient = strings.TrimSuffix(cp.Config.Host, "/"), c
	} else {
		metrics := cp.MetricsURL(name)
		if metrics == "" {
			return nil, fmt.Errorf("%s is not running in this control plane", name)
		}
		base = strings.TrimSuffix(metrics, "/metrics")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, errors.New(resp.Status)
	}
	return resp.Body, nil
}

// waitHealthy polls /healthz until it answers ok, the process exits or the
// timeout passes; failures quote the end of the component's log.
func (c *component) waitHealthy(ctx context.Context, port int, timeout time.Duration) error {
	client := loopback
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited while starting (%w); end of %s:\n%s", c.name, c.waitErr, c.logPath, c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy after %s; end of %s:\n%s", c.name, timeout, c.logPath, c.logTail())
		case <-tick.C:
		}
	}
}

// stop terminates the component, killing it if it does not exit in time.
func (c *component) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// logTail returns the last lines of the component's log.
func (c *component) logTail() string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	const keep = 20
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > keep {
		lines = lines[len(lines)-keep:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// FreePort asks the kernel for an unused loopback port.
func FreePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("listener has no TCP address")
	}
	return addr.Port, nil
}
