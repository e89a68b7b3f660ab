package bottlerocket

import "testing"

// FuzzBoot: any user data boots to an outcome without failing, and one
// that joins registers with the taints settings.kubernetes names.
func FuzzBoot(f *testing.F) {
	f.Add([]byte("[settings.kubernetes]\ncluster-name = \"a\"\napi-server = \"https://a\"\ncluster-certificate = \"\"\n[settings.kubernetes.node-taints]\nk = [\"v:NoSchedule\"]\n"))
	f.Add([]byte("settings.kubernetes.max-pods = \"110\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := Boot(data, Machine{MaxPods: 29})
		k, _, err := Read(data)
		if o.Verdict == "joins" && (err != nil || len(o.Kubelet.RegisterWithTaints) != len(Taints(k))) {
			t.Fatalf("joins with %v; the settings read %v %v", o.Kubelet.RegisterWithTaints, Taints(k), err)
		}
	})
}
