package bottlerocket

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
)

const cluster = "cluster-name = \"shop-eu\"\napi-server = \"https://A1B2.gr7.eu-central-1.eks.amazonaws.com\"\ncluster-certificate = \"LS0tLS1CRUdJTg==\"\n"

// TestBoot: what a Bottlerocket node makes of settings users write.
func TestBoot(t *testing.T) {
	cases := []struct {
		name, userData string
		want           boot.Verdict
		registered     bool
		why            string
	}{
		{"a table", "[settings.kubernetes]\n" + cluster + "max-pods = 110\n[settings.kubernetes.node-taints]\n\"karpenter.sh/unregistered\" = \":NoExecute\"\n", boot.Joins, true, ""},
		{"an inline table", "[settings]\nkubernetes = { cluster-name = \"shop-eu\", api-server = \"https://A1B2.gr7.eu-central-1.eks.amazonaws.com\", cluster-certificate = \"LS0tLS1CRUdJTg==\", node-taints = { \"karpenter.sh/unregistered\" = [\":NoExecute\"] } }\n", boot.Joins, true, ""},
		{"max-pods as a string", "[settings.kubernetes]\n" + cluster + "max-pods = \"110\"\n", boot.NeverJoins, false, "takes an integer"},
		{"a misspelt setting", "[settings.kubernetes]\n" + cluster + "max-pod = 110\n", boot.NeverJoins, false, "did you mean max-pods?"},
		{"an unknown settings table", "[settings.kubernetes]\n" + cluster + "[settings.kubelet]\nmax-pods = 110\n", boot.NeverJoins, false, "settings.kubelet"},
		{"an effect the kubelet does not know", "[settings.kubernetes]\n" + cluster + "[settings.kubernetes.node-taints]\ndedicated = \"ci:Noschedule\"\n", boot.NeverJoins, false, "the kubelet exits"},
		{"an effect Bottlerocket refuses", "[settings.kubernetes]\n" + cluster + "[settings.kubernetes.node-taints]\ndedicated = \"ci:NO_SCHEDULE\"\n", boot.NeverJoins, false, "taint value"},
		{"a kubernetes.io label the kubelet refuses", "[settings.kubernetes]\n" + cluster + "[settings.kubernetes.node-labels]\n\"node-role.kubernetes.io/worker\" = \"\"\n", boot.NeverJoins, false, "the kubelet exits"},
		{"no cluster", "[settings.kubernetes]\nmax-pods = 110\n", boot.NeverJoins, false, "cluster-name"},
		{"a shell script", "#!/bin/bash\necho hi\n", boot.NeverJoins, false, "not TOML"},
		{"a setting of some versions only", "[settings.kubernetes]\n" + cluster + "kubelet-extra-config = \"e30=\"\n", boot.NotModelled, false, "some Bottlerocket versions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Boot([]byte(c.userData), Machine{MaxPods: 29})
			if o.Verdict != c.want || o.Registered() != c.registered {
				t.Fatalf("got %s, want %s registered=%v", o.Summary(), c.want, c.registered)
			}
			if c.why != "" && !strings.Contains(o.Why, c.why) {
				t.Errorf("the outcome does not say %q: %s", c.why, o.Why)
			}
		})
	}
	o := Boot([]byte("[settings.kubernetes]\n"+cluster+"max-pods = 58\ncluster-dns-ip = [\"10.100.0.10\", \"10.100.0.11\"]\n[settings.kubernetes.node-labels]\nteam = \"ci\"\n"), Machine{MaxPods: 29})
	if o.Verdict != boot.Joins || o.Kubelet.MaxPods != 58 || o.Kubelet.Labels["team"] != "ci" || len(o.Kubelet.ClusterDNS) != 2 {
		t.Errorf("the kubelet starts with %+v", o.Kubelet)
	}
}
