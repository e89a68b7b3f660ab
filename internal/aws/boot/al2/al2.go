// Package al2 is the boot of an Amazon Linux 2 EKS node: cloud-init runs
// the user data's scripts (boot/cloudinit), each in a real shell
// interpreter in a sandbox (boot/shell), where /etc/eks/bootstrap.sh is a
// handler that reads its arguments and environment as the script does
// (Read); the first run starts the kubelet with the words systemd makes of
// the drop-in bootstrap.sh writes, read by the kubelet's own flag handling
// (boot/kubelet) over the configuration file bootstrap.sh writes.
package al2

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/cloudinit"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
	"github.com/nodewright/nodewright/internal/aws/boot/shell"
)

// BootstrapPath is where the AL2 EKS AMIs keep bootstrap.sh.
const BootstrapPath = "/etc/eks/bootstrap.sh"

// Machine is what the node knows about itself that its boot reads.
type Machine struct {
	// MaxPods is the instance type's pod limit from its network
	// interfaces (eni-max-pods.txt); 0 when not known.
	MaxPods int32
}

// kubeletArgs are the kubelet's own arguments on an AL2 node (its
// systemd unit's, then KUBELET_ARGS as bootstrap.sh writes it), before
// KUBELET_EXTRA_ARGS.
var kubeletArgs = []string{
	"--config", "/etc/kubernetes/kubelet/kubelet-config.json", "--kubeconfig", "/var/lib/kubelet/kubeconfig",
	"--container-runtime-endpoint", "unix:///run/containerd/containerd.sock",
	"--image-credential-provider-config", "/etc/eks/image-credential-provider/config.json",
	"--image-credential-provider-bin-dir", "/etc/eks/image-credential-provider",
	"--node-ip=10.0.0.1", "--pod-infra-container-image=602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause:3.5", "--v=2",
	"--hostname-override=ip-10-0-0-1.ec2.internal", "--cloud-provider=external",
}

// Boot is what an AL2 node makes of its user data.
func Boot(userData []byte, m Machine) boot.Outcome {
	plan := cloudinit.Read(userData)
	notes := notesOf(plan)
	if len(plan.Unmodelled) > 0 {
		o := boot.Unmodelled("cloud-init reads " + strings.Join(plan.Unmodelled, "; ") + "; run the user data on an AL2 node to see what it does")
		o.Notes = notes
		return o
	}
	if len(plan.Boothooks) == 0 && len(plan.Scripts) == 0 {
		o := boot.Never("no script in the user data runs " + BootstrapPath + ", and nothing else starts the kubelet on AL2")
		o.Notes = notes
		return o
	}
	first := run(plan, false)
	second := run(plan, true)
	o := outcome(first, second, m)
	o.Notes = append(append(notes, first.notes...), o.Notes...)
	return o
}

// Run is one run of bootstrap.sh by the user data's scripts: the call as
// the shell made it, and what bootstrap.sh makes of it.
type Run struct {
	Call      shell.Call
	Bootstrap *Bootstrap
}

// Runs are the runs of bootstrap.sh an AL2 node's scripts make of the
// user data, in order, as its boot reads them (the commands outside the
// model taken to succeed).
func Runs(userData []byte) []Run {
	r := run(cloudinit.Read(userData), false)
	out := make([]Run, 0, len(r.calls))
	for _, c := range r.calls {
		out = append(out, Run{Call: c, Bootstrap: Read(c.Args[1:], c.Env)})
	}
	return out
}

// notesOf names the parts AL2 does not read, and what cloud-init passes
// over.
func notesOf(plan cloudinit.Plan) []string {
	notes := slices.Clone(plan.Notes)
	for _, p := range plan.Parts {
		switch ct := cloudinit.Type(p); ct {
		case cloudinit.ContentTypeNodeadm:
			notes = append(notes, fmt.Sprintf("%s is a nodeadm NodeConfig (%s), which AL2 does not read: it has no nodeadm", p.Filename, ct))
		case cloudinit.ContentTypeTOML:
			notes = append(notes, fmt.Sprintf("%s is Bottlerocket settings (%s), which AL2 does not read", p.Filename, ct))
		}
	}
	return notes
}

// runs are what the scripts did: every bootstrap.sh run, in order, and
// what the sandbox could not run.
type runs struct {
	calls      []shell.Call
	unmodelled []string
	stopped    []string
	notes      []string
}

