package doctor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/tools/whatif"
	"github.com/nodewright/nodewright/scenarios"
)

// draInput is the dra-gpu scenario, changed as a user might have it.
func draInput(t *testing.T, change func(string) string) Input {
	t.Helper()
	_, manifest, err := scenarios.Load("dra-gpu")
	if err != nil {
		t.Fatal(err)
	}
	objs := &whatif.Objects{}
	if err := objs.Load("dra-gpu.yaml", bytes.NewReader([]byte(change(string(manifest))))); err != nil {
		t.Fatal(err)
	}
	return Input{Objects: objs}
}

// withoutDaemonSets drops the driver's DaemonSet from a manifest.
func withoutDaemonSets(m string) string {
	docs := strings.Split(m, "\n---\n")
	out := docs[:0]
	for _, d := range docs {
		if !strings.Contains(d, "kind: DaemonSet") {
			out = append(out, d)
		}
	}
	return strings.Join(out, "\n---\n")
}

func TestDRARules(t *testing.T) {
	same := func(m string) string { return m }
	r := diagnose(t, draInput(t, same))
	expectNone(t, r, CodeClaimsUnsatisfiable, CodeDRADriverMissing, CodeNotChecked, CodePodIncompatible)

	// Sixteen GPUs, and a DeviceClass that does not exist.
	r = diagnose(t, draInput(t, func(m string) string {
		m = strings.Replace(m, "count: 2", "count: 16", 1)
		return strings.Replace(m, "          exactly:\n            deviceClassName: gpu.nvidia.com\n---", "          exactly:\n            deviceClassName: gpu.example.com\n---", 1)
	}))
	if fs := only(r, CodeClaimsUnsatisfiable); len(fs) != 2 {
		t.Fatalf("want a finding for each Deployment, got %+v", r.Findings)
	}
	for _, f := range only(r, CodeClaimsUnsatisfiable) {
		switch f.Object {
		case "Deployment/default/train":
			if !strings.Contains(f.Message, `ResourceClaimTemplate default/two-gpus request "gpus": it asks for 16 devices`) || !strings.Contains(f.Fix, "lower spec.spec.devices.requests[].exactly.count") {
				t.Errorf("train: %+v", f)
			}
		case "Deployment/default/infer":
			if !strings.Contains(f.Message, `DeviceClass "gpu.example.com" does not exist`) || !strings.Contains(f.Fix, "deviceClassName") {
				t.Errorf("infer: %+v", f)
			}
		default:
			t.Errorf("finding on %s", f.Object)
		}
	}

	// A selector reading an attribute no GPU has: it cannot be evaluated.
	r = diagnose(t, draInput(t, func(m string) string {
		return strings.Replace(m, "          exactly:\n            deviceClassName: gpu.nvidia.com\n---",
			"          exactly:\n            deviceClassName: gpu.nvidia.com\n            selectors:\n              - cel: {expression: \"device.attributes['gpu.nvidia.com'].vendorTier == 'gold'\"}\n---", 1)
	}))
	if fs := only(r, CodeClaimsUnsatisfiable); len(fs) != 1 || !strings.Contains(fs[0].Message, "cannot be evaluated") || !strings.Contains(fs[0].Fix, "has()") {
		t.Errorf("selector reading a missing attribute: %+v", r.Findings)
	}

	// A GPU node whose driver (another version) publishes its GPU
	// without the attribute the DeviceClass reads: kube-scheduler stops
	// at that node's error for the inference pods, which fit there
	// otherwise, so nothing launched helps; the finding names the node.
	// The training pods (4 CPUs) do not fit its 3920m: kube-scheduler's
	// resource filter rejects it first, and they get their nodes.
	r = diagnose(t, draInput(t, func(m string) string {
		return m + `
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-20-4-17.eu-central-1.compute.internal
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.sh/registered: "true"
    karpenter.sh/initialized: "true"
    kubernetes.io/hostname: ip-10-20-4-17.eu-central-1.compute.internal
    node.kubernetes.io/instance-type: g5.xlarge
    topology.kubernetes.io/zone: eu-central-1a
    karpenter.sh/capacity-type: on-demand
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
spec:
  providerID: aws:///eu-central-1a/i-0a1b2c3d4e5f60718
status:
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
  capacity: {cpu: "4", memory: 15Gi, pods: "58"}
  conditions:
    - {type: Ready, status: "True", reason: KubeletReady, lastHeartbeatTime: "2026-11-29T10:00:00Z", lastTransitionTime: "2026-11-29T09:00:00Z"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: ip-10-20-4-17.eu-central-1.compute.internal-gpu.nvidia.com-x7k2p
spec:
  driver: gpu.nvidia.com
  nodeName: ip-10-20-4-17.eu-central-1.compute.internal
  pool: {name: ip-10-20-4-17.eu-central-1.compute.internal, generation: 3, resourceSliceCount: 1}
  devices:
    - name: gpu-0
      attributes:
        productName: {string: NVIDIA A10G}
        uuid: {string: GPU-5e3b1a52-0c7d-4b1e-9f0a-2d6c8e4f1a3b}
`
	}))
	if fs := only(r, CodeClaimsUnsatisfiable); len(fs) != 1 || fs[0].Object != "Deployment/default/infer" || !strings.Contains(fs[0].Message, "cannot be scheduled by their claims") ||
		!strings.Contains(fs[0].Message, "node ip-10-20-4-17.eu-central-1.compute.internal's devices") || !strings.Contains(fs[0].Message, "no such key: type") ||
		!strings.Contains(fs[0].Fix, "kubectl get resourceslices --field-selector spec.nodeName=") {
		t.Errorf("selector failing on an existing node's devices: %+v", r.Findings)
	}

	// A NodePool without GPU families.
	r = diagnose(t, draInput(t, func(m string) string {
		return strings.Replace(m, `values: ["g4dn", "g5", "g6", "g6e", "p4d", "p5"]`, `values: ["m7i", "c7i"]`, 1)
	}))
	if fs := only(r, CodeClaimsUnsatisfiable); len(fs) != 2 || !strings.Contains(fs[0].Message, "no instance type the NodePools admit has any") || !strings.Contains(fs[1].Fix, "for GPUs: g6, g5, g4dn") {
		t.Errorf("NodePool without GPU families: %+v", r.Findings)
	}

	// No driver DaemonSet: with other DaemonSets, an error; with none at
	// all, not checked.
	r = diagnose(t, draInput(t, func(m string) string {
		return withoutDaemonSets(m) + "\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: aws-node, namespace: kube-system}\nspec:\n  selector: {matchLabels: {k8s-app: aws-node}}\n  template:\n    metadata: {labels: {k8s-app: aws-node}}\n    spec:\n      containers: [{name: aws-node, image: 602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.20.0}]\n"
	}))
	expectOne(t, r, CodeDRADriverMissing, Error, "NodePool/gpu", "gpu.nvidia.com", "DRADriverPoolsNotPublished", "install the driver's kubelet plugin DaemonSet")
	r = diagnose(t, draInput(t, withoutDaemonSets))
	expectOne(t, r, CodeNotChecked, Info, "NodePool/gpu", "input holds no DaemonSets", "kubectl get daemonsets", "run doctor against the cluster")

	// The driver's DaemonSet, as NVIDIA's chart names it, without a
	// toleration of the GPU NodePool's taint.
	r = diagnose(t, draInput(t, func(m string) string {
		m = strings.Replace(m, "      tolerations:\n        - operator: Exists\n", "", 1)
		m = strings.Replace(m, "        sim.nodewright.dev/dra-driver: gpu.nvidia.com\n", "        app.kubernetes.io/part-of: nvidia-dra-driver-gpu\n", 1)
		m = strings.Replace(m, "      requirements:\n        - key: karpenter.k8s.aws/instance-family", "      taints:\n        - {key: nvidia.com/gpu, effect: NoSchedule}\n      requirements:\n        - key: karpenter.k8s.aws/instance-family", 1)
		return strings.ReplaceAll(m, "      containers:\n        - name: server", "      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n      containers:\n        - name: server")
	}))
	r2 := only(r, CodeDRADriverMissing)
	if len(r2) != 1 || !strings.Contains(r2[0].Message, "does not run on NodePool gpu's nodes") || !strings.Contains(r2[0].Fix, "tolerate the NodePool's taints") ||
		!strings.Contains(r2[0].Evidence, "taken for gpu.nvidia.com's plugin by its name or image containing dra-driver-gpu or k8s-dra-driver") {
		t.Errorf("untolerated driver: %+v", r.Findings)
	}
}

