package al2

import (
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
)

// Whatever the user data, the AL2 boot gives an outcome, and one that joins says how the kubelet registers.
func FuzzBootAL2(f *testing.F) {
	for seed := range uint64(20) {
		f.Add(boottest.AL2Script(seed).UserData)
	}
	f.Add("#!/bin/bash\nwhile true; do x=$x$x; done\n")
	f.Fuzz(func(t *testing.T, userData string) {
		o := Boot([]byte(userData), machine)
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
	})
}
