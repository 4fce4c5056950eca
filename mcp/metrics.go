package mcp

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus series of MCP servers and calls.
type Metrics struct {
	calls    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	upGauge  *prometheus.GaugeVec
	tools    *prometheus.GaugeVec
	leftOut  *prometheus.GaugeVec
}

func newMetrics() *Metrics {
	return &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assistant_mcp_calls_total", Help: "MCP tool calls by community, server, tool and result (ok, tool_error, timeout, transport, not_connected, busy, too_large).",
		}, []string{"community", "server", "tool", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assistant_mcp_call_errors_total", Help: "MCP tool calls that failed (the tool's isError, a timeout, a transport failure), by community, server and tool.",
		}, []string{"community", "server", "tool"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assistant_mcp_call_duration_seconds", Help: "Time an MCP tool call took, by community, server and tool.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"community", "server", "tool"}),
		upGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "assistant_mcp_server_up", Help: "1 when the community's MCP server is connected, 0 while it is being retried.",
		}, []string{"community", "server"}),
		tools: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "assistant_mcp_server_tools", Help: "Tools bound from the community's MCP server.",
		}, []string{"community", "server"}),
		leftOut: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "assistant_mcp_server_tools_left_out", Help: "Tools of the community's MCP server left out because it offers more than 64.",
		}, []string{"community", "server"}),
	}
}

// Collectors are the Manager's metrics, to register with the server's registry.
func (m *Manager) Collectors() []prometheus.Collector {
	x := m.metrics
	return []prometheus.Collector{x.calls, x.errors, x.duration, x.upGauge, x.tools, x.leftOut}
}

func (x *Metrics) reset() {
	x.upGauge.Reset()
	x.tools.Reset()
	x.leftOut.Reset()
}

func (x *Metrics) up(community, server string, up bool, tools, leftOut int) {
	v := 0.0
	if up {
		v = 1
	}
	x.upGauge.WithLabelValues(community, server).Set(v)
	x.tools.WithLabelValues(community, server).Set(float64(tools))
	x.leftOut.WithLabelValues(community, server).Set(float64(leftOut))
}

func (x *Metrics) done(community string, t Tool, isError bool, took time.Duration) {
	result := "ok"
	if isError {
		result = "tool_error"
		x.errors.WithLabelValues(community, t.Server, t.Remote).Inc()
	}
	x.calls.WithLabelValues(community, t.Server, t.Remote, result).Inc()
	x.duration.WithLabelValues(community, t.Server, t.Remote).Observe(took.Seconds())
}

func (x *Metrics) failed(community string, t Tool, kind string, took time.Duration) {
	x.calls.WithLabelValues(community, t.Server, t.Remote, kind).Inc()
	x.errors.WithLabelValues(community, t.Server, t.Remote).Inc()
	if took > 0 {
		x.duration.WithLabelValues(community, t.Server, t.Remote).Observe(took.Seconds())
	}
}

// Describe and Collect make the Manager a prometheus.Collector of all its series.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.Collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.Collectors() {
		c.Collect(ch)
	}
}

// Health is the "mcp_servers" section of GET /health: every server's state.
func (m *Manager) Health() (string, any) {
	st := m.Statuses()
	if st == nil {
		st = []Status{}
	}
	return "mcp_servers", st
}
