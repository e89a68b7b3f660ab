package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	if report := os.Getenv("NODEWRIGHT_REAPER_CHILD"); report != "" {
		if _, err := Start(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
		// Its processes, in a file: the child's output also carries
		// what the control plane prints. On a loaded machine a process
		// may be missing from one reading of /proc; it is read again
		// until both show, for a minute at most.
		var pids []string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			pids = pids[:0]
			seen := map[string]bool{}
			for pid, name := range children() {
				pids = append(pids, strconv.Itoa(pid)+"="+name)
				seen[name] = true
			}
			if seen["etcd"] && seen["kube-apiserver"] || time.Now().After(deadline) {
				break
			}
		}
		if err := os.WriteFile(report+".tmp", []byte(strings.Join(pids, " ")), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(report+".tmp", report); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		return
	}
	if _, err := FindAssets(); err != nil {
		t.Skip(err)
	}
	report := filepath.Join(t.TempDir(), "children")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessLeavesNoControlPlane$")
	cmd.Env = append(os.Environ(), "NODEWRIGHT_REAPER_CHILD="+report)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var listed []byte
	for listed == nil {
		select {
		case <-exited:
			t.Fatal("the child exited before starting its control plane")
		case <-time.After(100 * time.Millisecond):
		}
		listed, _ = os.ReadFile(report)
	}
	var pids []int
	names := map[string]bool{}
	for _, f := range strings.Fields(string(listed)) {
		p, name, _ := strings.Cut(f, "=")
		if name == "etcd" || name == "kube-apiserver" {
			pid, _ := strconv.Atoi(p)
			pids = append(pids, pid)
			names[name] = true
		}
	}
	if !names["etcd"] || !names["kube-apiserver"] {
		_ = cmd.Process.Kill()
		t.Fatalf("the child's processes are %q, want etcd and kube-apiserver among them", listed)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
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

// A process's CPU time is its user and system ticks, counted after its
// command name however many spaces and parentheses that holds; a line
// that is not a whole stat reads as nothing.
func TestParseStatReadsCPUTime(t *testing.T) {
	st, ok := parseStat("4903 (nodewright (ctl) x) S 1 4903 4903 0 -1 4194560 51000 0 0 0 2350 415 0 0 20 0 14 0 4829472 3133440 344")
	if !ok || st.cpu != 27.65 || st.comm != "nodewright (ctl) x" || st.ppid != 1 {
		t.Errorf("parsed %+v (ok %v), want CPU 27.65 s (2350 user + 415 system ticks) of nodewright (ctl) x, parent 1", st, ok)
	}
	if _, ok := parseStat("4903 (truncated"); ok {
		t.Error("a truncated stat was read")
	}
	if got := ProcessCPUSeconds(os.Getpid()); got <= 0 {
		t.Errorf("this process's CPU time = %v, want more than 0", got)
	}
}
