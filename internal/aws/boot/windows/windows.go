package windows

import (
	"fmt"
	"slices"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
)

// Machine is what the node works out for itself.
type Machine struct {
	// MaxPods is the pod limit the image gives the instance type; 0 when
	// not known.
	MaxPods int32
}

// kubeletArgs are the kubelet service's own arguments on a Windows node,
// before -KubeletExtraArgs.
var kubeletArgs = []string{
	"--cloud-provider=external", "--kubeconfig=C:/ProgramData/kubernetes/kubeconfig",
	"--hostname-override=ip-10-0-0-1.ec2.internal", "--node-ip=10.0.0.1", "--v=1",
}

// Boot is what a Windows node makes of its user data.
func Boot(userData []byte, m Machine) boot.Outcome {
	ps := Read(userData)
	switch {
	case !ps.Tagged:
		return boot.Never("EC2Launch runs no PowerShell: the user data has no <powershell> block")
	case ps.Unparsable != "":
		return boot.Never("PowerShell cannot parse the user data, so none of it runs: " + ps.Unparsable)
	}
	var notes []string
	for i, call := range ps.Calls {
		if call.Fails != "" {
			notes = append(notes, fmt.Sprintf("Start-EKSBootstrap.ps1 call %d does not run: %s", i+1, call.Fails))
			continue // PowerShell stops that statement and goes on
		}
		if call.Unsure != "" {
			o := boot.Unmodelled(call.Unsure + "; launch a node from the EC2NodeClass and read its EC2Launch log and the kubelet's")
			o.Notes = notes
			return o
		}
		file := &kubelet.Config{MaxPods: m.MaxPods, ClusterDNS: []string{"10.100.0.10"}}
		started, err := kubelet.Start(append(slices.Clone(kubeletArgs), call.KubeletArgs...), file)
		if err != nil {
			o := boot.Never(err.Error() + " (its arguments from -KubeletExtraArgs of " + call.Text + ")")
			o.Notes = notes
			return o
		}
		return boot.Outcome{Verdict: boot.Joins, Kubelet: started, Notes: notes}
	}
	o := boot.Never("no line runs Start-EKSBootstrap.ps1, which joins the node to the cluster")
	o.Notes = notes
	return o
}
