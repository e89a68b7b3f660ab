package userdata

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var testCluster = Cluster{
	Name: "nodewright-sim", Endpoint: "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
	CABundle: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", CIDR: "172.20.0.0/16", DNS: "172.20.0.10",
}

var testNode = Node{
	Labels: map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot", "team": "platform",
		"kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.large",
	},
	Taints: []corev1.Taint{
		{Key: "dedicated", Value: "platform", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute},
	},
	MaxPods: 29,
	Kubelet: &kubeletconfig.Config{
		SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
		EvictionHard:                map[string]string{"memory.available": "5%"},
		ImageGCHighThresholdPercent: ptr.To[int32](85), ImageGCLowThresholdPercent: ptr.To[int32](80),
	},
	KubeletFields: map[string]any{"serializeImagePulls": false},
}

// Golden files hold the exact user data of each family, with a user part.
func TestGenerateGolden(t *testing.T) {
	for _, tc := range []struct{ name, family, userData string }{
		{"al2", awsv1.AMIFamilyAL2, "#!/bin/bash\necho 'vm.max_map_count=262144' >> /etc/sysctl.conf\n"},
		{"al2023", awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"},
		{"al2023-mime", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hi\n--BOUNDARY--\n"},
		{"bottlerocket", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nmax-pods = 5\n[settings.kubernetes.node-labels]\nteam = \"user\"\nrack = \"r1\"\n[settings.kubernetes.node-taints]\nuser = [\"x:NoSchedule\"]\n"},
		{"custom", awsv1.AMIFamilyCustom, "#!/bin/bash\n/opt/my-bootstrap\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Generate(tc.family, testCluster, testNode, tc.userData)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("user data changed (-golden +got):\n%s", diff)
			}
		})
	}
}

// Read back as a node would, the generated documents come after the
// user's, and register the taints (with karpenter.sh/unregistered) and the
// labels the kubelet may set.
func TestGeneratedDocuments(t *testing.T) {
	out, err := Generate(awsv1.AMIFamilyAL2023, testCluster, testNode, "#!/bin/bash\necho hi\n")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := Split([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].ContentType != ContentTypeShell || parts[1].ContentType != ContentTypeNodeadm {
		t.Fatalf("parts %+v", parts)
	}
	generated := string(parts[1].Body)
	for _, want := range []string{"karpenter.sh/unregistered", "node.cilium.io/agent-not-ready", "maxPods: 29", "--node-labels=karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=platform", "cidr: 172.20.0.0/16"} {
		if !strings.Contains(generated, want) {
			t.Errorf("generated NodeConfig lacks %q:\n%s", want, generated)
		}
	}
	if strings.Contains(generated, "kubernetes.io/arch") {
		t.Errorf("labels in the kubernetes.io domain must not be passed to the kubelet:\n%s", generated)
	}
	if _, err := Generate("Plan9", testCluster, testNode, ""); err == nil {
		t.Error("unsupported families must be refused, not given empty user data")
	}
}
