package convert

import (
	"fmt"
	"math/rand/v2"
)

// Generated v1beta1 objects as users wrote them: the fields of the
// v0.32 to v0.37 docs' examples, each present or not, in other names,
// accounts and regions.

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func maybe(rng *rand.Rand) bool { return rng.IntN(2) == 0 }

var clusters = []string{"payments-prod", "ml-staging", "eu-shared", "gamma"}

func genRequirements(rng *rand.Rand) []any {
	all := []map[string]any{
		{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": []any{"c", "m", "r"}},
		{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": []any{"2"}},
		{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"spot", "on-demand"}},
		{"key": "kubernetes.io/arch", "operator": "In", "values": []any{pick(rng, "amd64", "arm64")}},
		{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{"eu-west-1a", "eu-west-1b"}},
		{"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": []any{"t3.nano"}},
		{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": []any{"m5", "m6i", "c6g"}, "minValues": 2},
		{"key": "team", "operator": "Exists"},
	}
	var out []any
	for _, r := range all {
		if rng.IntN(3) == 0 {
			out = append(out, r)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func genTaints(rng *rand.Rand) []any {
	return []any{pick[map[string]any](rng,
		map[string]any{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
		map[string]any{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"},
		map[string]any{"key": "spot", "effect": "PreferNoSchedule"})}
}

func genKubelet(rng *rand.Rand) map[string]any {
	k := map[string]any{}
	if maybe(rng) {
		k["maxPods"] = pick(rng, 29, 58, 110)
	}
	if maybe(rng) {
		k["clusterDNS"] = []any{pick(rng, "10.100.0.10", "172.20.0.10", "169.254.20.10")}
	}
	if maybe(rng) {
		k["systemReserved"] = map[string]any{"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"}
	}
	if maybe(rng) {
		k["kubeReserved"] = map[string]any{"cpu": "200m", "memory": "500Mi"}
	}
	if rng.IntN(3) == 0 {
		k["evictionHard"] = map[string]any{"memory.available": "5%", "nodefs.available": "10%"}
		k["evictionSoft"] = map[string]any{"memory.available": "500Mi"}
		k["evictionSoftGracePeriod"] = map[string]any{"memory.available": "1m0s"}
		k["evictionMaxPodGracePeriod"] = 60
	}
	if rng.IntN(4) == 0 {
		k["imageGCHighThresholdPercent"] = 85
		k["imageGCLowThresholdPercent"] = 80
	}
	if rng.IntN(4) == 0 {
		k["podsPerCore"] = 10
		k["cpuCFSQuota"] = maybe(rng)
	}
	return k
}

func genRef(rng *rand.Rand, name string) map[string]any {
	ref := map[string]any{"name": name}
	switch rng.IntN(3) {
	case 0:
		ref["apiVersion"], ref["kind"] = "karpenter.k8s.aws/v1beta1", "EC2NodeClass"
	case 1:
		ref["kind"] = "EC2NodeClass"
	}
	return ref
}

func genPool(rng *rand.Rand, name string) map[string]any {
	spec := map[string]any{"requirements": genRequirements(rng), "nodeClassRef": genRef(rng, pick(rng, "default", "gpu", "bottlerocket"))}
	if maybe(rng) {
		spec["kubelet"] = genKubelet(rng)
	}
	if rng.IntN(3) == 0 {
		spec["taints"] = genTaints(rng)
	}
	if rng.IntN(4) == 0 {
		spec["startupTaints"] = genTaints(rng)
	}
	template := map[string]any{"spec": spec}
	if maybe(rng) {
		template["metadata"] = map[string]any{"labels": map[string]any{"team": pick(rng, "payments", "ml", "web")}, "annotations": map[string]any{"cost-center": "4410"}}
	}
	np := map[string]any{"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": map[string]any{"name": name}, "spec": map[string]any{"template": template}}
	s := np["spec"].(map[string]any)
	if maybe(rng) {
		d := map[string]any{}
		switch rng.IntN(3) {
		case 0:
			d["consolidationPolicy"] = "WhenUnderutilized"
		case 1:
			d["consolidationPolicy"] = "WhenEmpty"
			d["consolidateAfter"] = pick(rng, "30s", "5m", "Never")
		}
		if maybe(rng) {
			d["expireAfter"] = pick(rng, "720h", "168h", "Never", "24h30m")
		}
		if maybe(rng) {
			d["budgets"] = []any{map[string]any{"nodes": "20%"}, map[string]any{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}}
		}
		s["disruption"] = d
	}
	if maybe(rng) {
		s["limits"] = map[string]any{"cpu": pick[any](rng, 1000, "1000", "200"), "memory": pick(rng, "1000Gi", "4Ti")}
	}
	if rng.IntN(3) == 0 {
		s["weight"] = pick(rng, 10, 50, 100)
	}
	if rng.IntN(3) == 0 { // a dump
		meta := np["metadata"].(map[string]any)
		meta["resourceVersion"], meta["uid"], meta["generation"] = "48213", "0b6f7e9e-3c1e-4c55-9f6e-3a1d2a9f1e01", 3
		meta["annotations"] = map[string]any{"karpenter.sh/nodepool-hash": "6821555240594823858", "karpenter.sh/nodepool-hash-version": "v2"}
		np["status"] = map[string]any{"resources": map[string]any{"cpu": "48", "memory": "192Gi", "pods": "348"}}
	}
	return np
}

func genClass(rng *rand.Rand, name string) map[string]any {
	cluster := pick(rng, clusters...)
	family := pick(rng, "AL2", "AL2023", "Bottlerocket", "Ubuntu", "Custom", "Windows2019", "Windows2022")
	spec := map[string]any{
		"amiFamily":                  family,
		"subnetSelectorTerms":        []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": cluster}}},
		"securityGroupSelectorTerms": []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": cluster}}},
	}
	if maybe(rng) {
		spec["role"] = "KarpenterNodeRole-" + cluster
	} else {
		spec["instanceProfile"] = "KarpenterNodeInstanceProfile-" + cluster
	}
	if family == "Custom" || rng.IntN(3) == 0 {
		spec["amiSelectorTerms"] = []any{pick[any](rng,
			map[string]any{"id": "ami-0a1b2c3d4e5f60718"},
			map[string]any{"name": "amazon-eks-node-1.29-*", "owner": "amazon"},
			map[string]any{"tags": map[string]any{"karpenter.sh/discovery": cluster}},
			map[string]any{"name": "ubuntu-eks/k8s_1.29/images/*", "owner": "099720109477"})}
	}
	if rng.IntN(3) == 0 {
		spec["userData"] = pick(rng, "#!/bin/bash\necho hello\n", "[settings.kubernetes]\nmax-pods = 110\n")
	}
	if rng.IntN(3) == 0 {
		spec["blockDeviceMappings"] = []any{map[string]any{"deviceName": pick(rng, "/dev/xvda", "/dev/xvdb"), "rootVolume": maybe(rng),
			"ebs": map[string]any{"volumeSize": pick(rng, "100Gi", "50G", "1536Mi"), "volumeType": "gp3", "encrypted": true, "deleteOnTermination": true, "iops": 3000, "throughput": 125}}}
	}
	if rng.IntN(3) == 0 {
		m := map[string]any{}
		if maybe(rng) {
			m["httpTokens"] = pick(rng, "required", "optional")
		}
		if maybe(rng) {
			m["httpPutResponseHopLimit"] = pick(rng, 1, 2, 3)
		}
		if maybe(rng) {
			m["httpEndpoint"] = "enabled"
		}
		spec["metadataOptions"] = m
	}
	if rng.IntN(4) == 0 {
		spec["tags"] = map[string]any{"team": "platform", "karpenter.sh/discovery": cluster}
	}
	if rng.IntN(5) == 0 {
		spec["detailedMonitoring"] = true
		spec["associatePublicIPAddress"] = false
	}
	if rng.IntN(6) == 0 {
		spec["instanceStorePolicy"] = "RAID0"
	}
	meta := map[string]any{"name": name}
	if rng.IntN(5) == 0 {
		meta["annotations"] = map[string]any{AliasVersionAnnotation: pick(rng, "v20240807", "v20241011")}
	}
	nc := map[string]any{"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "metadata": meta, "spec": spec}
	if rng.IntN(3) == 0 {
		nc["status"] = map[string]any{
			"subnets":         []any{map[string]any{"id": "subnet-0aa11bb22cc33dd44", "zone": "eu-west-1a", "zoneID": "euw1-az1"}},
			"securityGroups":  []any{map[string]any{"id": "sg-0123456789abcdef0", "name": "eks-cluster-sg-" + cluster}},
			"amis":            []any{map[string]any{"id": "ami-0a1b2c3d4e5f60718", "name": "amazon-eks-node-1.29-v20240807", "requirements": []any{map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64"}}}}},
			"instanceProfile": cluster + "_1234567890",
		}
	}
	return nc
}

func genClaim(rng *rand.Rand, name, pool string) map[string]any {
	spec := map[string]any{"requirements": genRequirements(rng), "nodeClassRef": genRef(rng, "default")}
	if maybe(rng) {
		spec["kubelet"] = genKubelet(rng)
	}
	if maybe(rng) {
		spec["resources"] = map[string]any{"requests": map[string]any{"cpu": "1500m", "memory": "3Gi", "pods": "7"}}
	}
	if rng.IntN(3) == 0 {
		spec["taints"] = genTaints(rng)
	}
	meta := map[string]any{"name": name}
	if rng.IntN(5) > 0 {
		meta["labels"] = map[string]any{"karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": "spot"}
	}
	nc := map[string]any{"apiVersion": "karpenter.sh/v1beta1", "kind": "NodeClaim", "metadata": meta, "spec": spec}
	if maybe(rng) {
		nc["status"] = map[string]any{"nodeName": fmt.Sprintf("ip-10-0-%d-17.eu-west-1.compute.internal", rng.IntN(255)), "providerID": "aws:///eu-west-1a/i-0f1e2d3c4b5a69788",
			"imageID": "ami-0a1b2c3d4e5f60718", "capacity": map[string]any{"cpu": "4", "memory": "15155Mi", "pods": "58"}}
	}
	return nc
}
