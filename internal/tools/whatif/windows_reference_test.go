package whatif_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/referencetest"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// The reference's own Windows examples (examples/v1 of the AWS provider,
// from the module), as a user applies them beside a Windows workload:
// nodewright plans Windows nodes of the example's release for the pods,
// on the amd64 instance types of the categories it asks for, and a Linux
// workload of the same cluster gets nothing from them.
func TestReferenceWindowsExamplesPlanWindowsNodes(t *testing.T) {
	dir := filepath.Join(referencetest.ModuleDir(t, referencetest.AWSProvider, referencetest.AWSProviderNew), "examples", "v1")
	for file, build := range map[string]string{
		"windows-2019.yaml": awsv1.Windows2019Build, "windows-2022.yaml": awsv1.Windows2022Build,
		"windows-2025.yaml": awsv1.Windows2025Build, "windows-custom-userdata.yaml": awsv1.Windows2022Build,
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			manifest := strings.ReplaceAll(string(data), "${CLUSTER_NAME}", "payments-prod")
			if file == "windows-custom-userdata.yaml" {
				// Its NodePool's nodeClassRef.group carries a version,
				// which the reference's CRD refuses (as ours does): the
				// user corrects it.
				manifest = strings.Replace(manifest, "group: karpenter.k8s.aws/v1", "group: karpenter.k8s.aws", 1)
			}
			manifest += `
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: iis, namespace: shop}
spec:
  replicas: 4
  selector: {matchLabels: {app: iis}}
  template:
    metadata: {labels: {app: iis}}
    spec:
      nodeSelector: {kubernetes.io/os: windows, node.kubernetes.io/windows-build: "` + build + `"}
      containers: [{name: iis, image: mcr.microsoft.com/windows/servercore/iis, resources: {requests: {cpu: "1", memory: 2Gi}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: api, image: api, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
`
			objs := &whatif.Objects{}
			if err := objs.Load(file, strings.NewReader(manifest)); err != nil {
				t.Fatal(err)
			}
			res, err := whatif.Run(objs)
			if err != nil {
				t.Fatal(err)
			}
			placed := 0
			for _, c := range res.Plan.NodeClaims {
				labels := map[string]string{}
				for _, key := range []string{corev1.LabelOSStable, corev1.LabelWindowsBuild, corev1.LabelArchStable, "karpenter.k8s.aws/instance-category"} {
					labels[key], _ = c.InstanceType.Requirements[key].Single()
				}
				if labels[corev1.LabelOSStable] != "windows" || labels[corev1.LabelWindowsBuild] != build || labels[corev1.LabelArchStable] != "amd64" ||
					!slices.Contains([]string{"c", "m", "r"}, labels["karpenter.k8s.aws/instance-category"]) {
					t.Errorf("NodeClaim of NodePool %s on %s: %v", c.NodePool, c.InstanceType.Name, labels)
				}
				for _, p := range c.Pods {
					if p.Labels["app"] != "iis" {
						t.Errorf("pod %s planned onto a Windows node", p.Name)
					}
					placed++
				}
			}
			if placed != 4 {
				t.Errorf("%d of 4 Windows pods placed", placed)
			}
			if len(res.Plan.Unschedulable) != 2 {
				t.Errorf("%d pods left, want the 2 Linux pods (no Linux NodePool)", len(res.Plan.Unschedulable))
			}
		})
	}
}
