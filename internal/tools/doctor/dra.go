package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// claimsFix is what to change for pods whose claims no node can meet,
// by the planner's reason.
func claimsFix(reason string) string {
	switch {
	case reason == state.IgnoredReason:
		return "remove --ignore-dra-requests from the nodewright Deployment's container args (or set IGNORE_DRA_REQUESTS=false there)"
	case strings.Contains(reason, state.FailsOnNodeMarker):
		return "add a has() guard for the attribute or capacity the selector reads in spec.spec.devices.requests[].exactly.selectors of the ResourceClaimTemplate, or in the DeviceClass's spec.selectors if it is the class's; " +
			"check what the node's driver publishes (kubectl get resourceslices --field-selector spec.nodeName=NODE -o yaml): a driver of another version publishes other attributes"
	case strings.Contains(reason, "cannot be evaluated"):
		return "guard the attribute or capacity the selector reads with has() (has(device.attributes['gpu.nvidia.com'].productName) && ...) in spec.spec.devices.requests[].exactly.selectors of the ResourceClaimTemplate, or narrow its DeviceClass to the driver (device.driver == '...'); kube-scheduler aborts a pod's scheduling while a selector fails on any node it could use"
	case strings.Contains(reason, "attributeBindings"):
		return "if the devices do share the attribute on the node, declare it in a NodeOverlay's spec.dynamicResources.attributeBindings for those instance types; otherwise drop spec.spec.devices.constraints[].matchAttribute from the ResourceClaimTemplate"
	case strings.Contains(reason, "does not exist"):
		return "install the driver's Helm chart, which creates its DeviceClass (gpu.nvidia.com for NVIDIA's), or change spec.spec.devices.requests[].exactly.deviceClassName in the ResourceClaimTemplate to a class that exists (kubectl get deviceclasses)"
	case strings.Contains(reason, "no instance type the NodePools admit has any"):
		return "add families whose devices the DeviceClass selects (for GPUs: g6, g5, g4dn) to the values of karpenter.k8s.aws/instance-family in spec.template.spec.requirements, or give the pods a toleration of such a NodePool's taints; check the DeviceClass's selectors too (kubectl get deviceclass -o yaml)"
	case strings.Contains(reason, "asks for"):
		return "lower spec.spec.devices.requests[].exactly.count in the ResourceClaimTemplate, or add a family with eight GPUs per node (p4d, p5) to the NodePool's karpenter.k8s.aws/instance-family values"
	case strings.Contains(reason, "match no device"):
		return "correct the CEL in spec.spec.devices.requests[].exactly.selectors of the ResourceClaimTemplate (what the NVIDIA driver publishes: productName such as 'NVIDIA A10G', architecture, cudaComputeCapability; capacity memory), or add a family with such a GPU to the NodePool"
	}
	return "change spec.spec.devices.requests of the ResourceClaimTemplate, or the NodePool's spec.template.spec.requirements, so that one instance type holds every request"
}

// pluginMarkers are what a DRA driver's kubelet plugin DaemonSet is
// recognised by: its name or image.
var pluginMarkers = map[string][]string{
	"gpu.nvidia.com": {"dra-driver-gpu", "k8s-dra-driver"},
	"neuron.aws.com": {"neuron-dra", "dra-driver-neuron"},
	"dra.net":        {"dranet"},
}

// simDriverAnnotation marks the simulated drivers of nodewright sim.
const simDriverAnnotation = "sim.nodewright.dev/dra-driver"

