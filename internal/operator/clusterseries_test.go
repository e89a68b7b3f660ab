package operator

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/metrics"
)

// A scrape of /metrics gets the registry's series and then the per-node
// and per-pod ones, in one valid text answer, whatever format and
// encoding the scraper asked for.
func TestMetricsAnswerCarriesTheClusterSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	decisions := prometheus.NewCounter(prometheus.CounterOpts{Name: "nodewright_test_decisions_total", Help: "Decisions."})
	reg.MustRegister(decisions)
	decisions.Add(3)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"karpenter.sh/nodepool": "default"}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	series := &clusterSeries{}
	filter, err := series.filter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	handler, err := filter(logr.Discard(), promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() map[string]bool {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		var parser expfmt.TextParser
		families, err := parser.TextToMetricFamilies(rec.Body)
		if err != nil {
			t.Fatalf("the answer (%s, %s) is not valid text exposition format: %v", rec.Header().Get("Content-Type"), rec.Header().Get("Content-Encoding"), err)
		}
		names := map[string]bool{}
		for name := range families {
			names[name] = true
		}
		return names
	}
	if got := scrape(); !got["nodewright_test_decisions_total"] || got["karpenter_pods_state"] {
		t.Errorf("before the wiring: families %v, want the registry's alone", got)
	}
	series.series.Store(metrics.NewClusterSeries(func() ([]*corev1.Node, []*corev1.Pod, func(*corev1.Node) bool, bool) {
		return []*corev1.Node{node}, []*corev1.Pod{pod}, func(*corev1.Node) bool { return true }, true
	}, time.Now, nil))
	got := scrape()
	for _, want := range []string{"nodewright_test_decisions_total", "karpenter_pods_state", "karpenter_nodes_current_lifetime_seconds"} {
		if !got[want] {
			t.Errorf("families %v: no %s", got, want)
		}
	}
}
