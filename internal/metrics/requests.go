package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
)

// KubeRequests counts the requests a process sends to the Kubernetes API
// server, by verb (get, list, watch, create, update, patch, delete) and
// resource ("pods", "nodeclaims/status"), as
// nodewright_kube_requests_total.
type KubeRequests struct {
	total *prometheus.CounterVec
}

// NewKubeRequests registers the counter (reusing one registered before).
func NewKubeRequests(reg prometheus.Registerer) (*KubeRequests, error) {
	var err error
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "kube_requests_total",
		Help: "Requests sent to the Kubernetes API server, by verb and resource."}, []string{"verb", "resource"})
	c = register(reg, c, &err)
	return &KubeRequests{total: c}, err
}

// Wrap counts every request a client made from rc sends.
func (k *KubeRequests) Wrap(rc *rest.Config) {
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			verb, resource := Classify(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
			k.total.WithLabelValues(verb, resource).Inc()
			return next.RoundTrip(req)
		})
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Classify names the Kubernetes verb and resource of a request to the
// API server: /api/v1/namespaces/default/pods/web-1/status with PATCH is
// ("patch", "pods/status"). Paths that are not resources (/version,
// /apis discovery) are ("get", "discovery").
func Classify(method, path, watch string) (verb, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(method), "discovery"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	switch method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

// Counts returns the requests counted so far by "verb resource".
func (k *KubeRequests) Counts() map[string]float64 {
	out := map[string]float64{}
	ch := make(chan prometheus.Metric, 64)
	go func() {
		k.total.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out[labels["verb"]+" "+labels["resource"]] += pb.GetCounter().GetValue()
	}
	return out
}