// run runs what cloud-init runs, in its order, on one machine (the files
// one writes, the next sees); pessimist runs take the tested commands
// outside the model to fail.
func run(plan cloudinit.Plan, pessimist bool) runs {
	var r runs
	files := map[string][]byte{BootstrapPath: []byte("#!/usr/bin/env bash\n")}
	_, r.notes, _ = plan.Run(files, func(s cloudinit.Script, files map[string][]byte) (map[string][]byte, error) {
		res := shell.Run(s.Body, shell.Options{
			Commands: map[string]shell.Handler{BootstrapPath: func(c shell.Call) uint8 {
				r.calls = append(r.calls, c)
				if b := Read(c.Args[1:], c.Env); b.Exits != "" {
					return 1
				}
				return 0
			}},
			Missing:   []string{"nodeadm"},
			Files:     files,
			Pessimist: pessimist,
		})
		for _, u := range res.Unmodelled {
			if !slices.Contains(r.unmodelled, u) {
				r.unmodelled = append(r.unmodelled, u)
			}
		}
		if res.Err != nil {
			r.stopped = append(r.stopped, fmt.Sprintf("%s: %v", s.Name, res.Err))
		}
		return res.Files, nil
	})
	return r
}

// outcome judges the bootstrap.sh runs in order. A run that exits
// early starts nothing; one that goes through writes the kubelet's
// drop-in and starts it. A kubelet that starts registers the Node, and a
// later run does not change that (it finds the kubelet running); a
// kubelet that exits on its arguments is restarted by systemd, with the
// drop-in of a later run once there is one.
func outcome(optimist, pessimist runs, m Machine) boot.Outcome {
	if len(optimist.stopped) > 0 {
		return boot.Unmodelled(strings.Join(optimist.stopped, "; ") + "; run the user data on an AL2 node to see what it does")
	}
	if !sameCalls(optimist.calls, pessimist.calls) {
		return boot.Unmodelled("whether or how the user data runs " + BootstrapPath + " depends on what " + strings.Join(optimist.unmodelled, ", ") +
			" return, which the model does not run; run the user data on an AL2 node, or make the bootstrap.sh call not depend on them")
	}
	why := "no script runs " + BootstrapPath + ", and nothing else starts the kubelet on AL2"
	var notes []string
	for i, call := range optimist.calls {
		b := Read(call.Args[1:], call.Env)
		if b.Exits != "" {
			if i == 0 {
				why = BootstrapPath + " stops before it starts the kubelet: " + b.Exits
			}
			continue
		}
		if unknown := unknownsIn(b); len(unknown) > 0 {
			return boot.Unmodelled("the bootstrap.sh call's arguments hold " + strings.Join(unknown, ", ") + ", which the model does not know; run the user data on an AL2 node to see the kubelet's arguments")
		}
		args := append(slices.Clone(kubeletArgs), b.KubeletArgs...)
		started, err := kubelet.Start(args, configFile(b, m))
		if err != nil {
			why = err.Error() + " (its arguments from " + b.From["KUBELET_EXTRA_ARGS"] + " KUBELET_EXTRA_ARGS of bootstrap.sh run " + fmt.Sprint(i+1) + ")"
			notes = append(notes, "bootstrap.sh run "+fmt.Sprint(i+1)+": "+err.Error())
			continue
		}
		o := boot.Outcome{Verdict: boot.Joins, Kubelet: started, Notes: notes}
		if b.LooksUpCluster() {
			o.Notes = append(o.Notes, BootstrapPath+" is given no --b64-cluster-ca or --apiserver-endpoint and asks EKS for them (aws eks describe-cluster): the node role needs eks:DescribeCluster, which AmazonEKSWorkerNodePolicy grants")
		}
		if rest := len(optimist.calls) - i - 1; rest > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("bootstrap.sh run %d started the kubelet, which registered the Node; the %d runs after it do not change that", i+1, rest))
		}
		return o
	}
	o := boot.Never(why)
	o.Notes = notes
	return o
}

func sameCalls(a, b []shell.Call) bool {
	return slices.EqualFunc(a, b, func(x, y shell.Call) bool { return sameCall(&x, &y) })
}

func sameCall(a, b *shell.Call) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Args, b.Args) && fmt.Sprint(a.Env) == fmt.Sprint(b.Env)
}

// unknownsIn are the unknown values in what the run's outcome depends on.
func unknownsIn(b *Bootstrap) []string {
	out := make([]string, 0, 3)
	for _, name := range []string{"KUBELET_EXTRA_ARGS", "USE_MAX_PODS", "DNS_CLUSTER_IP"} {
		out = append(out, shell.Unknowns(b.Vars[name])...)
	}
	return out
}

// configFile is the kubelet configuration bootstrap.sh writes:
// clusterDNS from --dns-cluster-ip (else the cluster's, 10.100.0.10 for
// the default service range), evictionHard, and maxPods from the
// instance type when --use-max-pods is true (its default).
func configFile(b *Bootstrap, m Machine) *kubelet.Config {
	dns := b.Vars["DNS_CLUSTER_IP"]
	if dns == "" {
		dns = "10.100.0.10"
	}
	c := &kubelet.Config{ClusterDNS: strings.Split(dns, ","),
		EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%"}}
	if b.Vars["USE_MAX_PODS"] == "true" && m.MaxPods > 0 {
		c.MaxPods = m.MaxPods
	}
	return c
}
