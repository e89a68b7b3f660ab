package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// Finding codes of Windows nodes.
const (
	CodeWindowsIPAMOff         = "windows-ipam-not-enabled"
	CodeWindowsProxyGroup      = "windows-node-role-without-kube-proxy-group"
	CodeLinuxPodOnWindows      = "pod-without-os-placed-on-windows"
	CodeDaemonSetOnWindows     = "daemonset-without-os-runs-on-windows"
	CodeWindowsPodOnLinux      = "windows-pod-placed-on-linux"
	vpcCNIObjectName           = "ConfigMap/kube-system/amazon-vpc-cni"
	windowsIPAMKey             = "enable-windows-ipam"
	windowsKubeProxyGroup      = "eks:kube-proxy-windows"
	accessEntryWindows         = "EC2_WINDOWS"
	windowsIPAMFix             = "kubectl -n kube-system patch configmap amazon-vpc-cni --type merge -p '{\"data\":{\"enable-windows-ipam\":\"true\"}}' (create the ConfigMap with that key if it does not exist)"
	windowsIPAMConsequence     = "the VPC CNI gives pods on Windows nodes no IP address, so they stay ContainerCreating (FailedCreatePodSandBox)"
	windowsProxyGroupEffect    = "kube-proxy on its Windows nodes runs with the node's identity and is refused without the group, so pods there cannot reach Services"
	windowsPoolTaintSuggestion = "os=windows:NoSchedule"
)

// windowsPools are the NodePools whose EC2NodeClass launches Windows
// nodes, by name, with their class.
func windowsPools(o *whatif.Objects) map[string]*awsv1.EC2NodeClass {
	classes := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range o.EC2NodeClasses {
		if windows, _ := instancetypes.WindowsOf(nc); windows {
			classes[nc.Name] = nc
		}
	}
	out := map[string]*awsv1.EC2NodeClass{}
	for _, np := range o.NodePools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && classes[ref.Name] != nil {
			out[np.Name] = classes[ref.Name]
		}
	}
	return out
}

// windowsIPAMRule checks that the VPC CNI gives Windows pods addresses
// when a NodePool launches Windows nodes: the amazon-vpc-cni ConfigMap
// sets enable-windows-ipam to "true".
func windowsIPAMRule(r *Report, in Input) {
	pools := windowsPools(in.Objects)
	if len(pools) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(pools))
	which := fmt.Sprintf("NodePool %s launches Windows nodes", strings.Join(names, ", "))
	cm := in.Objects.VPCCNI
	switch {
	case cm == nil && !in.FromCluster:
		r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: vpcCNIObjectName,
			Message:  fmt.Sprintf("whether pods on Windows nodes get IP addresses is not checked: %s, and ConfigMap kube-system/amazon-vpc-cni is not among the inputs; without %s: \"true\" in it, %s", which, windowsIPAMKey, windowsIPAMConsequence),
			Evidence: "no ConfigMap kube-system/amazon-vpc-cni among the inputs",
			Fix:      "add ConfigMap kube-system/amazon-vpc-cni to the inputs with -f (kubectl -n kube-system get configmap amazon-vpc-cni -o yaml | nodewright doctor -f - -f ...), or run doctor against the cluster"})
	case cm == nil:
		r.add(Finding{Code: CodeWindowsIPAMOff, Severity: Error, Object: vpcCNIObjectName,
			Message:  fmt.Sprintf("%s, and the cluster has no ConfigMap kube-system/amazon-vpc-cni: %s", which, windowsIPAMConsequence),
			Evidence: "ConfigMap kube-system/amazon-vpc-cni does not exist", Fix: windowsIPAMFix})
	case cm.Data[windowsIPAMKey] != "true":
		value := "is not set"
		if v, ok := cm.Data[windowsIPAMKey]; ok {
			value = fmt.Sprintf("is %q", v)
		}
		r.add(Finding{Code: CodeWindowsIPAMOff, Severity: Error, Object: vpcCNIObjectName,
			Message:  fmt.Sprintf("%s, and data.%s of ConfigMap kube-system/amazon-vpc-cni %s, not \"true\": %s", which, windowsIPAMKey, value, windowsIPAMConsequence),
			Evidence: fmt.Sprintf("data.%s %s", windowsIPAMKey, value), Fix: windowsIPAMFix})
	}
}