// A driver doctor cannot recognise the plugin of (declared by a
// NodeOverlay): not checked, with how to check, never an error.
func TestDRADriverUnknownToDoctor(t *testing.T) {
	_, manifest, err := scenarios.Load("dra-overlay")
	if err != nil {
		t.Fatal(err)
	}
	for driver, m := range map[string]string{
		"dra.net":          withoutDaemonSets(string(manifest)),
		"fpga.example.com": strings.ReplaceAll(withoutDaemonSets(string(manifest)), "dra.net", "fpga.example.com"),
	} {
		m += "\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: aws-node, namespace: kube-system}\nspec:\n  selector: {matchLabels: {k8s-app: aws-node}}\n  template:\n    metadata: {labels: {k8s-app: aws-node}}\n    spec:\n      containers: [{name: aws-node, image: amazon-k8s-cni:v1.20.0}]\n"
		objs := &whatif.Objects{}
		if err := objs.Load("dra-overlay.yaml", strings.NewReader(m)); err != nil {
			t.Fatal(err)
		}
		r := diagnose(t, Input{Objects: objs})
		expectNone(t, r, CodeClaimsUnsatisfiable)
		if driver == "dra.net" {
			expectOne(t, r, CodeDRADriverMissing, Error, "NodePool/default", "dra.net", "DRADriverPoolsNotPublished", "install the driver's kubelet plugin DaemonSet")
			continue
		}
		expectNone(t, r, CodeDRADriverMissing)
		expectOne(t, r, CodeNotChecked, Info, "NodePool/default", "not fpga.example.com's", "kubectl get resourceslices --field-selector spec.driver=fpga.example.com")
	}
}