// draDriverRule checks, for each driver whose devices the plan launches
// nodes for, that its kubelet plugin will run on them: a node already
// publishes its devices, or a DaemonSet of the input is the driver's
// and runs on the NodePool.
func draDriverRule(r *Report, in Input, res *whatif.Result) {
	need := map[string][]string{} // driver → NodePools launching for it
	for _, c := range res.Plan.NodeClaims {
		for driver := range c.Requests.Devices() {
			if !slices.Contains(need[driver], c.NodePool) {
				need[driver] = append(need[driver], c.NodePool)
			}
		}
	}
	pools := map[string]*scheduling.NodePool{}
	for _, np := range res.Snapshot.NodePools {
		pools[np.Name] = np
	}
	for _, driver := range slices.Sorted(maps.Keys(need)) {
		plugins := pluginsOf(in.Objects.DaemonSets, driver)
		switch {
		case len(plugins) == 0 && publishes(in, driver):
			continue // a node publishes its devices: the driver runs
		case len(plugins) == 0 && len(in.Objects.DaemonSets) == 0:
			r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: "NodePool/" + need[driver][0],
				Message:  fmt.Sprintf("nodes are planned for pods that claim %s devices, and the input holds no DaemonSets: whether the driver's kubelet plugin runs on them was not checked", driver),
				Evidence: "no DaemonSet and no ResourceSlice of " + driver + " in the input",
				Fix:      "run doctor against the cluster, or add each DaemonSet manifest to the input (kubectl get daemonsets -A -o yaml)"})
		case len(plugins) == 0 && len(pluginMarkers[driver]) == 0:
			r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: "NodePool/" + need[driver][0],
				Message:  fmt.Sprintf("nodes are planned for pods that claim %s devices; doctor recognises the kubelet plugins of %s by their DaemonSet's name or image and not %s's, so whether it runs on them was not checked", driver, strings.Join(slices.Sorted(maps.Keys(pluginMarkers)), ", "), driver),
				Evidence: fmt.Sprintf("NodePools %s; no ResourceSlice of %s in the input", strings.Join(need[driver], ", "), driver),
				Fix:      fmt.Sprintf("once a node has launched, check that the driver publishes its devices: kubectl get resourceslices --field-selector spec.driver=%s", driver)})
		case len(plugins) == 0:
			r.add(Finding{Code: CodeDRADriverMissing, Severity: Error, Object: "NodePool/" + need[driver][0],
				Message: fmt.Sprintf("nodes are planned for pods that claim %s devices, and neither does a node publish them nor is a DaemonSet of the input the driver's kubelet plugin: "+
					"the NodeClaims would stay Initialized=Unknown (DRADriverPoolsNotPublished) and the pods Pending", driver),
				Evidence: fmt.Sprintf("NodePools %s; no ResourceSlice of %s; DaemonSets: %d, none named or built like %s", strings.Join(need[driver], ", "), driver, len(in.Objects.DaemonSets), strings.Join(pluginMarkers[driver], " or ")),
				Fix:      "install the driver's kubelet plugin DaemonSet (for gpu.nvidia.com, NVIDIA's nvidia-dra-driver-gpu Helm chart) with tolerations of the NodePool's taints"})
		default:
			for _, name := range need[driver] {
				if np := pools[name]; np != nil && !slices.ContainsFunc(plugins, func(ds *appsv1.DaemonSet) bool { return scheduling.DaemonSetRunsOn(np, ds) }) {
					r.add(Finding{Code: CodeDRADriverMissing, Severity: Error, Object: "NodePool/" + name,
						Message: fmt.Sprintf("DaemonSet %s/%s, %s's kubelet plugin, does not run on NodePool %s's nodes: the NodeClaims launched for the pods' claims would stay Initialized=Unknown (DRADriverPoolsNotPublished)",
							plugins[0].Namespace, plugins[0].Name, driver, name),
						Evidence: fmt.Sprintf("NodePool %s taints %v; DaemonSet %s/%s taken for %s's plugin by %s", name, np.Taints, plugins[0].Namespace, plugins[0].Name, driver, recognisedBy(plugins[0], driver)),
						Fix:      "let the DaemonSet tolerate the NodePool's taints and select its nodes (tolerations, nodeSelector, affinity)"})
				}
			}
		}
	}
}

// pluginsOf are the DaemonSets that are a driver's kubelet plugin.
func pluginsOf(sets []*appsv1.DaemonSet, driver string) []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	for _, ds := range sets {
		if ds.Spec.Template.Annotations[simDriverAnnotation] == driver {
			out = append(out, ds)
			continue
		}
		text := ds.Name
		for _, c := range ds.Spec.Template.Spec.Containers {
			text += " " + c.Image
		}
		for _, m := range pluginMarkers[driver] {
			if strings.Contains(text, m) {
				out = append(out, ds)
				break
			}
		}
	}
	return out
}

// recognisedBy says how a DaemonSet was taken for a driver's plugin.
func recognisedBy(ds *appsv1.DaemonSet, driver string) string {
	if ds.Spec.Template.Annotations[simDriverAnnotation] == driver {
		return "its pod template's annotation " + simDriverAnnotation
	}
	return "its name or image containing " + strings.Join(pluginMarkers[driver], " or ")
}

// publishes reports a ResourceSlice of the driver in the input.
func publishes(in Input, driver string) bool {
	return slices.ContainsFunc(in.Objects.ResourceSlices, func(s *resourcev1.ResourceSlice) bool { return s.Spec.Driver == driver })
}
