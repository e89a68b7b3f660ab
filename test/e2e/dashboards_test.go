package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/metrics"
)

// eventOnly are the series the chart's queries read that a run without
// that event does not have yet: each is checked against the series the
// controller registers (its name and labels) instead of a live one.
var eventOnly = map[string]string{
	"nodewright_node_repairs_total":                    "a node repaired",
	"karpenter_cloudprovider_errors_total":             "an AWS call failing",
	"nodewright_disruption_blocked_nodes":              "a node a disruption method keeps",
	"nodewright_nodepool_drift_rollout_nodes":          "a drift rollout",
	"nodewright_disruption_estimated_savings_per_hour": "a command carried out",
	"karpenter_nodeclaims_disrupted_total":             "a voluntary disruption",
	"nodewright_disruption_decisions_total":            "a disruption command",
	"karpenter_voluntary_disruption_decisions_total":   "a voluntary disruption",
	"karpenter_nodes_termination_duration_seconds":     "a node terminated",
	"karpenter_nodes_terminated_total":                 "a node terminated",
}

// checkChartQueries reads the dashboards and alerts the chart installs
// and checks every series their queries select against what the
// controller served (scrape, the text of its /metrics): the metric, the
// labels the query matches, groups and joins on, and the values it asks
// for of the labels that say what is measured (kind, type,
// resource_type, controller, source). A query of a series no run serves,
// or of a label it does not carry, fails.
func checkChartQueries(t *testing.T, scrape string) {
	t.Helper()
	families, err := (&expfmt.TextParser{}).TextToMetricFamilies(strings.NewReader(scrape))
	if err != nil {
		t.Fatalf("reading the controller's /metrics: %v", err)
	}
	catalog, err := metrics.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := charts.Render(charts.Release{Name: "nodewright", Namespace: "nodewright", Values: map[string]any{
		"settings": map[string]any{"clusterName": "prod"}, "image": map[string]any{"repository": "registry.example/nodewright"},
		"dashboards": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}})
	if err != nil {
		t.Fatal(err)
	}
	checkKarpenterDashboards(t, families, catalog)
	queries := chartQueries(t, objs)
	if len(queries) < 40 {
		t.Fatalf("only %d queries in the chart's dashboards and alerts", len(queries))
	}
	for _, q := range queries {
		sels, grouping := selectors(q.expr)
		if len(sels) == 0 {
			t.Errorf("%s: no series selected in %q", q.where, q.expr)
			continue
		}
		labelsSeen := map[string]bool{}
		for _, s := range sels {
			for _, l := range checkSelector(t, q, s, families, catalog) {
				labelsSeen[l] = true
			}
		}
		for _, l := range grouping {
			if !labelsSeen[l] {
				t.Errorf("%s: %q groups or joins on %s, which none of its series carries", q.where, q.expr, l)
			}
		}
	}
}

// karpenterDashboards are the series Karpenter's published Grafana
// dashboards query (karpenter-capacity-dashboard.json,
// karpenter-controllers.json, karpenter-controllers-allocation.json and
// karpenter-performance-dashboard.json of aws/karpenter-provider-aws's
// getting-started guide), with the labels they read. Left out: the
// node_* series of node-exporter, and karpenter_allocation_controller_*,
// which Karpenter v1.15 no longer serves either.
var karpenterDashboards = map[string][]string{
	"controller_runtime_reconcile_errors_total":    {"controller"},
	"controller_runtime_reconcile_time_seconds":    {"controller"},
	"controller_runtime_reconcile_total":           {"controller", "result"},
	"karpenter_nodeclaims_disrupted_total":         {"nodepool"},
	"karpenter_nodepools_limit":                    {"resource_type"},
	"karpenter_nodepools_usage":                    {"resource_type"},
	"karpenter_nodes_allocatable":                  {"arch", "capacity_type", "instance_type", "nodepool", "resource_type", "zone"},
	"karpenter_nodes_created_total":                {"nodepool"},
	"karpenter_nodes_terminated_total":             {"nodepool"},
	"karpenter_nodes_termination_duration_seconds": {"quantile"},
	"karpenter_nodes_total_daemon_requests":        {"arch", "capacity_type", "instance_type", "nodepool", "resource_type", "zone"},
	"karpenter_nodes_total_pod_requests":           {"arch", "capacity_type", "instance_type", "nodepool", "resource_type", "zone"},
	"karpenter_pods_startup_duration_seconds":      {"quantile"},
	"karpenter_pods_state":                         {"arch", "capacity_type", "instance_type", "nodepool", "phase"},
	// (the dashboards also group it by nodepool, which Karpenter v1.15
	// does not label it with either: the _by_nodepool_total series has it)
	"karpenter_voluntary_disruption_decisions_total": {"consolidation_type", "decision"},
	"karpenter_voluntary_disruption_eligible_nodes":  {"reason"},
	"workqueue_depth": {"name"},
}

// checkKarpenterDashboards: every series Karpenter's own dashboards read
// is served under its name, with the labels they read.
func checkKarpenterDashboards(t *testing.T, families map[string]*dto.MetricFamily, catalog []metrics.FamilyDoc) {
	t.Helper()
	for name, labels := range karpenterDashboards {
		matchers := make([]matcher, 0, len(labels))
		for _, l := range labels {
			if l != "quantile" {
				matchers = append(matchers, matcher{l, "=~", ".*"})
			}
		}
		checkSelector(t, query{"Karpenter's dashboards", name}, selector{metric: name, matchers: matchers}, families, catalog)
	}
}

