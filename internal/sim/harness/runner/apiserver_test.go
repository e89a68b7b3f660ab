package runner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
)

// kube-apiserver's counters, as it serves them (v1.34), become the
// figures by "verb resource[/subresource]" and by resource: watches and
// requests for no resource (health checks, discovery) left out.
func TestAPIServerFigures(t *testing.T) {
	const served = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/healthz",verb="GET",version=""} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="cluster",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 12
apiserver_request_total{code="409",component="apiserver",dry_run="",group="karpenter.sh",resource="nodeclaims",scope="resource",subresource="status",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="WATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 40
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="",resource="nodes",version="v1"} 30
apiserver_watch_events_total{group="karpenter.sh",resource="nodeclaims",version="v1"} 20
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="",resource="nodes",version="v1",le="+Inf"} 30
apiserver_watch_events_sizes_sum{group="",resource="nodes",version="v1"} 120000
apiserver_watch_events_sizes_count{group="",resource="nodes",version="v1"} 30
`
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(served))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"create nodeclaims": 5, "patch nodeclaims/status": 15, "create pods/binding": 40}
	if d := cmp.Diff(want, APIServerRequests(families)); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	wantEvents := map[string]float64{"nodes": 30, "nodeclaims": 20, "nodes bytes": 120000}
	if d := cmp.Diff(wantEvents, APIServerWatchEvents(families)); d != "" {
		t.Errorf("watch events (-want +got):\n%s", d)
	}
}
