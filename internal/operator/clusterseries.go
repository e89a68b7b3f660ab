package operator

import (
	"net/http"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodewright/nodewright/internal/metrics"
)

// clusterSeries appends the per-node and per-pod series to the metrics
// server's /metrics answer: they are written as they are read from the
// cache (metrics.ClusterSeries), not gathered into the registry. Until
// the wiring sets them the answer is the registry's alone.
type clusterSeries struct {
	series atomic.Pointer[metrics.ClusterSeries]
}

// filter wraps the registry's handler: its answer is asked for in the
// text format and uncompressed, and the cluster's series follow it.
func (c *clusterSeries) filter(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(log logr.Logger, registry http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r = r.Clone(r.Context())
			r.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
			r.Header.Del("Accept-Encoding")
			registry.ServeHTTP(w, r)
			if s := c.series.Load(); s != nil {
				if _, err := s.WriteTo(w); err != nil {
					log.V(1).Info("writing the per-node and per-pod series", "error", err.Error())
				}
			}
		}), nil
	}, nil
}
