package crds_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every object of every scenario, and of the steps that follow it, is
// accepted as written by `kubectl apply`, which validates strictly: a
// field our CRDs lacked would be an error.
func TestScenariosApplyWithKubectl(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("expected the six scenario files, found %v (%v)", files, err)
	}
	for _, file := range files {
		if strings.Contains(file, ".then-") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			out := kubectl(t, "apply", "-f", file)
			created := strings.Count(out, " created")
			if created < 4 { // an EC2NodeClass, a NodePool, aws-auth and a workload at least
				t.Fatalf("kubectl apply -f %s created %d objects:\n%s", file, created, out)
			}
			for _, kind := range []string{"ec2nodeclass.karpenter.k8s.aws/", "nodepool.karpenter.sh/"} {
				if !strings.Contains(out, kind) {
					t.Errorf("kubectl apply output names no %s object:\n%s", kind, out)
				}
			}
			steps, _ := filepath.Glob(strings.TrimSuffix(file, ".yaml") + ".then-*.yaml")
			for _, step := range steps {
				if data, err := os.ReadFile(step); err == nil && strings.Contains(string(data), "apiVersion: sim.nodewright.dev/") {
					continue // the simulation's own kind (a failing kubelet), not the API server's
				}
				kubectl(t, "apply", "-f", step)
			}
			kubectl(t, "delete", "--wait", "-f", file)
		})
	}
}

// kubectl runs kubectl against the test control plane and returns its
// output, failing the test when it fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runKubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runKubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, err := cluster.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// `kubectl apply` of a bad NodePool fails and says, field by field, what is
// wrong — and creates nothing.
func TestKubectlApplyOfBadNodePoolExplains(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad-nodepool.yaml")
	bad := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: bad
spec:
  template:
    metadata:
      labels:
        kubernetes.io/hostname: node-a
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In}
  disruption:
    consolidateAfter: 5 minutes
  weight: 0
`
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runKubectl(t, "apply", "-f", file)
	if err == nil {
		t.Fatalf("kubectl apply accepted a bad NodePool:\n%s", out)
	}
	for _, want := range []string{
		`The NodePool "bad" is invalid`,
		"spec.weight", "should be greater than or equal to 1",
		"spec.disruption.consolidateAfter", "should match '^(([0-9]+(s|m|h))+|Never)$'",
		"spec.template.spec.requirements", "a requirement with operator In needs at least one value",
		"spec.template.metadata.labels", "kubernetes.io/hostname is every node's own name",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl's message lacks %q:\n%s", want, out)
		}
	}
	if out, err := runKubectl(t, "get", "nodepool", "bad"); err == nil {
		t.Errorf("the bad NodePool exists after the failed apply:\n%s", out)
	}
}

// `kubectl get` shows what matters about each kind without -o yaml.
func TestKubectlGetShowsWhatMatters(t *testing.T) {
	ctx := context.Background()
	claim := patched(t, validNodeClaim, `metadata: {labels: {karpenter.sh/nodepool: general, node.kubernetes.io/instance-type: m5.large, karpenter.sh/capacity-type: spot, topology.kubernetes.io/zone: us-east-1b}}`)
	claim.SetName("printed")
	if err := kube.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, claim) })
	claim.Object["status"] = map[string]any{
		"nodeName":   "ip-10-0-2-7.ec2.internal",
		"providerID": "aws:///us-east-1b/i-0fedcba9876543210",
		"imageID":    "ami-0123456789abcdef0",
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "False", "reason": "NotInitialized", "message": "waiting for startup taints",
			"lastTransitionTime": "2026-11-20T10:00:00Z",
		}, map[string]any{
			"type": "Drifted", "status": "True", "reason": "AMIDrift", "message": "the AMI changed",
			"lastTransitionTime": "2026-11-20T10:00:00Z",
		}},
	}
	if err := kube.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	pool := patched(t, validNodePool, `spec: {weight: 7}`)
	pool.SetName("printed")
	nodeClass := patched(t, validNodeClass, `{}`)
	nodeClass.SetName("printed")
	for _, obj := range []client.Object{pool, nodeClass} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"get", "nodeclaims"}, []string{"NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE", "printed", "m5.large", "spot", "us-east-1b", "ip-10-0-2-7.ec2.internal", "False"}},
		{[]string{"get", "nodeclaims", "-o", "wide"}, []string{"IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED", "ami-0123456789abcdef0", "aws:///us-east-1b/i-0fedcba9876543210", "general", "default", "True"}},
		{[]string{"get", "nodepools", "-o", "wide"}, []string{"NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "printed", "default", "7"}},
		{[]string{"get", "ec2nodeclasses", "-o", "wide"}, []string{"READY", "AGE", "ROLE", "printed", "KarpenterNodeRole-nodewright-sim"}},
		{[]string{"get", "ec2nc"}, []string{"printed"}},
		{[]string{"get", "karpenter"}, []string{"nodepool.karpenter.sh/printed", "nodeclaim.karpenter.sh/printed", "ec2nodeclass.karpenter.k8s.aws/printed"}},
	} {
		out := kubectl(t, tc.args...)
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl %s lacks %q:\n%s", strings.Join(tc.args, " "), want, out)
			}
		}
	}
}
