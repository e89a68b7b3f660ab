package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A v0.31 user's manifests from git: a Provisioner with an inline
// provider and one with a node template, a Deployment beside them.
const v031Manifests = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
  requirements:
    - key: karpenter.k8s.aws/instance-category
      operator: In
      values: [c, m]
  kubeletConfiguration:
    maxPods: 58
  ttlSecondsAfterEmpty: 30
  ttlSecondsUntilExpired: 604800
  limits:
    resources:
      cpu: "400"
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: default
spec:
  subnetSelector:
    karpenter.sh/discovery: checkout-prod
  securityGroupSelector:
    aws::ids: sg-0b1c2d3e4f5a6b7c8
  instanceProfile: KarpenterNodeInstanceProfile-checkout-prod
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: "1"}}}]
`

// convert prints v1 objects doctor reads as they are: converting them
// again changes nothing, and what they plan is what the originals plan.
func TestConvertPrintsWhatDoctorReadsAsV1(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "karpenter.yaml")
	if err := os.WriteFile(old, []byte(v031Manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"convert", "-f", old})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err, errOut.String())
	}
	converted := out.String()
	for _, want := range []string{"apiVersion: karpenter.sh/v1\nkind: NodePool", "consolidationPolicy: WhenEmpty", "consolidateAfter: 30s", "expireAfter: 168h",
		"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass", "alias: al2@latest", "maxPods: 58", "id: sg-0b1c2d3e4f5a6b7c8",
		"kind: Deployment", "karpenter.sh/discovery: checkout-prod", "instanceProfile: KarpenterNodeInstanceProfile-checkout-prod"} {
		if !strings.Contains(converted, want) {
			t.Errorf("convert printed no %q:\n%s", want, converted)
		}
	}
	for _, unwanted := range []string{"v1alpha5", "Provisioner", "compatibility.karpenter.sh", "status:"} {
		if strings.Contains(converted, unwanted) {
			t.Errorf("convert printed %q:\n%s", unwanted, converted)
		}
	}
	if !strings.Contains(errOut.String(), "ttlSecondsAfterEmpty 30 is consolidationPolicy WhenEmpty") {
		t.Errorf("convert did not say what changed: %s", errOut.String())
	}
	v1 := filepath.Join(dir, "karpenter-v1.yaml")
	if err := os.WriteFile(v1, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := run("convert", "-f", v1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again, "nothing to convert") {
		t.Errorf("the converted objects converted again:\n%s", again)
	}
	before, _ := run("simulate", "-f", old)
	after, _ := run("simulate", "-f", v1)
	if strip(before) != strip(after) {
		t.Errorf("the converted objects plan otherwise:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// strip drops the lines naming the input files.
func strip(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, ".yaml") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// A dump as kubectl get -o yaml writes it, a List of v1beta1 and other
// objects: each converted item is replaced in the List, every other item
// is kept.
func TestConvertKeepsAListsOtherItems(t *testing.T) {
	const dump = `apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1beta1
  kind: NodePool
  metadata: {name: general, resourceVersion: "48213", uid: 0b6f7e9e-3c1e-4c55-9f6e-3a1d2a9f1e01}
  spec:
    template:
      spec:
        nodeClassRef: {name: default}
        requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
    disruption: {consolidationPolicy: WhenUnderutilized, expireAfter: 168h}
  status: {resources: {cpu: "12"}}
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: already-v1}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: []
- apiVersion: v1
  kind: Namespace
  metadata: {name: shop}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.yaml")
	if err := os.WriteFile(path, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRootCommand()
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"convert", "-f", path})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	for _, want := range []string{"kind: List", "name: general", "consolidationPolicy: WhenEmptyOrUnderutilized", "expireAfter: 168h", "name: already-v1", "kind: Namespace", "name: shop"} {
		if !strings.Contains(out, want) {
			t.Errorf("convert printed no %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"karpenter.sh/v1beta1", "resourceVersion", "v1beta1-nodeclass-reference"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("convert printed %q:\n%s", unwanted, out)
		}
	}
}
