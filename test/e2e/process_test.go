package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// The controllers in their own process, `nodewright controller --cloud
// aws` with the AWS SDK's real clients against the simulated account's
// HTTP endpoint, run the healthy scenario to the end, then replace a node
// whose instance AWS schedules for retirement (read from the interruption
// queue over SQS); the figures read that process's memory and API
// requests, and the chart's dashboards and alerts its /metrics.
func TestHealthyWithTheControllerInItsOwnProcess(t *testing.T) {
	bin := harness.BuildNodewright(t)
	name, manifest, err := scenarios.Load("healthy")
	if err != nil {
		t.Fatal(err)
	}
	sim := harness.Start(t, func(o *runner.Options) { o.ControllerProcess, o.Operator.Profiling = bin, true })
	ctx := context.Background()
	retire := runner.Step{Name: "retire an instance", Manifest: []byte("apiVersion: sim.nodewright.dev/v1\nkind: Interruption\nspec: {kind: scheduled-change}\n")}
	results, err := sim.RunSteps(ctx, []runner.Step{{Name: name, Manifest: manifest}, retire}, 3*time.Minute, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if after := results[1].Snapshot; !after.Done() || harness.Mention(results[1].Disruptions, "InstanceScheduledChange: AWS Health scheduled change for instance") != 1 {
		t.Errorf("after the scheduled change: %d/%d pods Running; disruptions %v", after.RunningPods, after.Pods, results[1].Disruptions)
	}
	// Exactly one NodeClaim goes for the retirement. Consolidation stays on
	// meanwhile and may remove another node the moved pods left emptier;
	// every other NodeClaim gone must be one it chose.
	now, retired := harness.ClaimNames(results[1].Snapshot), 0
	for c := range harness.ClaimNames(results[0].Snapshot) {
		if now[c] {
			continue
		}
		why := "NodeClaim " + c + ": "
		switch all := results[1].Snapshot.Disruptions; {
		case harness.Mention(all, why+"InstanceScheduledChange:") > 0:
			retired++
		case harness.Mention(all, why+"DisruptionTerminating:") == 0:
			t.Errorf("NodeClaim %s went without a disruption that names it: %v", c, all)
		}
	}
	if retired != 1 {
		t.Errorf("%d NodeClaims replaced for one instance's scheduled retirement, want 1", retired)
	}
	f := results[0].Figures
	if !strings.HasPrefix(f.Process, "nodewright controller process") || f.PeakRSS < 10<<20 {
		t.Errorf("figures from %q with peak RSS %d bytes, want the controller process's", f.Process, f.PeakRSS)
	}
	if f.Requests["create nodeclaims"] < 1 || f.RequestsPerNodeClaim() <= 0 {
		t.Errorf("the controller process's requests were not read: %v", f.Requests)
	}
	// kube-apiserver's own count holds every client's: nodewright's
	// NodeClaims, the kubelets' nodes, and the watch events they caused.
	if f.APIServerRequests["create nodeclaims"] < f.Requests["create nodeclaims"] || f.APIServerRequests["create nodes"] < 1 ||
		f.APIServerWatchEvents["nodeclaims"] < 1 || f.APIServerWatchEvents["nodeclaims bytes"] <= 0 {
		t.Errorf("kube-apiserver's requests %v and watch events %v do not hold the step's NodeClaims and nodes", f.APIServerRequests, f.APIServerWatchEvents)
	}
	instances := 0
	for _, inst := range sim.Account.Instances() {
		if inst.State.Name == "running" {
			instances++
		}
	}
	if snap := results[1].Snapshot; instances != snap.Nodes {
		t.Errorf("%d running instances for %d nodes", instances, snap.Nodes)
	}
	// The chart's dashboards and alerts read what this process serves.
	checkChartQueries(t, scrapeMetrics(t, sim.ControllerMetrics()))
	// --enable-profiling: its heap profile, on its metrics address.
	resp, err := http.Get("http://" + sim.ControllerMetrics() + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("the controller process's heap profile: %s %v\n%.200s", resp.Status, err, body)
	}
}
