package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/scenarios"
)

// The baseline holds the scale scenario's pods on m5.2xlarge nodes at 85 %
// of their CPU, with the scenario's Deployments and nothing of its
// NodePool; its first step has the node class, aws-auth, a static
// NodePool of that many nodes and one pod.
func TestBaselineIsSizedForThePods(t *testing.T) {
	_, manifest, err := scenarios.Load("scale")
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := scenarios.WithPods(manifest, 10000)
	if err != nil {
		t.Fatal(err)
	}
	nodes, workload, err := baseline(scaled)
	if err != nil {
		t.Fatal(err)
	}
	// 2,500 pods each of 100m, 250m, 500m and 1 CPU: 4,625 CPUs; an
	// m5.2xlarge offers 7.91 of its 8 at 85 %.
	if nodes < 680 || nodes > 700 {
		t.Errorf("%d baseline nodes for 4,625 CPUs", nodes)
	}
	if n := strings.Count(string(workload), "kind: Deployment"); n != 4 || strings.Contains(string(workload), "kind: NodePool") {
		t.Errorf("the baseline's workload has %d Deployments (want the scenario's 4) or a NodePool:\n%s", n, workload)
	}
	first := string(baselineNodes(scaled, nodes))
	for _, want := range []string{"kind: EC2NodeClass", "kind: ConfigMap", "replicas: " + strconv.Itoa(nodes), "m5.2xlarge", "name: nodes-ready"} {
		if !strings.Contains(first, want) {
			t.Errorf("the baseline's first step lacks %q:\n%s", want, first)
		}
	}
	// One Deployment: the pod that tells the nodes are up, made again by
	// its ReplicaSet if it is deleted.
	if strings.Contains(first, "name: general") || strings.Count(first, "kind: Deployment") != 1 {
		t.Errorf("the baseline's first step keeps the scenario's NodePool or workloads:\n%s", first)
	}
}

// -controller-gomemlimit takes the sizes the Go runtime takes as
// GOMEMLIMIT (a program given another value stops before its first line);
// each value is tried on this test binary too.
func TestControllerMemoryLimitIsWhatGoTakes(t *testing.T) {
	for v, ok := range map[string]bool{"400MiB": true, "1GiB": true, "419430400": true, "512B": true, "400MB": false, "400Mi": false, "-1": false, "1.5GiB": false} {
		if got := goMemLimit.MatchString(v); got != ok {
			t.Errorf("-controller-gomemlimit %q accepted %v, want %v", v, got, ok)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+v)
		if err := cmd.Run(); (err == nil) != ok {
			t.Errorf("a Go program started with GOMEMLIMIT=%q: %v (want it to run: %v)", v, err, ok)
		}
	}
}
