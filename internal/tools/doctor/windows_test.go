package doctor

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

func windowsClass(name, userData string) *awsv1.EC2NodeClass {
	nc := class(name, awsv1.AMIFamilyWindows2022, userData)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	nc.Spec.Role = account.NodeRole
	return nc
}

func vpcCNI(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "amazon-vpc-cni", Namespace: "kube-system"}, Data: data}
}

func windowsObjects(nc *awsv1.EC2NodeClass, cni *corev1.ConfigMap, mapRoles string) *whatif.Objects {
	return &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, NodePools: []*v1.NodePool{pool("win", nc.Name)}, VPCCNI: cni, AWSAuth: awsAuth(mapRoles)}
}

func TestWindowsUserDataRules(t *testing.T) {
	withGroup := strings.Replace(nodeRoleMapping, "system:nodes]", "system:nodes, eks:kube-proxy-windows]", 1)
	on := vpcCNI(map[string]string{"enable-windows-ipam": "true"})
	t.Run("its own <powershell> tags", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", "<powershell>\nSet-TimeZone -Id 'UTC'\n</powershell>\n"), on, withGroup)})
		expectOne(t, r, CodeWindowsUserDataUnparsable, Error, "EC2NodeClass/win", `"<powershell>"`, "remove the <powershell>", "spec.userData: <powershell> | </powershell>")
	})
	t.Run("Custom PowerShell with a parameter the script does not have", func(t *testing.T) {
		nc := class("win", awsv1.AMIFamilyCustom, "<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -ClusterName prod -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>\n")
		nc.Spec.Role = account.NodeRole
		r := diagnose(t, Input{Objects: windowsObjects(nc, on, withGroup)})
		expectOne(t, r, CodeWindowsBootstrapCallFails, Warning, "EC2NodeClass/win", "-ClusterName is not a parameter", "-EKSClusterName 'NAME'")
		expectOne(t, r, CodeCustomMissingUnregistered, Error, "EC2NodeClass/win", "no call of Start-EKSBootstrap.ps1 runs")
	})
	t.Run("plain PowerShell, IPAM on, the kube-proxy group: nothing", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", "Set-TimeZone -Id 'UTC'\n"), on, withGroup)})
		expectNone(t, r, CodeWindowsUserDataUnparsable, CodeWindowsBootstrapCallFails, CodeWindowsIPAMOff, CodeWindowsProxyGroup, CodeNotChecked)
	})
}

func TestWindowsIPAMRule(t *testing.T) {
	withGroup := strings.Replace(nodeRoleMapping, "system:nodes]", "system:nodes, eks:kube-proxy-windows]", 1)
	t.Run("off", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", ""), vpcCNI(map[string]string{"enable-windows-ipam": "false"}), withGroup)})
		expectOne(t, r, CodeWindowsIPAMOff, Error, vpcCNIObjectName, "NodePool win launches Windows nodes", `is "false"`, `"enable-windows-ipam":"true"`)
	})
	t.Run("no ConfigMap in a cluster", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", ""), nil, withGroup), FromCluster: true})
		expectOne(t, r, CodeWindowsIPAMOff, Error, vpcCNIObjectName, "has no ConfigMap kube-system/amazon-vpc-cni")
	})
	t.Run("no ConfigMap among manifests", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", ""), nil, withGroup)})
		expectOne(t, r, CodeNotChecked, Info, vpcCNIObjectName, "kubectl -n kube-system get configmap amazon-vpc-cni -o yaml")
	})
	t.Run("no Windows NodePool", func(t *testing.T) {
		o := windowsObjects(class("linux", awsv1.AMIFamilyAL2023, ""), nil, nodeRoleMapping)
		o.NodePools[0] = pool("linux", "linux")
		r := diagnose(t, Input{Objects: o})
		expectNone(t, r, CodeWindowsIPAMOff, CodeNotChecked)
	})
}

func TestWindowsNodeRoleRule(t *testing.T) {
	on := vpcCNI(map[string]string{"enable-windows-ipam": "true"})
	t.Run("aws-auth without eks:kube-proxy-windows", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", ""), on, nodeRoleMapping)})
		expectOne(t, r, CodeWindowsProxyGroup, Warning, "EC2NodeClass/win", "without the group eks:kube-proxy-windows", "system:nodes and eks:kube-proxy-windows")
		expectNone(t, r, CodeNodeRoleNotMapped)
	})
	t.Run("unmapped: the fix has the Windows group and access entry type", func(t *testing.T) {
		r := diagnose(t, Input{Objects: windowsObjects(windowsClass("win", ""), on, strings.ReplaceAll(nodeRoleMapping, "KarpenterNodeRole", "OtherRole"))})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/win", "- eks:kube-proxy-windows", "EC2_WINDOWS")
	})
	t.Run("a Linux class needs no Windows group", func(t *testing.T) {
		nc := class("linux", awsv1.AMIFamilyAL2023, "")
		nc.Spec.Role = account.NodeRole
		r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: awsAuth(nodeRoleMapping)}})
		expectNone(t, r, CodeWindowsProxyGroup, CodeNodeRoleNotMapped)
	})
}

