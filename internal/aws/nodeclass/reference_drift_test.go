package nodeclass_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/referencetest"
	"github.com/nodewright/nodewright/internal/state"
)

// awsOracleGoMod is the go.mod of an oracle over the AWS provider's
// module (the newest release), core replaced by v1.15.0: the proxy
// refuses core v1.15.1, and v1.15.0 has the same drift code.
func awsOracleGoMod(name string) string {
	return "module nodewright.local/" + name + "\n\ngo 1.26.11\n\nrequire " + referencetest.AWSProvider + " " + referencetest.AWSProviderNew + "\n\n" +
		"replace sigs.k8s.io/karpenter => sigs.k8s.io/karpenter v1.15.0\n\n" +
		"replace github.com/aws/aws-sdk-go-v2/service/timestreamwrite => github.com/aws/aws-sdk-go-v2/service/timestreamwrite v1.35.25\n"
}

// driftOracle builds the reference's static drift hashes (the AWS
// provider's EC2NodeClass.Hash, core's NodePool.Hash) under
// testdata/driftoracle.
func driftOracle(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	main, err := os.ReadFile(filepath.Join(filepath.Dir(here), "testdata", "driftoracle", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	// The proxy refuses core v1.15.1; v1.15.0 has the same hash code.
	goMod := awsOracleGoMod("drift-oracle")
	return referencetest.Oracle{Name: "drift-" + referencetest.AWSProviderNew, GoMod: goMod, Files: map[string]string{"main.go": string(main)},
		Toolchain: referencetest.Toolchain, TestDepsMissing: true}.Build(t)
}

const driftPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: batch-workers}
spec:
  template:
    metadata:
      labels: {team: analytics, tier: batch}
      annotations: {cost-center: "4410"}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: batch}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      taints:
        - {key: dedicated, value: batch, effect: NoSchedule}
        - {key: gpu, effect: PreferNoSchedule}
      startupTaints:
        - {key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}
      expireAfter: 720h
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m, budgets: [{nodes: "10%"}]}
  limits: {cpu: "1000"}
  weight: 10
`

const driftClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: batch}
spec:
  role: KarpenterNodeRole-analytics-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: analytics-prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: analytics-prod}}]
  tags: {team: analytics, env: prod}
  blockDeviceMappings:
    - {deviceName: /dev/xvda, ebs: {volumeSize: 100Gi, volumeType: gp3, encrypted: true}}
    - {deviceName: /dev/xvdb, ebs: {volumeSize: 200Gi, volumeType: gp3}}
  metadataOptions: {httpEndpoint: enabled, httpTokens: required, httpPutResponseHopLimit: 1}
  kubelet: {maxPods: 110, systemReserved: {cpu: 100m}}
`

type obj = map[string]any

// at is the map at the path of keys, made where missing.
func at(o obj, path ...string) obj {
	for _, k := range path {
		next, ok := o[k].(obj)
		if !ok {
			next = obj{}
			o[k] = next
		}
		o = next
	}
	return o
}

func list(o obj, path ...string) []any {
	l, _ := at(o, path[:len(path)-1]...)[path[len(path)-1]].([]any)
	return l
}

