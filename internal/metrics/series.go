package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gaugeFamily is a gauge family with a series per node or pod, built at
// each scrape. The client library's const metrics copy every label name
// and value into a pair of their own for each series: at 50,000 pods a
// scrape allocated over 200 MB that way. Here a scrape makes one pair per
// distinct name and value and the series share them.
type gaugeFamily struct {
	desc *prometheus.Desc
	// at[i] is where the i-th label (in the order given) sorts: a series'
	// pairs are kept sorted by name, as the registry wants them.
	at []int
}

func newGaugeFamily(name, help string, labels []string) gaugeFamily {
	sorted := slices.Clone(labels)
	slices.Sort(sorted)
	at := make([]int, len(labels))
	for i, l := range labels {
		at[i], _ = slices.BinarySearch(sorted, l)
	}
	return gaugeFamily{desc: prometheus.NewDesc(name, help, labels, nil), at: at}
}

// series is one series of the family: its label pairs are given in the
// family's label order.
func (f gaugeFamily) series(value float64, pairs ...*dto.LabelPair) prometheus.Metric {
	s := &gaugeSeries{desc: f.desc, labels: make([]*dto.LabelPair, len(pairs)), value: value}
	for i, p := range pairs {
		s.labels[f.at[i]] = p
	}
	s.gauge.Value = &s.value
	return s
}

// gaugeSeries is a series whose label pairs are shared: they are never
// changed once written.
type gaugeSeries struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	gauge  dto.Gauge
}

func (s *gaugeSeries) Desc() *prometheus.Desc { return s.desc }

func (s *gaugeSeries) Write(m *dto.Metric) error {
	m.Label, m.Gauge = s.labels, &s.gauge
	return nil
}

// labelPairs hands out one label pair per name and value for a scrape.
type labelPairs map[[2]string]*dto.LabelPair

// pair is the label pair of a name and a value.
func (l labelPairs) pair(name, value string) *dto.LabelPair {
	key := [2]string{name, value}
	if p, ok := l[key]; ok {
		return p
	}
	p := &struct {
		dto.LabelPair
		key [2]string
	}{key: key}
	p.Name, p.Value = &p.key[0], &p.key[1]
	l[key] = &p.LabelPair
	return &p.LabelPair
}

// pairs are the pairs of names and their values, in order.
func (l labelPairs) pairs(names []string, values ...string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, len(names))
	for i, name := range names {
		out[i] = l.pair(name, values[i])
	}
	return out
}
