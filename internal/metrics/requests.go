package metrics

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
)

// KubeRequests counts the requests a process sends to the Kubernetes API
// server, by verb (get, list, watch, create, update, patch, delete) and
// resource ("pods", "nodeclaims/status"), as
// nodewright_kube_requests_total, and times those that are not watches
// (from sending the request to its response's headers) as
// nodewright_kube_request_duration_seconds: how long the process waits
// for the API server, apart from its own client-side rate limit.
type KubeRequests struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewKubeRequests registers the counter and the histogram (reusing those
// registered before).
func NewKubeRequests(reg prometheus.Registerer) (*KubeRequests, error) {
	var err error
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "kube_requests_total",
		Help: "Requests sent to the Kubernetes API server, by verb and resource."}, []string{"verb", "resource"})
	c = register(reg, c, &err)
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "nodewright", Name: "kube_request_duration_seconds",
		Help:    "How long the Kubernetes API server took to answer a request (watches left out), by verb and resource.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}, []string{"verb", "resource"})
	h = register(reg, h, &err)
	return &KubeRequests{total: c, duration: h}, err
}

// Wrap counts and times every request a client made from rc sends.
func (k *KubeRequests) Wrap(rc *rest.Config) {
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			verb, resource := Classify(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
			k.total.WithLabelValues(verb, resource).Inc()
			if verb == "watch" {
				return next.RoundTrip(req)
			}
			start := time.Now()
			resp, err := next.RoundTrip(req)
			k.duration.WithLabelValues(verb, resource).Observe(time.Since(start).Seconds())
			return resp, err
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
	parts, ok := resourcePath(path)
	if !ok {
		return strings.ToLower(method), "discovery"
	}
	resource, named := resourceOf(parts)
	return verbOf(method, watch, named), resource
}

// resourcePath is the part of an API path after the API group and
// version; ok is false for a path that names no resource.
func resourcePath(path string) (_ []string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		return parts[2:], true
	case len(parts) >= 4 && parts[0] == "apis":
		return parts[3:], true
	}
	return nil, false
}

// resourceOf is the resource (with its subresource) a resource path
// names, and whether it names one object rather than a collection.
func resourceOf(parts []string) (resource string, named bool) {
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource = parts[0]
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	return resource, len(parts) >= 2
}

// writeVerbs are the verbs of the methods that write one object.
var writeVerbs = map[string]string{
	http.MethodPost:  "create",
	http.MethodPut:   "update",
	http.MethodPatch: "patch",
}

// verbOf is the Kubernetes verb of a request with the method, on one
// object when named, watching when watch says so.
func verbOf(method, watch string, named bool) string {
	switch method {
	case http.MethodGet:
		return readVerb(watch, named)
	case http.MethodDelete:
		if !named {
			return "deletecollection"
		}
		return "delete"
	}
	if verb, ok := writeVerbs[method]; ok {
		return verb
	}
	return strings.ToLower(method)
}

// readVerb is the verb of a GET: watch, get for one object, else list.
func readVerb(watch string, named bool) string {
	switch {
	case watch == "true" || watch == "1":
		return "watch"
	case named:
		return "get"
	}
	return "list"
}

// Counts returns the requests counted so far by "verb resource".
func (k *KubeRequests) Counts() map[string]float64 {
	return byVerbAndResource(k.total, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// Seconds returns the time the requests timed so far took in all, by
// "verb resource".
func (k *KubeRequests) Seconds() map[string]float64 {
	return byVerbAndResource(k.duration, func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() })
}

// byVerbAndResource sums value over a collector's series by "verb
// resource".
func byVerbAndResource(c prometheus.Collector, value func(*dto.Metric) float64) map[string]float64 {
	out := map[string]float64{}
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		out[VerbAndResource(pb.GetLabel())] += value(&pb)
	}
	return out
}

// VerbAndResource is the "verb resource" key of a series of
// nodewright_kube_requests_total or nodewright_kube_request_duration_seconds.
func VerbAndResource(labels []*dto.LabelPair) string {
	var verb, resource string
	for _, l := range labels {
		switch l.GetName() {
		case "verb":
			verb = l.GetValue()
		case "resource":
			resource = l.GetValue()
		}
	}
	return verb + " " + resource
}