// driftChanges are one change to each spec field of a NodePool or an
// EC2NodeClass (and, where the hash's rules matter, the same value
// written otherwise), as users make them.
var driftChanges = []struct {
	kind, name string
	change     func(obj)
}{
	{"NodePool", "template label added", func(o obj) { at(o, "spec", "template", "metadata", "labels")["owner"] = "data" }},
	{"NodePool", "template label changed", func(o obj) { at(o, "spec", "template", "metadata", "labels")["tier"] = "online" }},
	{"NodePool", "template labels removed", func(o obj) { delete(at(o, "spec", "template", "metadata"), "labels") }},
	{"NodePool", "template labels emptied", func(o obj) { at(o, "spec", "template", "metadata")["labels"] = obj{} }},
	{"NodePool", "template annotation added", func(o obj) { at(o, "spec", "template", "metadata", "annotations")["example.com/owner"] = "data" }},
	{"NodePool", "template annotation changed", func(o obj) { at(o, "spec", "template", "metadata", "annotations")["cost-center"] = "4420" }},
	{"NodePool", "taints reordered", func(o obj) {
		l := list(o, "spec", "template", "spec", "taints")
		l[0], l[1] = l[1], l[0]
	}},
	{"NodePool", "taint effect changed", func(o obj) { list(o, "spec", "template", "spec", "taints")[0].(obj)["effect"] = "NoExecute" }},
	{"NodePool", "taint value changed", func(o obj) { list(o, "spec", "template", "spec", "taints")[0].(obj)["value"] = "etl" }},
	{"NodePool", "taint added", func(o obj) {
		s := at(o, "spec", "template", "spec")
		s["taints"] = append(list(o, "spec", "template", "spec", "taints"), obj{"key": "spot", "effect": "NoSchedule"})
	}},
	{"NodePool", "taints removed", func(o obj) { delete(at(o, "spec", "template", "spec"), "taints") }},
	{"NodePool", "startup taint removed", func(o obj) { delete(at(o, "spec", "template", "spec"), "startupTaints") }},
	{"NodePool", "startup taint changed", func(o obj) {
		list(o, "spec", "template", "spec", "startupTaints")[0].(obj)["key"] = "ebs.csi.aws.com/agent-not-ready"
	}},
	{"NodePool", "requirement value added", func(o obj) {
		r := list(o, "spec", "template", "spec", "requirements")[1].(obj)
		r["values"] = append(r["values"].([]any), "i")
	}},
	{"NodePool", "requirement minValues set", func(o obj) { list(o, "spec", "template", "spec", "requirements")[1].(obj)["minValues"] = 2 }},
	{"NodePool", "nodeClassRef renamed", func(o obj) { at(o, "spec", "template", "spec", "nodeClassRef")["name"] = "batch-v2" }},
	{"NodePool", "expireAfter changed", func(o obj) { at(o, "spec", "template", "spec")["expireAfter"] = "336h" }},
	{"NodePool", "expireAfter Never", func(o obj) { at(o, "spec", "template", "spec")["expireAfter"] = "Never" }},
	{"NodePool", "expireAfter written otherwise", func(o obj) { at(o, "spec", "template", "spec")["expireAfter"] = "720h0m0s" }},
	{"NodePool", "terminationGracePeriod set", func(o obj) { at(o, "spec", "template", "spec")["terminationGracePeriod"] = "1h" }},
	{"NodePool", "consolidateAfter changed", func(o obj) { at(o, "spec", "disruption")["consolidateAfter"] = "30m" }},
	{"NodePool", "consolidationPolicy changed", func(o obj) { at(o, "spec", "disruption")["consolidationPolicy"] = "WhenEmpty" }},
	{"NodePool", "budgets changed", func(o obj) { at(o, "spec", "disruption")["budgets"] = []any{obj{"nodes": "1"}} }},
	{"NodePool", "limits changed", func(o obj) { at(o, "spec", "limits")["cpu"] = "2000" }},
	{"NodePool", "weight changed", func(o obj) { at(o, "spec")["weight"] = 50 }},

	{"EC2NodeClass", "amiFamily written as the alias implies", func(o obj) { at(o, "spec")["amiFamily"] = "AL2023" }},
	{"EC2NodeClass", "alias pinned", func(o obj) { at(o, "spec")["amiSelectorTerms"] = []any{obj{"alias": "al2023@v20251110"}} }},
	{"EC2NodeClass", "alias of another family", func(o obj) { at(o, "spec")["amiSelectorTerms"] = []any{obj{"alias": "bottlerocket@latest"}} }},
	{"EC2NodeClass", "AMIs by id, family written", func(o obj) {
		at(o, "spec")["amiSelectorTerms"] = []any{obj{"id": "ami-0123456789abcdef0"}}
		at(o, "spec")["amiFamily"] = "AL2023"
	}},
	{"EC2NodeClass", "subnet selector changed", func(o obj) { at(o, "spec")["subnetSelectorTerms"] = []any{obj{"id": "subnet-0abc"}} }},
	{"EC2NodeClass", "security group selector changed", func(o obj) {
		at(o, "spec")["securityGroupSelectorTerms"] = []any{obj{"tags": obj{"Name": "analytics-nodes"}}}
	}},
	{"EC2NodeClass", "capacity reservation selector added", func(o obj) {
		at(o, "spec")["capacityReservationSelectorTerms"] = []any{obj{"tags": obj{"team": "analytics"}}}
	}},
	{"EC2NodeClass", "placement group selector added", func(o obj) { at(o, "spec")["placementGroupSelector"] = obj{"name": "analytics-cluster"} }},
	{"EC2NodeClass", "associatePublicIPAddress set", func(o obj) { at(o, "spec")["associatePublicIPAddress"] = false }},
	{"EC2NodeClass", "ipPrefixCount set", func(o obj) { at(o, "spec")["ipPrefixCount"] = 2 }},
	{"EC2NodeClass", "userData set", func(o obj) { at(o, "spec")["userData"] = "#!/bin/bash\necho hello\n" }},
	{"EC2NodeClass", "role changed", func(o obj) { at(o, "spec")["role"] = "KarpenterNodeRole-analytics-prod-v2" }},
	{"EC2NodeClass", "role replaced by an instance profile", func(o obj) {
		delete(at(o, "spec"), "role")
		at(o, "spec")["instanceProfile"] = "analytics-nodes"
	}},
	{"EC2NodeClass", "tag added", func(o obj) { at(o, "spec", "tags")["owner"] = "data" }},
	{"EC2NodeClass", "tag changed", func(o obj) { at(o, "spec", "tags")["env"] = "staging" }},
	{"EC2NodeClass", "tags emptied", func(o obj) { at(o, "spec")["tags"] = obj{} }},
	{"EC2NodeClass", "kubelet maxPods changed", func(o obj) { at(o, "spec", "kubelet")["maxPods"] = 58 }},
	{"EC2NodeClass", "kubelet reserved changed", func(o obj) { at(o, "spec", "kubelet", "systemReserved")["memory"] = "200Mi" }},
	{"EC2NodeClass", "volume size changed", func(o obj) { list(o, "spec", "blockDeviceMappings")[0].(obj)["ebs"].(obj)["volumeSize"] = "120Gi" }},
	{"EC2NodeClass", "volume size written otherwise", func(o obj) {
		list(o, "spec", "blockDeviceMappings")[0].(obj)["ebs"].(obj)["volumeSize"] = "102400Mi"
	}},
	{"EC2NodeClass", "volumes reordered", func(o obj) {
		l := list(o, "spec", "blockDeviceMappings")
		l[0], l[1] = l[1], l[0]
	}},
	{"EC2NodeClass", "root volume marked", func(o obj) { list(o, "spec", "blockDeviceMappings")[0].(obj)["rootVolume"] = true }},
	{"EC2NodeClass", "instanceStorePolicy RAID0", func(o obj) { at(o, "spec")["instanceStorePolicy"] = "RAID0" }},
	{"EC2NodeClass", "network interfaces set", func(o obj) {
		at(o, "spec")["networkInterfaces"] = []any{obj{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}}
	}},
	{"EC2NodeClass", "detailedMonitoring set", func(o obj) { at(o, "spec")["detailedMonitoring"] = true }},
	{"EC2NodeClass", "metadata tokens optional", func(o obj) { at(o, "spec", "metadataOptions")["httpTokens"] = "optional" }},
	{"EC2NodeClass", "connection tracking set", func(o obj) { at(o, "spec")["connectionTracking"] = obj{"tcpEstablishedTimeout": 600} }},
	{"EC2NodeClass", "context set", func(o obj) { at(o, "spec")["context"] = "cr-0123456789abcdef0" }},
	{"EC2NodeClass", "cpu options set", func(o obj) { at(o, "spec")["cpuOptions"] = obj{"nestedVirtualization": "enabled"} }},
	{"EC2NodeClass", "enclave options set", func(o obj) { at(o, "spec")["enclaveOptions"] = obj{"enabled": true} }},
}