type query struct{ where, expr string }

// chartQueries are the expressions of the PrometheusRule's alerts, and
// of the dashboards' panels and variables.
func chartQueries(t *testing.T, objs []*unstructured.Unstructured) []query {
	t.Helper()
	var out []query
	for _, o := range objs {
		switch o.GetKind() {
		case "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
				for _, r := range rules {
					rule := r.(map[string]any)
					out = append(out, query{"alert " + fmt.Sprint(rule["alert"]), fmt.Sprint(rule["expr"])})
				}
			}
		case "ConfigMap":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for name, text := range data {
				var d struct {
					Panels []struct {
						Title   string
						Targets []struct{ Expr string }
					}
					Templating struct {
						List []struct{ Definition string }
					}
				}
				if err := json.Unmarshal([]byte(text), &d); err != nil {
					t.Fatalf("dashboard %s: %v", name, err)
				}
				for _, p := range d.Panels {
					for _, tg := range p.Targets {
						out = append(out, query{name + ": " + p.Title, tg.Expr})
					}
				}
				for _, v := range d.Templating.List {
					if m := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`).FindStringSubmatch(v.Definition); m != nil {
						out = append(out, query{name + ": variable", fmt.Sprintf("group by (%s) (%s)", m[2], m[1])})
					}
				}
			}
		}
	}
	return out
}

// selector is a series selector of a query: the metric and its matchers.
type selector struct {
	metric   string
	matchers []matcher
}

type matcher struct{ label, op, value string }

// promKeywords are PromQL words that are not series: aggregations,
// grouping and set operators, modifiers.
var promKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "count": true, "group": true, "stddev": true, "stdvar": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "by": true, "without": true, "on": true,
	"ignoring": true, "group_left": true, "group_right": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true,
}

var (
	identifier = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	matcherRe  = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?`)
)

// selectors reads the series selectors of a PromQL expression, and the
// labels it groups or joins on (by, without, on, ignoring).
func selectors(expr string) (sels []selector, grouping []string) {
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'':
			end := strings.IndexByte(expr[i+1:], c)
			i += end + 2
		case c == '[':
			i += strings.IndexByte(expr[i:], ']') + 1
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (expr[i] >= '0' && expr[i] <= '9' || expr[i] == '.' || expr[i] == 'e') {
				i++
			}
		case identifier.MatchString(expr[i:]):
			word := identifier.FindString(expr[i:])
			i += len(word)
			rest := strings.TrimLeft(expr[i:], " ")
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right":
				if strings.HasPrefix(rest, "(") {
					end := strings.IndexByte(rest, ')')
					for _, l := range strings.Split(rest[1:end], ",") {
						if l = strings.TrimSpace(l); l != "" {
							grouping = append(grouping, l)
						}
					}
					i = len(expr) - len(rest) + end + 1
				}
			case promKeywords[word] || strings.HasPrefix(rest, "("):
				// an aggregation, operator or function
			default:
				s := selector{metric: word}
				if strings.HasPrefix(rest, "{") {
					body := rest[1:]
					for {
						m := matcherRe.FindStringSubmatch(body)
						if m == nil {
							break
						}
						s.matchers = append(s.matchers, matcher{m[1], m[2], m[3]})
						body = body[len(m[0]):]
					}
					end := strings.IndexByte(body, '}')
					i = len(expr) - len(body) + end + 1
				}
				sels = append(sels, s)
			}
		default:
			i++
		}
	}
	return sels, grouping
}

// identity are the labels whose value says what is measured, not its
// state: a query's equality on them must name a value the run served.
var identity = []string{"kind", "type", "resource_type", "controller", "source"}

// checkSelector checks one selector and returns the labels its series
// carry.
func checkSelector(t *testing.T, q query, s selector, families map[string]*dto.MetricFamily, catalog []metrics.FamilyDoc) []string {
	t.Helper()
	name, extra := s.metric, []string{}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f := families[base]; f != nil && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				name = base
				if suffix == "_bucket" {
					extra = append(extra, "le")
				}
			}
		}
	}
	labels := map[string]map[string]bool{}
	f := families[name]
	if f == nil {
		event, ok := eventOnly[name]
		var doc *metrics.FamilyDoc
		for i := range catalog {
			if catalog[i].Name == name {
				doc = &catalog[i]
			}
		}
		if !ok || event == "" || doc == nil {
			t.Errorf("%s: %q selects %s, which the controller did not serve", q.where, q.expr, s.metric)
			return nil
		}
		for _, l := range doc.Labels {
			labels[l] = nil // no values known
		}
	} else {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] == nil {
					labels[lp.GetName()] = map[string]bool{}
				}
				labels[lp.GetName()][lp.GetValue()] = true
			}
		}
	}
	for _, l := range extra {
		labels[l] = map[string]bool{}
	}
	for _, m := range s.matchers {
		values, ok := labels[m.label]
		if !ok {
			t.Errorf("%s: %q matches %s on %s, which it does not carry", q.where, q.expr, s.metric, m.label)
			continue
		}
		if m.op == "=" && values != nil && slices.Contains(identity, m.label) && !values[m.value] {
			t.Errorf("%s: %q asks for %s{%s=%q}; the run served %s values %v", q.where, q.expr, s.metric, m.label, m.value, m.label, slices.Sorted(maps.Keys(values)))
		}
	}
	out := make([]string, 0, len(labels))
	for l := range labels {
		out = append(out, l)
	}
	return out
}

// scrapeMetrics is the text of a /metrics answer.
func scrapeMetrics(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
