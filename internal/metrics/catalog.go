package metrics

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// captured registers nothing: it keeps the collectors it is given.
type captured struct{ collectors []prometheus.Collector }

func (c *captured) Register(col prometheus.Collector) error {
	c.collectors = append(c.collectors, col)
	return nil
}

func (c *captured) MustRegister(cols ...prometheus.Collector) {
	c.collectors = append(c.collectors, cols...)
}

func (c *captured) Unregister(prometheus.Collector) bool { return true }

// descPattern reads a Desc's String(): its name, help (both quoted) and
// variable labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// Catalog describes every family the controller serves, by name, with
// its type: the registry's (New, NewKubeRequests) and those written from
// the cache (ClusterFamilies). The metrics reference and the tests of
// the chart's dashboards and alerts read it.
func Catalog() ([]FamilyDoc, error) {
	var reg captured
	if _, err := New(&reg); err != nil {
		return nil, err
	}
	if _, err := NewKubeRequests(&reg); err != nil {
		return nil, err
	}
	var out []FamilyDoc
	for _, col := range reg.collectors {
		kind := kindOf(col)
		ch := make(chan *prometheus.Desc, 8)
		go func() { col.Describe(ch); close(ch) }()
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				return nil, fmt.Errorf("a metric description the catalog cannot read: %s", d)
			}
			name, err := strconv.Unquote(m[1])
			if err != nil {
				return nil, err
			}
			help, err := strconv.Unquote(m[2])
			if err != nil {
				return nil, err
			}
			var labels []string
			if m[3] != "" {
				labels = strings.Split(m[3], ",")
			}
			out = append(out, FamilyDoc{Name: name, Help: help, Type: kind, Labels: labels})
		}
	}
	out = append(out, ClusterFamilies()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// kindOf is a collector's metric type: a vector's by its Go type, a
// single metric's by what it writes, or as a collector of its own says.
func kindOf(c prometheus.Collector) string {
	switch c := c.(type) {
	case interface{ Kind() string }:
		return c.Kind()
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	ch := make(chan prometheus.Metric, 1)
	go func() { c.Collect(ch); close(ch) }()
	kind := "untyped"
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			continue
		}
		switch {
		case out.Counter != nil:
			kind = "counter"
		case out.Gauge != nil:
			kind = "gauge"
		case out.Histogram != nil:
			kind = "histogram"
		case out.Summary != nil:
			kind = "summary"
		}
	}
	return kind
}
