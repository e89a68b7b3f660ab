package kubelet_test

import (
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
)

var (
	cluster      = userdata.Cluster{Name: account.ClusterName, Endpoint: account.Endpoint, CABundle: account.CABundle, CIDR: account.ServiceCIDR, DNS: account.KubeDNSIP}
	node         = userdata.Node{Labels: map[string]string{"karpenter.sh/nodepool": "default", "team": "a"}, MaxPods: 29}
	unregistered = corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}
)

// launched renders the user data of an EC2NodeClass as it is launched.
func launched(t *testing.T, family, user string) string {
	t.Helper()
	out, err := userdata.Generate(family, cluster, node, user)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString([]byte(out))
}

func scenarioClass(t *testing.T, file string) *awsv1.EC2NodeClass {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := yaml.Unmarshal([]byte(strings.Split(string(data), "\n---\n")[0]), nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func TestHealthyFamiliesRegisterTheRequiredTaint(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
		t.Run(family, func(t *testing.T) {
			reg, err := kubelet.Read(family, launched(t, family, ""))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]corev1.Taint{unregistered}, reg.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if reg.Labels["team"] != "a" || reg.Labels["karpenter.sh/nodepool"] != "default" || reg.MaxPods != 29 || !reg.ExternalCloudProvider {
				t.Errorf("registration %+v", reg)
			}
			if reg.Windows != awsv1.IsWindows(family) {
				t.Errorf("runs Windows: %v", reg.Windows)
			}
		})
	}
}

// S1: the user's --register-with-taints flag overrides the generated
// configuration; the node registers with the cilium taint only.
func TestS1FlagOverridesConfiguration(t *testing.T) {
	nc := scenarioClass(t, "../../../../scenarios/s1-userdata-register-taints.yaml")
	reg, err := kubelet.Read(nodeclass.Family(nc), launched(t, nodeclass.Family(nc), *nc.Spec.UserData))
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}}
	if diff := cmp.Diff(want, reg.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
}

// S3: bootstrap.sh does not understand --kubelet-extra-args=...; the node
// registers without any taint.
func TestS3MalformedBootstrapArguments(t *testing.T) {
	nc := scenarioClass(t, "../../../../scenarios/s3-al2-bootstrap-quoting.yaml")
	reg, err := kubelet.Read(nodeclass.Family(nc), launched(t, nodeclass.Family(nc), *nc.Spec.UserData))
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Taints) != 0 {
		t.Errorf("taints %v, want none", reg.Taints)
	}
}

func TestUserScriptCallingBootstrapWins(t *testing.T) {
	user := "#!/bin/bash\n/etc/eks/bootstrap.sh nodewright-sim --kubelet-extra-args '--register-with-taints=\"dedicated=ci:NoSchedule\" --node-labels=mine=yes'\n"
	reg, err := kubelet.Read(awsv1.AMIFamilyAL2, launched(t, awsv1.AMIFamilyAL2, user))
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Taint{{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(want, reg.Taints); diff != "" || reg.Labels["mine"] != "yes" {
		t.Errorf("the first bootstrap.sh call starts the kubelet: taints (-want +got):\n%s labels %v", diff, reg.Labels)
	}
}

func TestNoKubelet(t *testing.T) {
	for name, tc := range map[string]struct{ family, userData string }{
		"custom script without bootstrap": {awsv1.AMIFamilyCustom, "#!/bin/bash\necho hello\n"},
		"custom empty":                    {awsv1.AMIFamilyCustom, ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := kubelet.Read(tc.family, base64.StdEncoding.EncodeToString([]byte(tc.userData)))
			var noKubelet *kubelet.NoKubeletError
			if !errors.As(err, &noKubelet) {
				t.Errorf("want NoKubeletError, got %v", err)
			}
		})
	}
}

// Each family's kubelet reads the reservations and pod limits the user
// data gives it (AL2023's nodeadm configuration, AL2's kubelet flags,
// Bottlerocket's settings), so the simulated node's allocatable follows
// what was launched, not what was planned.
func TestKubeletSettingsReachTheKubelet(t *testing.T) {
	settings := &kubeletconfig.Config{
		KubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi"}, SystemReserved: map[string]string{"memory": "200Mi"},
		EvictionHard: map[string]string{"memory.available": "300Mi"}, PodsPerCore: ptr.To[int32](3),
	}
	for _, family := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket} {
		t.Run(family, func(t *testing.T) {
			n := node
			n.Kubelet = settings
			out, err := userdata.Generate(family, cluster, n, "")
			if err != nil {
				t.Fatal(err)
			}
			reg, err := kubelet.Read(family, base64.StdEncoding.EncodeToString([]byte(out)))
			if err != nil {
				t.Fatal(err)
			}
			want := kubeletconfig.Config{KubeReserved: settings.KubeReserved, SystemReserved: settings.SystemReserved, EvictionHard: settings.EvictionHard, PodsPerCore: settings.PodsPerCore}
			if family == awsv1.AMIFamilyBottlerocket {
				want.PodsPerCore = nil // Bottlerocket has no such setting
			}
			if family != awsv1.AMIFamilyAL2 {
				// nodeadm and Bottlerocket work out kube-reserved from the
				// configured maxPods; bootstrap.sh from the ENI limit.
				want.MaxPods = ptr.To(int32(29))
			}
			if diff := cmp.Diff(want, reg.Reserved); diff != "" || reg.MaxPods != 29 {
				t.Errorf("the kubelet read (-want +got):\n%s\nmaxPods %d", diff, reg.MaxPods)
			}
		})
	}
}
