package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// reaper ends etcd and kube-apiserver when this process dies without
// stopping them (SIGKILL, a test binary's timeout): they run in process
// groups of their own with nothing tying them to this process, and would
// go on using memory and CPU. A shell started here reads the process
// groups to end from a pipe whose other end only this process holds; when
// the pipe closes without "stop", this process is gone and the shell ends
// them (SIGTERM, then SIGKILL after 5 s). Components started by the
// control plane itself die with it (Pdeathsig) and need none of this.
type reaper struct {
	w *os.File
}

const reaperScript = `groups=
while read -r line; do
  [ "$line" = stop ] && exit 0
  groups="$groups $line"
done
for g in $groups; do kill -TERM "-$g" 2>/dev/null; done
sleep 5
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
exit 0`

func startReaper() (*reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the reaper: %w", err)
	}
	defer func() { _ = r.Close() }()
	cmd := exec.Command("/bin/sh", "-c", reaperScript) //nolint:noctx // our own script; it outlives this process on purpose
	cmd.Stdin = r
	// Its own process group: a Ctrl-C meant for this process must not
	// end it before it has done its work.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("starting the reaper: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return &reaper{w: w}, nil
}

// watch makes the reaper end process group pgid should this process die.
func (r *reaper) watch(pgid int) {
	_, _ = fmt.Fprintf(r.w, "%d\n", pgid)
}

// stop lets the reaper go without ending anything: the processes it
// watched were stopped.
func (r *reaper) stop() {
	_, _ = fmt.Fprintln(r.w, "stop")
	_ = r.w.Close()
}

// children are the processes whose parent is this process, by pid, with
// their command names.
func children() map[int]string {
	out := map[int]string{}
	for pid, c := range childProcesses() {
		out[pid] = c.name
	}
	return out
}

type child struct {
	name string
	cpu  float64
	// leader: the process leads its own process group (envtest starts
	// etcd and kube-apiserver so), which the reaper can end whole
	// without touching this process's group.
	leader bool
}

// childProcesses are the processes whose parent is this process, by pid.
func childProcesses() map[int]child {
	out := map[int]child{}
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		st, ok := parseStat(string(data))
		if ok && st.ppid == self {
			out[st.pid] = child{name: st.comm, cpu: st.cpu, leader: st.pgrp == st.pid}
		}
	}
	return out
}

// procStat is what /proc/PID/stat says of a process that matters here.
type procStat struct {
	pid, ppid, pgrp int
	comm            string
	// cpu is the CPU time (user and system) spent so far, in seconds.
	cpu float64
}

// parseStat reads a /proc/PID/stat line; ok is false when it is not one.
func parseStat(s string) (_ procStat, ok bool) {
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	// state ppid pgrp session tty tpgid flags minflt cminflt majflt
	// cmajflt utime stime ...
	fields := strings.Fields(s[end+1:])
	if len(fields) < 13 {
		return procStat{}, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
	ppid, err2 := strconv.Atoi(fields[1])
	pgrp, err3 := strconv.Atoi(fields[2])
	utime, err4 := strconv.ParseFloat(fields[11], 64)
	stime, err5 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return procStat{}, false
	}
	// Linux counts CPU time in ticks of 1/100 s.
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, comm: s[open+1 : end], cpu: (utime + stime) / 100}, true
}

// ProcessCPUSeconds is the CPU time (user and system) process pid has
// spent so far, in seconds; 0 when it cannot be read.
func ProcessCPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	st, _ := parseStat(string(data))
	return st.cpu
}
