package userdata

import (
	"strings"
	"testing"
)

func FuzzCommands(f *testing.F) {
	f.Add("/etc/eks/bootstrap.sh c --kubelet-extra-args '--node-labels=a=b'\n")
	f.Add("x=\"$(echo a)\"; /etc/eks/bootstrap.sh \"$x\" --apiserver-endpoint=${URL}\n")
	for _, call := range bootstrapCalls {
		f.Add(call)
	}
	f.Fuzz(func(t *testing.T, script string) {
		cmds, err := Commands([]byte(script))
		if err != nil {
			return
		}
		for _, c := range cmds {
			if len(c.Args) != len(c.Raw) {
				t.Fatalf("%d arguments but %d raw words", len(c.Args), len(c.Raw))
			}
			if b := ReadBootstrap(c); b.Set && b.Fails == "" && len(b.Intended) > 0 && len(b.KubeletArgs) == 0 && !strings.Contains(b.ExtraArgs, "'") {
				t.Fatalf("kubelet arguments %q lost without a single quote to cut them", b.ExtraArgs)
			}
		}
	})
}

// Whatever the user data, reading it as nodeadm does not panic, and
// what it reads as the kubelet's taints can be listed.
func FuzzReadNodeadm(f *testing.F) {
	for _, seed := range []string{"", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {kubelet: {flags: ['--register-with-taints=\"a:NoSchedule\"']}}\n",
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n---\nkind: NodeConfig\n--//--\n",
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: multipart/mixed; boundary=\"x\"\n\n--x\n--x--\n--//--\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(_ *testing.T, data string) {
		n, err := ReadNodeadm([]byte(data))
		if err == nil {
			n.RegistrationTaints()
		}
	})
}
