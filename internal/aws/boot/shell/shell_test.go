package shell

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Scripts run in validation, on users' input: nothing they do may reach
// the machine.
func TestNothingReachesTheMachine(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(dir, "made")
	script := strings.NewReplacer("VICTIM", victim, "MADE", made).Replace(`#!/bin/bash
echo gone > VICTIM
rm -f VICTIM
cp VICTIM MADE
tee MADE < /dev/null
touch MADE
/bin/sh -c 'echo gone > VICTIM'
exec /usr/bin/env true
`)
	res := Run([]byte(script), Options{})
	if data, err := os.ReadFile(victim); err != nil || string(data) != "kept" {
		t.Fatalf("a script changed a file of the machine: %q %v", data, err)
	}
	if _, err := os.Stat(made); err == nil {
		t.Fatal("a script made a file on the machine")
	}
	if !slices.Contains(res.Written, victim) {
		t.Errorf("the write is kept in the sandbox: %v", res.Written)
	}
	for _, construct := range []string{"coproc cat"} {
		if res := Run([]byte(construct), Options{}); res.Err == nil || !strings.Contains(res.Err.Error(), "sandbox does not run") {
			t.Errorf("%q: %v, want it refused", construct, res.Err)
		}
	}
}

func TestRunsAreBounded(t *testing.T) {
	res := Run([]byte("while true; do :; done"), Options{Timeout: 200 * time.Millisecond})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "longer than") {
		t.Errorf("an endless loop: %v", res.Err)
	}
	res = Run([]byte("x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done"), Options{Timeout: time.Minute})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "MiB") {
		t.Errorf("a growing variable: %v", res.Err)
	}
	res = Run([]byte("while true; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa >> /tmp/big; done"), Options{Timeout: time.Minute})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "4 MiB") {
		t.Errorf("a growing file: %v", res.Err)
	}
}

// The image's commands see their words and environment as bash gives
// them; commands outside the model succeed and what they print is marked.
func TestHandlersAndUnknowns(t *testing.T) {
	var got []Call
	opts := Options{Commands: map[string]Handler{"/etc/eks/bootstrap.sh": func(c Call) uint8 { got = append(got, c); return 0 }},
		Files: map[string][]byte{"/etc/eks/bootstrap.sh": nil}}
	res := Run([]byte(`#!/bin/bash -e
export KUBELET_EXTRA_ARGS="--v=2"
LOCAL=not-exported
ip=$(curl -s http://169.254.169.254/latest/meta-data/local-ipv4)
cd /etc/eks && ./bootstrap.sh c1 --node-ip "$ip"
bash /etc/eks/bootstrap.sh c2
`), opts)
	if res.Err != nil || len(got) != 2 {
		t.Fatalf("%v: calls %+v", res.Err, got)
	}
	if got[0].Env["KUBELET_EXTRA_ARGS"] != "--v=2" || got[0].Env["LOCAL"] != "" {
		t.Errorf("environment %v", got[0].Env)
	}
	if u := Unknowns(got[0].Args[3]); len(u) != 1 || u[0] != "what curl prints" {
		t.Errorf("the unknown value is %q", got[0].Args[3])
	}
	if got[1].Args[1] != "c2" || !slices.Equal(res.Unmodelled, []string{"curl"}) {
		t.Errorf("calls %+v, unmodelled %v", got, res.Unmodelled)
	}
	// A shebang's options are the shell's.
	res = Run([]byte("#!/bin/bash -e\nfalse\n/etc/eks/bootstrap.sh c3\n"), opts)
	if len(got) != 2 || res.Exit != 1 {
		t.Errorf("set -e from the shebang: exit %d, calls %d", res.Exit, len(got))
	}
	// Process substitutions read and write nothing of the machine.
	res = Run([]byte("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\nx=$(cat <(echo secret))\n/etc/eks/bootstrap.sh \"$x\"\n"), opts)
	if res.Err != nil || len(got) != 3 || len(Unknowns(got[2].Args[1])) != 1 {
		t.Errorf("process substitution: %v %+v", res.Err, got)
	}
	// A pipeline's commands run at once, on the same files.
	res = Run([]byte("echo a | tee /tmp/x | cat > /tmp/y; cat /tmp/x /tmp/y | base64 | base64 -d > /tmp/z"), opts)
	if res.Err != nil || string(res.Files["/tmp/z"]) != "a\na\n" {
		t.Errorf("pipeline: %v %q", res.Err, res.Files["/tmp/z"])
	}
	if res := Run([]byte("#!/usr/bin/python3\nprint(1)\n"), opts); res.Err == nil {
		t.Error("a python script was run as shell")
	}
}
