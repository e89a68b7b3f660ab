package al2023_test

import (
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
)

// Whatever the user data, the AL2023 boot gives an outcome (one that
// joins says how the kubelet registers, any other says why), and its
// reading names every NodeConfig it does not read.
func FuzzBootAL2023(f *testing.F) {
	for seed := range uint64(20) {
		f.Add(al2023.Generate(seed).UserData)
	}
	f.Add("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n--x--\n--//--\n")
	f.Add("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n")
	f.Fuzz(func(t *testing.T, userData string) {
		o := al2023.Boot([]byte(userData), al2023.Machine{MaxPods: 29})
		switch o.Verdict {
		case boot.Joins:
			if o.Kubelet == nil {
				t.Fatal("joins without a kubelet")
			}
		case boot.NeverJoins, boot.NotModelled:
			if o.Why == "" {
				t.Fatalf("%s without a reason", o.Verdict)
			}
		default:
			t.Fatalf("verdict %q", o.Verdict)
		}
		if r := al2023.Read([]byte(userData)); r.Stopped == "" && r.Err == nil && r.Config == nil {
			t.Fatal("a reading that neither stops, fails nor gives a configuration")
		}
	})
}