func TestLinuxPodOnWindowsRule(t *testing.T) {
	withGroup := strings.Replace(nodeRoleMapping, "system:nodes]", "system:nodes, eks:kube-proxy-windows]", 1)
	o := windowsObjects(windowsClass("win", ""), vpcCNI(map[string]string{"enable-windows-ipam": "true"}), withGroup)
	o.Pods = []*corev1.Pod{pod("web-0", nil, "500m"), pod("iis-0", map[string]string{"kubernetes.io/os": "windows"}, "500m")}
	r := diagnose(t, Input{Objects: o})
	f := expectOne(t, r, CodeLinuxPodOnWindows, Warning, "Pod/default/web-0", "planned onto Windows nodes of NodePool win", "nodeSelector kubernetes.io/os: linux", "taint NodePool win (os=windows:NoSchedule)")
	if strings.Contains(f.Evidence, "iis-0") || !strings.Contains(f.Evidence, "web-0") {
		t.Errorf("evidence names the wrong pods: %s", f.Evidence)
	}
}

func TestDaemonSetOnWindowsRule(t *testing.T) {
	withGroup := strings.Replace(nodeRoleMapping, "system:nodes]", "system:nodes, eks:kube-proxy-windows]", 1)
	daemonSet := func(name string, selector map[string]string, tolerations ...corev1.Toleration) *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
		ds.Spec.Template.Spec = corev1.PodSpec{NodeSelector: selector, Tolerations: tolerations, Containers: []corev1.Container{{Name: "c", Image: name}}}
		return ds
	}
	o := windowsObjects(windowsClass("win", ""), vpcCNI(map[string]string{"enable-windows-ipam": "true"}), withGroup)
	o.NodePools[0].Spec.Template.Spec.Taints = []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}}
	o.DaemonSets = []*appsv1.DaemonSet{
		daemonSet("fluent-bit", nil, corev1.Toleration{Operator: corev1.TolerationOpExists}),
		daemonSet("aws-node", map[string]string{"kubernetes.io/os": "linux"}, corev1.Toleration{Operator: corev1.TolerationOpExists}),
		daemonSet("node-exporter", nil), // does not tolerate os=windows
		daemonSet("windows-exporter", map[string]string{"kubernetes.io/os": "windows"}, corev1.Toleration{Operator: corev1.TolerationOpExists}),
	}
	r := diagnose(t, Input{Objects: o})
	expectOne(t, r, CodeDaemonSetOnWindows, Warning, "DaemonSet/kube-system/fluent-bit", "tolerates NodePool win", "nodeSelector kubernetes.io/os: linux on fluent-bit")
}

func TestWindowsPodOnLinuxRule(t *testing.T) {
	linux := class("linux", awsv1.AMIFamilyAL2023, "")
	linux.Spec.Role = account.NodeRole
	o := &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{linux}, NodePools: []*v1.NodePool{pool("general", "linux")}, AWSAuth: awsAuth(nodeRoleMapping)}
	iis := pod("iis-0", nil, "500m")
	iis.Spec.Containers[0].Image = "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"
	o.Pods = []*corev1.Pod{iis, pod("web-0", nil, "500m")}
	r := diagnose(t, Input{Objects: o})
	f := expectOne(t, r, CodeWindowsPodOnLinux, Warning, "Pod/default/iis-0", "planned onto Linux nodes of NodePool general", "kubernetes.io/os: windows")
	if strings.Contains(f.Evidence, "web-0") {
		t.Errorf("a Linux pod is named: %s", f.Evidence)
	}
}

// windows2025@latest on a cluster before Kubernetes 1.35 names no AMI:
// an error with what to use instead, not a failed check.
func TestWindows2025BeforeKubernetes135(t *testing.T) {
	withGroup := strings.Replace(nodeRoleMapping, "system:nodes]", "system:nodes, eks:kube-proxy-windows]", 1)
	nc := windowsClass("win", "")
	nc.Spec.AMIFamily = nil
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2025@latest"}}
	r := diagnose(t, Input{Objects: windowsObjects(nc, vpcCNI(map[string]string{"enable-windows-ipam": "true"}), withGroup), Cloud: simCloud(t, nil)})
	expectOne(t, r, CodeAMINotFound, Error, "EC2NodeClass/win", "Kubernetes 1.35 and later", "windows2022@latest")
	expectNone(t, r, CodeCheckFailed)
}
