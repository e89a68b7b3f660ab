package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// relaxable is a NodePool asking more instance families than it allows, a
// pod for it, and a Karpenter Deployment as its chart installs it.
const relaxable = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  role: KarpenterNodeRole-prod-eu
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: prod-eu
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: prod-eu
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: diverse
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["m5", "m6i", "c6i"]
          minValues: 3
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["m"]
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  containers:
    - name: web
      image: nginx
      resources:
        requests:
          cpu: 900m
          memory: 900Mi
`

const karpenterDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: karpenter
  namespace: kube-system
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: karpenter
  template:
    metadata:
      labels:
        app.kubernetes.io/name: karpenter
    spec:
      containers:
        - name: controller
          image: public.ecr.aws/karpenter/controller:1.15.2@sha256:0000000000000000000000000000000000000000000000000000000000000000
          env:
            - name: CLUSTER_NAME
              value: prod-eu
            - name: MIN_VALUES_POLICY
              value: BestEffort
            - name: VM_MEMORY_OVERHEAD_PERCENT
              valueFrom:
                configMapKeyRef:
                  name: karpenter-global-settings
                  key: vmMemoryOverheadPercent
`

// simulate decides with the controller's --min-values-policy: the
// default refuses the pod for minValues, the flag or a Karpenter
// Deployment's environment among the inputs relaxes it, and says where
// the settings came from; a flag given wins over the Deployment.
func TestSimulateDecidesWithTheControllersSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plain, withController := write("pool.yaml", relaxable), write("dump.yaml", relaxable+karpenterDeployment)
	type report struct {
		NodeClaims []struct {
			MinValuesRelaxed string `json:"minValuesRelaxed"`
		} `json:"nodeClaims"`
		Unschedulable []struct{ Reason string } `json:"unschedulable"`
	}
	simulate := func(args ...string) (report, string) {
		t.Helper()
		out, err := runStdout(append([]string{"simulate", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatalf("simulate %v: %v", args, err)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("simulate %v: %v in %s", args, err, out)
		}
		all, _ := run(append([]string{"simulate"}, args...)...)
		return r, all
	}
	strict, _ := simulate("-f", plain)
	if len(strict.NodeClaims) != 0 || len(strict.Unschedulable) != 1 || !strings.Contains(strict.Unschedulable[0].Reason, "minValues") {
		t.Errorf("by default: %+v; want the pod refused for minValues", strict)
	}
	for _, args := range [][]string{{"-f", plain, "--min-values-policy", "BestEffort"}, {"-f", withController}} {
		relaxed, text := simulate(args...)
		if len(relaxed.NodeClaims) != 1 || relaxed.NodeClaims[0].MinValuesRelaxed != "karpenter.k8s.aws/instance-family minValues 3, 2 offered" {
			t.Errorf("%v: %+v; want one NodeClaim with minValues relaxed", args, relaxed)
		}
		if !strings.Contains(text, "minValues relaxed (--min-values-policy=BestEffort): karpenter.k8s.aws/instance-family minValues 3, 2 offered") {
			t.Errorf("%v: the table does not say minValues is relaxed:\n%s", args, text)
		}
		if args[1] == withController {
			for _, want := range []string{"deciding as Deployment kube-system/karpenter (Karpenter's controller) does: --min-values-policy=BestEffort --preference-policy=Respect --ignore-dra-requests=true",
				"sets VM_MEMORY_OVERHEAD_PERCENT from a ConfigMap, Secret or field"} {
				if !strings.Contains(text, want) {
					t.Errorf("the output does not say %q:\n%s", want, text)
				}
			}
		}
	}
	overridden, text := simulate("-f", withController, "--min-values-policy=Strict")
	if len(overridden.NodeClaims) != 0 || !strings.Contains(text, "with the flags given: --min-values-policy=Strict") {
		t.Errorf("the flag over the Deployment: %+v\n%s", overridden, text)
	}
	if _, err := run("simulate", "-f", plain, "--preference-policy", "Prefer"); err == nil || !strings.Contains(err.Error(), "--preference-policy") {
		t.Errorf("a policy Karpenter does not name: %v", err)
	}
}

// When the cluster's controller Deployments could not be listed, the
// tools say they decide with the defaults rather than pass over it.
func TestUnreadControllerSettingsAreNamed(t *testing.T) {
	cmd := &cobra.Command{Use: "simulate"}
	decisionFlags(cmd)
	var stderr bytes.Buffer
	cmd.SetErr(&stderr)
	objs := &whatif.Objects{ControllersNotRead: `deployments.apps is forbidden: User "dev" cannot list resource "deployments"`}
	if err := readSettings(cmd, objs); err != nil {
		t.Fatal(err)
	}
	if want := "warning: the controller's Deployment could not be read (deployments.apps is forbidden"; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "deciding with the defaults and the flags given") {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}
