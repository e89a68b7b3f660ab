package userdata

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bootstrapCalls are the ways users write a bootstrap.sh call in their
// user data: quoting inside and around --kubelet-extra-args, escapes, line
// continuations, ANSI-C strings, several calls and other commands around.
var bootstrapCalls = []string{
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'`,
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args "--register-with-taints='karpenter.sh/unregistered:NoExecute'"`,
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints "karpenter.sh/unregistered:NoExecute" --node-labels "team=ci"'`,
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args="--register-with-taints=\"karpenter.sh/uninitialized:NoExecute\""`,
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args "--node-labels 'team=ci, tier=a' --register-with-taints=karpenter.sh/unregistered:NoExecute"`,
	"/etc/eks/bootstrap.sh prod-eu \\\n  --b64-cluster-ca 'LS0tLS1CRUdJTg==' \\\n  --apiserver-endpoint 'https://ABC.gr7.eu-west-1.eks.amazonaws.com' \\\n  --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute --max-pods=58'",
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args --register-with-taints=karpenter.sh/unregistered:NoExecute\ --node-labels=a=b`,
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args $'--register-with-taints=karpenter.sh/unregistered:NoExecute\t--node-labels=a=b'`,
	`/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--node-labels=a=b' --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'`,
	`/etc/eks/bootstrap.sh "prod-eu" --kubelet-extra-args '--register-with-taints='"'"'karpenter.sh/unregistered:NoExecute'"'"`,
	`set -ex; echo start && /etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--v=2' || exit 1`,
}

// TestBootstrapWordsAsBashGivesThem checks the shell reader against bash
// itself: each script runs in bash with bootstrap.sh replaced by a
// function that prints the arguments it receives (other commands are not
// found, PATH being empty), and the words must be the ones Commands reads.
func TestBootstrapWordsAsBashGivesThem(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to check the shell reader: %v", err)
	}
	for _, script := range bootstrapCalls {
		prelude := "function /etc/eks/bootstrap.sh { printf '%s\\0' \"$@\" >>\"$ARGS\"; printf '\\1' >>\"$ARGS\"; }\ncommand_not_found_handle() { return 0; }\n"
		args := filepath.Join(t.TempDir(), "args")
		cmd := exec.Command(bash, "-c", prelude+script)
		cmd.Env = []string{"PATH=/nonexistent", "ARGS=" + args}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: bash: %v\n%s", script, err, out)
		}
		out, err := os.ReadFile(args)
		if err != nil {
			t.Fatal(err)
		}
		var fromBash [][]string
		for _, call := range strings.Split(strings.TrimSuffix(string(out), "\x01"), "\x01") {
			fromBash = append(fromBash, strings.Split(strings.TrimSuffix(call, "\x00"), "\x00"))
		}
		cmds, err := Commands([]byte(script))
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		var ours [][]string
		for _, c := range cmds {
			if IsBootstrap(c.Name) {
				ours = append(ours, c.Args)
			}
		}
		if !slices.EqualFunc(ours, fromBash, slices.Equal[[]string]) {
			t.Errorf("%s:\n bash gives %q\n we read   %q", script, fromBash, ours)
		}
	}
}
