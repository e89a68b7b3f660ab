package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process killed with SIGKILL while its control plane runs (a sim
// killed by hand, a test binary at its timeout) does not leave etcd and
// kube-apiserver running.
func TestKilledProcessLeavesNoControlPlane(t *testing.T) {
	if os.Getenv("NODEWRIGHT_REAPER_CHILD") != "" {
		if _, err := Start(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
		var pids []string
		for pid, name := range children() {
			pids = append(pids, strconv.Itoa(pid)+"="+name)
		}
		fmt.Printf("control plane: %s\n", strings.Join(pids, " "))
		time.Sleep(time.Hour)
		return
	}
	if _, err := FindAssets(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessLeavesNoControlPlane$", "-test.v") //nolint:gosec // this test binary
	cmd.Env = append(os.Environ(), "NODEWRIGHT_REAPER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	names := map[string]bool{}
	listed := ""
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "control plane: "); ok {
			listed = rest
			for _, f := range strings.Fields(rest) {
				p, name, _ := strings.Cut(f, "=")
				if name == "etcd" || name == "kube-apiserver" {
					pid, _ := strconv.Atoi(p)
					pids = append(pids, pid)
					names[name] = true
				}
			}
			break
		}
	}
	if !names["etcd"] || !names["kube-apiserver"] {
		_ = cmd.Process.Kill()
		t.Fatalf("the child's processes are %q, want etcd and kube-apiserver among them", listed)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(time.Minute)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d (etcd or kube-apiserver) still runs a minute after its parent was killed", pid)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