// windowsPlacementRule reports pods the plan puts on Windows nodes that
// do not ask for Windows (no kubernetes.io/os requirement): Windows is as
// good as Linux for them to the scheduler, and a Linux image does not run
// there.
func windowsPlacementRule(r *Report, plan *scheduling.Plan) {
	var items, windowsImages []placed
	for _, c := range plan.NodeClaims {
		if c.InstanceType == nil {
			continue
		}
		os, _ := c.InstanceType.Requirements[scheduling.LabelOS].Single()
		for _, p := range c.Pods {
			if _, asks := podRequirements(p)[scheduling.LabelOS]; asks {
				continue
			}
			switch {
			case os == string(corev1.Windows):
				items = append(items, placed{p, c.NodePool})
			case windowsImage(p) != "":
				windowsImages = append(windowsImages, placed{p, c.NodePool})
			}
		}
	}
	for _, pg := range groupByPool(windowsImages) {
		g, pool := pg.group, pg.pool
		r.add(Finding{Code: CodeWindowsPodOnLinux, Severity: Warning, Object: groupObject(g),
			Message: fmt.Sprintf("%s run the Windows image %s and are planned onto Linux nodes of NodePool %s: they do not select kubernetes.io/os, and a Windows image does not run on Linux",
				describeGroup(g), windowsImage(g.Pods[0]), pool),
			Evidence: podNames(g) + ": no kubernetes.io/os in nodeSelector or required node affinity",
			Fix:      "set nodeSelector kubernetes.io/os: windows in the workload's pod template, with a toleration of the Windows NodePool's taints; create a NodePool of a Windows EC2NodeClass (amiFamily Windows2022, alias windows2022@latest) if there is none"})
	}
	for _, pg := range groupByPool(items) {
		g, pool := pg.group, pg.pool
		r.add(Finding{Code: CodeLinuxPodOnWindows, Severity: Warning, Object: groupObject(g),
			Message: fmt.Sprintf("%s are planned onto Windows nodes of NodePool %s: they do not select kubernetes.io/os, so Windows nodes are as good as Linux ones for them, and a Linux container image does not run on Windows",
				describeGroup(g), pool),
			Evidence: podNames(g) + ": no kubernetes.io/os in nodeSelector or required node affinity",
			Fix: fmt.Sprintf("add nodeSelector kubernetes.io/os: linux to the workload's pod template (or kubernetes.io/os: windows if it is a Windows image), or taint NodePool %s (%s) and give the Windows workloads the toleration",
				pool, windowsPoolTaintSuggestion)})
	}
}

// placed is a pod the plan puts on a NodePool's new node.
type placed struct {
	pod  *corev1.Pod
	pool string
}

// poolGroup is a workload's pods planned onto one NodePool.
type poolGroup struct {
	group state.PodGroup
	pool  string
}

// groupByPool groups placed pods by workload and NodePool.
func groupByPool(items []placed) []poolGroup {
	groups := state.GroupPods(items, func(it placed) *corev1.Pod { return it.pod }, func(it placed) string { return it.pool })
	poolOf := make(map[*corev1.Pod]string, len(items))
	for _, it := range items {
		poolOf[it.pod] = it.pool
	}
	out := make([]poolGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, poolGroup{group: g, pool: poolOf[g.Pods[0]]})
	}
	return out
}