// changePair is one of driftChanges: the object before and after it, as
// JSON.
type changePair struct{ before, after []byte }

// changePairs are driftChanges applied to driftPool and driftClass, and
// the oracle's input for them (kind, before, after; one a line).
func changePairs(t *testing.T) ([]changePair, []byte) {
	t.Helper()
	var in bytes.Buffer
	pairs := make([]changePair, len(driftChanges))
	for i, c := range driftChanges {
		base := map[string]string{"NodePool": driftPool, "EC2NodeClass": driftClass}[c.kind]
		var before, after obj
		if err := yaml.Unmarshal([]byte(base), &before); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(base), &after); err != nil {
			t.Fatal(err)
		}
		c.change(after)
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		pairs[i] = changePair{b, a}
		line, _ := json.Marshal(map[string]any{"kind": c.kind, "before": json.RawMessage(b), "after": json.RawMessage(a)})
		in.Write(append(line, '\n'))
	}
	return pairs, in.Bytes()
}

// nodewrightDrifts is whether nodewright's stamp of the object changes.
func nodewrightDrifts(t *testing.T, kind string, before, after []byte) bool {
	t.Helper()
	switch kind {
	case "NodePool":
		var a, b v1.NodePool
		if err := json.Unmarshal(before, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(after, &b); err != nil {
			t.Fatal(err)
		}
		return state.NodePoolHash(&a) != state.NodePoolHash(&b)
	default:
		var a, b awsv1.EC2NodeClass
		if err := json.Unmarshal(before, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(after, &b); err != nil {
			t.Fatal(err)
		}
		return nodeclass.Hash(&a) != nodeclass.Hash(&b)
	}
}

// Each spec field of a NodePool and an EC2NodeClass, changed once: the
// static drift nodewright measures (its stamps) is the reference's, as
// its own NodePool.Hash and EC2NodeClass.Hash decide, built from its
// modules.
func TestStaticDriftAsTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reference's hashes")
	}
	bin := driftOracle(t)
	pairs, in := changePairs(t)
	lines := referencetest.RunLines(t, bin, in)
	i, drifted := 0, 0
	for ; i < len(lines); i++ {
		var want struct {
			Drifted bool   `json:"drifted"`
			Hash    string `json:"hash"`
			After   string `json:"after"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal(lines[i], &want); err != nil {
			t.Fatal(err)
		}
		c := driftChanges[i]
		if want.Error != "" {
			t.Errorf("%s %s: the reference cannot read it: %s", c.kind, c.name, want.Error)
			continue
		}
		if want.Drifted {
			drifted++
		}
		if got := nodewrightDrifts(t, c.kind, pairs[i].before, pairs[i].after); got != want.Drifted {
			t.Errorf("%s %s: nodewright drifts %v, the reference %v", c.kind, c.name, got, want.Drifted)
		}
		if c.kind == "NodePool" {
			// The NodePool hash is the reference's value itself: its
			// NodeClaims' stamps are read as they are.
			for _, h := range [][2]string{{string(pairs[i].before), want.Hash}, {string(pairs[i].after), want.After}} {
				var np v1.NodePool
				if err := json.Unmarshal([]byte(h[0]), &np); err != nil {
					t.Fatal(err)
				}
				if got := state.NodePoolHash(&np); got != h[1] {
					t.Errorf("NodePool %s: nodewright's hash %s, the reference's %s", c.name, got, h[1])
				}
			}
		}
	}
	if i != len(driftChanges) {
		t.Fatalf("the oracle answered %d of %d", i, len(driftChanges))
	}
	t.Logf("%d changes, %d drift as the reference's hashes decide", len(driftChanges), drifted)
}
