package main

// `testenv promcheck`: the Prometheus project's own reading of a /metrics text, for the tests
// of the operator's and the sidecar's metrics. It reads the text exposition on stdin, parses
// it with expfmt's TextParser (what Prometheus' scrape of format 0.0.4 uses) and lints it
// with promlint (what `promtool check metrics` runs: counters end in _total, base units,
// no reserved suffixes, help present, histogram buckets ...). It prints one JSON object:
//
//	{"families": {"<name>": {"type": "COUNTER", "help": "...",
//	                         "metrics": [{"labels": {...}, "value": 1,
//	                                      "count": 3, "sum": 0.2, "buckets": {"0.005": 1}}]}},
//	 "problems": [{"metric": "<name>", "text": "..."}]}
//
// A text the parser refuses exits 1 with the parser's message on stderr.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type promSample struct {
	Labels  map[string]string  `json:"labels"`
	Value   *float64           `json:"value,omitempty"`
	Count   *uint64            `json:"count,omitempty"`
	Sum     *float64           `json:"sum,omitempty"`
	Buckets map[string]float64 `json:"buckets,omitempty"`
}

type promFamily struct {
	Type    string       `json:"type"`
	Help    string       `json:"help"`
	Metrics []promSample `json:"metrics"`
}

type promProblem struct {
	Metric string `json:"metric"`
	Text   string `json:"text"`
}

type promReport struct {
	Families map[string]promFamily `json:"families"`
	Problems []promProblem         `json:"problems"`
}

func promcheck(in io.Reader, out io.Writer, errOut io.Writer) int {
	text, err := io.ReadAll(in)
	if err != nil {
		fmt.Fprintf(errOut, "promcheck: reading stdin: %v\n", err)
		return 1
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		fmt.Fprintf(errOut, "promcheck: not Prometheus text: %v\n", err)
		return 1
	}
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		fmt.Fprintf(errOut, "promcheck: linting: %v\n", err)
		return 1
	}
	report := promReport{Families: map[string]promFamily{}, Problems: []promProblem{}}
	for _, p := range problems {
		report.Problems = append(report.Problems, promProblem{Metric: p.Metric, Text: p.Text})
	}
	for name, family := range families {
		f := promFamily{Type: family.GetType().String(), Help: family.GetHelp(), Metrics: []promSample{}}
		for _, m := range family.GetMetric() {
			f.Metrics = append(f.Metrics, promSampleOf(family.GetType(), m))
		}
		report.Families[name] = f
	}
	encoder := json.NewEncoder(out)
	if err := encoder.Encode(report); err != nil {
		fmt.Fprintf(errOut, "promcheck: writing: %v\n", err)
		return 1
	}
	return 0
}

func promSampleOf(kind dto.MetricType, m *dto.Metric) promSample {
	s := promSample{Labels: map[string]string{}}
	for _, l := range m.GetLabel() {
		s.Labels[l.GetName()] = l.GetValue()
	}
	value := func(v float64) *float64 { return &v }
	switch kind {
	case dto.MetricType_COUNTER:
		s.Value = value(m.GetCounter().GetValue())
	case dto.MetricType_GAUGE:
		s.Value = value(m.GetGauge().GetValue())
	case dto.MetricType_UNTYPED:
		s.Value = value(m.GetUntyped().GetValue())
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		count := h.GetSampleCount()
		s.Count = &count
		s.Sum = value(h.GetSampleSum())
		s.Buckets = map[string]float64{}
		buckets := h.GetBucket()
		sort.Slice(buckets, func(i, j int) bool { return buckets[i].GetUpperBound() < buckets[j].GetUpperBound() })
		for _, b := range buckets {
			s.Buckets[strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = float64(b.GetCumulativeCount())
		}
	case dto.MetricType_SUMMARY:
		sm := m.GetSummary()
		count := sm.GetSampleCount()
		s.Count = &count
		s.Sum = value(sm.GetSampleSum())
	}
	return s
}
