package runner

import (
	"context"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// planeRequests reads kube-apiserver's own counters: the requests of
// every client (kube-scheduler, kube-controller-manager, the kubelets,
// nodewright) by "verb resource[/subresource]", watches left out, and the
// watch events it sent, by resource. A step's figures are their growth.
func (s *Sim) planeRequests(ctx context.Context) (requests, watchEvents map[string]float64, _ error) {
	families, err := s.Plane.Metrics(ctx, "kube-apiserver")
	if err != nil {
		return nil, nil, err
	}
	return APIServerRequests(families), APIServerWatchEvents(families), nil
}

// APIServerRequests are kube-apiserver's apiserver_request_total by
// "verb resource[/subresource]", with the verbs of nodewright's own count
// (create, update, patch, get, list, delete), watches left out.
func APIServerRequests(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		l := labels(m.GetLabel())
		if l["verb"] == "WATCH" || l["resource"] == "" {
			continue
		}
		verb := strings.ToLower(l["verb"])
		switch verb {
		case "post":
			verb = "create"
		case "put":
			verb = "update"
		}
		key := verb + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// APIServerWatchEvents are kube-apiserver's apiserver_watch_events_total
// by resource, and the bytes they took (apiserver_watch_events_sizes)
// under "RESOURCE bytes".
func APIServerWatchEvents(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families["apiserver_watch_events_total"].GetMetric() {
		out[labels(m.GetLabel())["resource"]] += m.GetCounter().GetValue()
	}
	for _, m := range families["apiserver_watch_events_sizes"].GetMetric() {
		out[labels(m.GetLabel())["resource"]+" bytes"] += m.GetHistogram().GetSampleSum()
	}
	return out
}

func labels(pairs []*dto.LabelPair) map[string]string {
	out := make(map[string]string, len(pairs))
	for _, l := range pairs {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
