package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are each command's Example: text, by command path. Every
// line that starts with "nodewright " is checked to parse
// (TestEveryCommandHasExamples).
var examples = map[string]string{
	"nodewright version": `
# The version and the commit it was built from
nodewright version -o json`,
	"nodewright doctor": `
# Manifests before you apply them: a GitOps directory, read recursively
nodewright doctor -f infra/karpenter/ -f apps/

# The cluster of your kubeconfig, and the AWS account of your AWS configuration
nodewright doctor --cloud aws --cluster-name prod-eu --region eu-west-1

# A dump someone sent you, as JSON for a bot
kubectl get nodepools,ec2nodeclasses,nodeclaims,nodes,pods,events -A -o yaml > cluster.yaml
nodewright doctor -f cluster.yaml -o json`,
	"nodewright convert": `
# Manifests of Karpenter v0.32 to v1.0 (v1beta1) or v0.31 (Provisioner, AWSNodeTemplate), as v1 objects to commit
nodewright convert -f karpenter/ > karpenter-v1.yaml

# From standard input; what changed is written to standard error
cat nodepool-v1beta1.yaml | nodewright convert -f -`,
	"nodewright simulate": `
# What would be launched for the pending pods of your manifests, in your region
nodewright simulate -f infra/karpenter/ -f apps/ --region eu-west-1

# In CI: fail when a workload would get no node
nodewright simulate -f infra/karpenter/ -f apps/ --fail-on-unschedulable -o json

# What disruption would do now on a cluster's dump
nodewright simulate --disruption -f cluster.yaml`,
	"nodewright plan": `
# What a NodePool change drifts, the rollout in rounds, and the price before, during and after
nodewright plan -f cluster.yaml --change infra/karpenter/nodepool.yaml

# As at a given time (budget windows), with kube-scheduler's configuration
nodewright plan -f cluster.yaml --change nodepool.yaml --now 2026-12-01T09:00:00Z --scheduler-config scheduler.yaml`,
	"nodewright userdata": `
# The user data a NodePool's nodes would boot with, and what is wrong with it
nodewright userdata -f infra/karpenter/ --nodepool default --cluster-name prod-eu \
  --cluster-endpoint https://ABCD1234.gr7.eu-west-1.eks.amazonaws.com --instance-type m7g.large`,
	"nodewright sim": `
# The healthy scenario on a real control plane with a simulated AWS account
nodewright sim

# Field report S3, then keep the cluster for kubectl and doctor
nodewright sim --scenario s3 --keep

# 10,000 pods, with spot capacity running out in one zone
nodewright sim --scenario scale --pods 10000 --insufficient-capacity spot:m5.large:us-east-1a`,
	"nodewright controller": `
# In a cluster (the chart runs this)
nodewright controller --cluster-name prod-eu --interruption-queue prod-eu-nodewright

# On this machine, against a simulated AWS account, with readable logs
nodewright controller --cluster-name nodewright-sim --cloud sim --log-format console`,
	"nodewright completion": `
# Bash, for this shell and for good
source <(nodewright completion bash)
nodewright completion bash > /etc/bash_completion.d/nodewright`,
	"nodewright completion bash": `
source <(nodewright completion bash)`,
	"nodewright completion zsh": `
nodewright completion zsh > "${fpath[1]}/_nodewright"`,
	"nodewright completion fish": `
nodewright completion fish > ~/.config/fish/completions/nodewright.fish`,
	"nodewright completion powershell": `
nodewright completion powershell | Out-String | Invoke-Expression`,
}

// setExamples gives every command its examples, indented as cobra
// prints them.
func setExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if text, ok := examples[c.CommandPath()]; ok {
			lines := strings.Split(strings.TrimPrefix(text, "\n"), "\n")
			for i, l := range lines {
				if l != "" {
					lines[i] = "  " + l
				}
			}
			c.Example = strings.Join(lines, "\n")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