// windowsRoleFinding checks a Windows EC2NodeClass's role mapping or
// access entry for the kube-proxy group Windows nodes need beside
// system:nodes.
func windowsRoleFinding(chk nodeRoleCheck, groups []string, entryType string) (Finding, bool) {
	if windows, _ := instancetypes.WindowsOf(chk.class); !windows {
		return Finding{}, false
	}
	switch {
	case entryType == accessEntryLinux:
		return Finding{Code: CodeWindowsProxyGroup, Severity: Warning, Object: chk.obj,
			Message:  fmt.Sprintf("EC2NodeClass %s launches Windows nodes, and its node role %s has an EKS access entry of type %s, not %s: %s", chk.class.Name, chk.role, accessEntryLinux, accessEntryWindows, windowsProxyGroupEffect),
			Evidence: fmt.Sprintf("access entry of %s: type %s", chk.arn, accessEntryLinux),
			Fix:      fmt.Sprintf("create the access entry of %s with type %s (the type of an access entry cannot be changed: delete and create it), or use a role of its own for Windows nodes", chk.arn, accessEntryWindows)}, true
	case entryType == "" && groups != nil && !slices.Contains(groups, windowsKubeProxyGroup):
		return Finding{Code: CodeWindowsProxyGroup, Severity: Warning, Object: chk.obj,
				Message:  fmt.Sprintf("EC2NodeClass %s launches Windows nodes, and aws-auth maps its node role %s without the group %s: %s", chk.class.Name, chk.role, windowsKubeProxyGroup, windowsProxyGroupEffect),
				Evidence: fmt.Sprintf("aws-auth mapRoles entry %s: groups %v", chk.arn, groups),
				Fix:      "in data.mapRoles of ConfigMap kube-system/aws-auth, give the entry of " + chk.arn + " the groups system:bootstrappers, system:nodes and " + windowsKubeProxyGroup},
			true
	}
	return Finding{}, false
}

// windowsDaemonSetRule reports DaemonSets that do not select
// kubernetes.io/os and whose pods the planner sees running on a Windows
// NodePool's nodes (they tolerate its taints): Linux agents written for
// Linux nodes alone, whose pods on Windows nodes never start, and whose
// requests nodewright keeps free on every Windows node.
func windowsDaemonSetRule(r *Report, in Input, pools []*scheduling.NodePool) {
	windows := windowsPools(in.Objects)
	for _, ds := range in.Objects.DaemonSets {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		if _, asks := podRequirements(pod)[scheduling.LabelOS]; asks {
			continue
		}
		var on []string
		for _, np := range pools {
			if windows[np.Name] != nil && scheduling.DaemonSetRunsOn(np, ds) {
				on = append(on, np.Name)
			}
		}
		if len(on) == 0 {
			continue
		}
		obj := fmt.Sprintf("DaemonSet/%s/%s", ds.Namespace, ds.Name)
		r.add(Finding{Code: CodeDaemonSetOnWindows, Severity: Warning, Object: obj,
			Message: fmt.Sprintf("this DaemonSet selects no operating system and tolerates NodePool %s, so its pods land on Windows nodes as well: a Linux-only image never starts there, and nodewright reserves its requests on each of those nodes",
				strings.Join(on, ", ")),
			Evidence: fmt.Sprintf("DaemonSet %s/%s: no kubernetes.io/os in spec.template.spec.nodeSelector or required node affinity", ds.Namespace, ds.Name),
			Fix:      fmt.Sprintf("set spec.template.spec.nodeSelector kubernetes.io/os: linux on %s so that its pods stay on Linux nodes (kubernetes.io/os: windows instead when it ships a Windows image)", ds.Name)})
	}
}

// windowsImage is the first image of a pod that is built for Windows by
// its name (Windows Server Core, Nano Server, Microsoft's windows
// repositories), "" when none is.
func windowsImage(pod *corev1.Pod) string {
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		image := strings.ToLower(c.Image)
		if strings.Contains(image, "servercore") || strings.Contains(image, "nanoserver") || strings.HasPrefix(image, "mcr.microsoft.com/windows") {
			return c.Image
		}
	}
	return ""
}
