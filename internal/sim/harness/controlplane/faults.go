package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// restartedProcess is a process RestartAPIServer started, and when it
// exited.
type restartedProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// pidOf is the pid of this process's child of the name (etcd,
// kube-apiserver), 0 when none runs.
func pidOf(name string) int {
	for pid, c := range childProcesses() {
		if c.name == name {
			return pid
		}
	}
	return 0
}

// RestartAPIServer kills kube-apiserver (SIGKILL, as a crash or a node
// failure would), leaves the cluster without one for down, and starts it
// again as it ran: the same port, certificates and etcd, so every client
// reconnects to it. It returns once the new one answers /readyz.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, down time.Duration) error {
	pid := pidOf("kube-apiserver")
	if pid == 0 {
		return errors.New("no kube-apiserver of this control plane runs")
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("reading kube-apiserver's command line: %w", err)
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver: %w", err)
	}
	for deadline := time.Now().Add(30 * time.Second); pidOf("kube-apiserver") == pid && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	logFile, err := os.OpenFile(filepath.Join(cp.workDir, "kube-apiserver-restarted.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...) //nolint:gosec,noctx // the control plane's own kube-apiserver, as it ran; Stop ends it
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	cp.restarted = append(cp.restarted, restartedProcess{cmd: cmd, done: done})
	if cp.reaper != nil {
		cp.reaper.watch(cmd.Process.Pid)
	}
	return cp.waitReady(ctx, 2*time.Minute)
}

// waitReady waits until kube-apiserver answers /readyz.
func (cp *ControlPlane) waitReady(ctx context.Context, timeout time.Duration) error {
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cp.Config.Host, "/")+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver was not ready %s after its restart; its log: %s", timeout, tail(filepath.Join(cp.workDir, "kube-apiserver-restarted.log")))
}

func tail(path string) string {
	data, _ := os.ReadFile(path)
	return string(data[max(len(data)-2000, 0):])
}

// SlowEtcd stops etcd (SIGSTOP) for pause in every period until ctx
// ends or for, whichever comes first: every write and every read that
// reaches etcd meanwhile waits up to pause, as on a slow disk or an
// overloaded member. etcd runs on when it returns.
func (cp *ControlPlane) SlowEtcd(ctx context.Context, pause, period, forDuration time.Duration) error {
	pid := pidOf("etcd")
	if pid == 0 {
		return errors.New("no etcd of this control plane runs")
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	end := time.After(forDuration)
	for {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(pause)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-end:
			return nil
		case <-time.After(max(period-pause, 0)):
		}
	}
}
