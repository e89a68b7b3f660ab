package e2e

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/test/e2e/harness"
)

// TestWindowsBesideLinux: a Windows Server 2022 NodePool beside a Linux
// one. The Windows pods run on Windows nodes of the 2022 build, launched
// from the windows2022 alias's AMI with PowerShell user data and a 50Gi
// root volume, the Linux pods on Linux nodes; doctor finds nothing. With
// the VPC CNI's Windows IPAM turned off, new Windows pods get no address
// and stay Pending, and doctor names the setting; turned on again, they
// run.
func TestWindowsBesideLinux(t *testing.T) {
	sim, snap := harness.Run(t, "windows", nil)
	if !snap.Done() {
		t.Fatalf("not every pod runs on a Ready NodeClaim: %+v", snap)
	}
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := sim.Kube.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	windowsNodes := map[string]bool{}
	for _, p := range pods.Items {
		node := &corev1.Node{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		os := node.Labels[corev1.LabelOSStable]
		switch p.Labels["app"] {
		case "iis":
			windowsNodes[node.Name] = true
			if os != "windows" || node.Labels[corev1.LabelWindowsBuild] != "10.0.20348" || node.Labels[corev1.LabelArchStable] != "amd64" ||
				node.Status.NodeInfo.OperatingSystem != "windows" || node.Labels["karpenter.sh/nodepool"] != "windows2022" {
				t.Errorf("Windows pod %s runs on %s: %v", p.Name, node.Name, node.Labels)
			}
		default:
			if os != "linux" || node.Labels[corev1.LabelWindowsBuild] != "" {
				t.Errorf("Linux pod %s runs on %s: %v", p.Name, node.Name, node.Labels)
			}
		}
	}
	launched := 0
	for _, inst := range sim.Account.Instances() {
		if !strings.HasPrefix(aws.ToString(inst.ImageId), "ami-windows2022") {
			continue
		}
		launched++
		ud, err := base64.StdEncoding.DecodeString(inst.UserData)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(ud), "<powershell>\nNew-Item -Path 'C:\\temp\\'") || !strings.Contains(string(ud), "Start-EKSBootstrap.ps1") {
			t.Errorf("Windows user data:\n%s", ud)
		}
		if bdm := inst.Launched.BlockDeviceMappings; len(bdm) != 1 || aws.ToString(bdm[0].DeviceName) != "/dev/sda1" || aws.ToInt32(bdm[0].Ebs.VolumeSize) != 50 {
			t.Errorf("Windows root volume %+v", bdm)
		}
	}
	if launched == 0 || launched != len(windowsNodes) {
		t.Errorf("%d instances of the Windows AMI for %d Windows nodes", launched, len(windowsNodes))
	}
	if planned := harness.PlannedNodes(t, "windows"); snap.Nodes > planned {
		t.Errorf("%d nodes for a plan of %d", snap.Nodes, planned)
	}
	findings, status := doctor(t, sim, "--grace", "2s")
	expectHealthy(t, findings, status)

	// Windows IPAM off: a new Windows pod gets no address.
	setIPAM(t, sim.Kube, "false")
	scale(t, sim, "iis", 7)
	harness.WaitFor(t, "the new Windows pod's FailedCreatePodSandBox event", 2*time.Minute, func() bool {
		events := &corev1.EventList{}
		if err := sim.Kube.List(ctx, events, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreatePodSandBox" && strings.Contains(e.Message, "enable-windows-ipam") {
				return true
			}
		}
		return false
	})
	if running(t, sim.Kube, "iis") != 6 {
		t.Errorf("%d iis pods run with Windows IPAM off, want the 6 started before", running(t, sim.Kube, "iis"))
	}
	findings, _ = doctor(t, sim, "--grace", "2s")
	if !hasFinding(findings, "windows-ipam-not-enabled", "error") {
		t.Errorf("doctor does not name Windows IPAM: %+v", findings)
	}
	setIPAM(t, sim.Kube, "true")
	harness.WaitFor(t, "the seventh Windows pod to run", 2*time.Minute, func() bool { return running(t, sim.Kube, "iis") == 7 })
}

func setIPAM(t *testing.T, kube client.Client, value string) {
	t.Helper()
	patch := []byte(`{"data":{"enable-windows-ipam":"` + value + `"}}`)
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "kube-system", "amazon-vpc-cni"
	if err := kube.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// running counts the Running pods of a Deployment's app label.
func running(t *testing.T, kube client.Client, app string) int {
	t.Helper()
	pods := &corev1.PodList{}
	if err := kube.List(context.Background(), pods, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func hasFinding(findings []finding, code, severity string) bool {
	for _, f := range findings {
		if f.Code == code && f.Severity == severity {
			return true
		}
	}
	return false
}
