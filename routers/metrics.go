package routers

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the Prometheus series the server exposes on GET /metrics. Each Server has its own
// registry, so tests can build several servers in one process.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	configStatus  *prometheus.GaugeVec
	reloadSuccess prometheus.Gauge
	reloadTime    prometheus.Gauge
	reloads       *prometheus.CounterVec
	series        atomic.Pointer[map[seriesKey]series]
	seriesMu      sync.Mutex
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assistant_http_requests_total", Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assistant_http_request_duration_seconds", Help: "Time to answer an HTTP request, by route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30, 120},
		}, []string{"route"}),
		configStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "assistant_community_config_status", Help: "1 for the status each community is served with (healthy, or degraded when its lock overlay failed and its client tools are off).",
		}, []string{"community", "status"}),
		reloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assistant_config_last_reload_success", Help: "1 if the last (re)load of the communities succeeded, 0 if it failed and the previous ones are still served.",
		}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assistant_config_last_reload_timestamp_seconds", Help: "When the communities were last (re)loaded, successfully or not.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assistant_config_reloads_total", Help: "Loads of the communities by result.",
		}, []string{"result"}),
	}
	m.series.Store(&map[seriesKey]series{})
	m.reg.MustRegister(m.requests, m.duration, m.configStatus, m.reloadSuccess, m.reloadTime, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// seriesKey names the series one request counts in.
type seriesKey struct {
	route, method string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// observe counts a request. The series are looked up in a map that is replaced, never
// modified, when a new one appears, so the usual request takes no lock and allocates nothing
// (WithLabelValues hashes its labels and formats the status on every call).
func (m *metrics) observe(route, method string, status int, d time.Duration) {
	k := seriesKey{route, methodLabel(method), status}
	sr, ok := (*m.series.Load())[k]
	if !ok {
		sr = m.addSeries(k)
	}
	sr.requests.Inc()
	sr.duration.Observe(d.Seconds())
}

// methodLabel is the method label of a request: the method itself when it is a standard one
// (RFC 9110 §9, and PATCH), or "other". A client may send any token as a method, and each
// would otherwise be a series of its own for the life of the process. The label returned is
// the constant, so a series never keeps a request's memory alive.
func methodLabel(method string) string {
	for _, m := range standardMethods {
		if method == m {
			return m
		}
	}
	return "other"
}

var standardMethods = [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodDelete, http.MethodPatch, http.MethodOptions, http.MethodConnect, http.MethodTrace}

func (m *metrics) addSeries(k seriesKey) series {
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	old := *m.series.Load()
	if sr, ok := old[k]; ok {
		return sr
	}
	sr := series{m.requests.WithLabelValues(k.route, k.method, strconv.Itoa(k.status)), m.duration.WithLabelValues(k.route)}
	// The labels come from route templates, the standard methods and status codes, so the map
	// stays small; the bound is only a second line of defence.
	if len(old) >= maxCachedSeries {
		return sr
	}
	next := make(map[seriesKey]series, len(old)+1)
	for kk, v := range old {
		next[kk] = v
	}
	next[k] = sr
	m.series.Store(&next)
	return sr
}

const maxCachedSeries = 1024

func (m *metrics) communities(cat *catalog) {
	m.configStatus.Reset()
	for _, id := range cat.ids {
		m.configStatus.WithLabelValues(id, cat.byID[id].status).Set(1)
	}
}

func (m *metrics) reloaded(ok bool) {
	m.reloadTime.SetToCurrentTime()
	if ok {
		m.reloadSuccess.Set(1)
		m.reloads.WithLabelValues("success").Inc()
	} else {
		m.reloadSuccess.Set(0)
		m.reloads.WithLabelValues("failure").Inc()
	}
}
