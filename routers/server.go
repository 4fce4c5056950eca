package routers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/config"
)

// Server is the HTTP API. Build it with New; it is an http.Handler.
type Server struct {
	e *echo.Echo
	// bodyLimit is echo's BodyLimit, applied to requests that have a body.
	bodyLimit echo.MiddlewareFunc
	deps      Deps
	log       *slog.Logger
	cat       atomic.Pointer[catalog]
	metrics   *metrics
	fast      fastRoutes
	sealer    sealer
	// reloadMu makes reloads take turns; requests never wait on it.
	reloadMu sync.Mutex
	// files are the process-wide bounds of the upload and export routes (handlers_files.go).
	files *fileGates
}

// New builds the server from the communities loaded at start.
func New(deps Deps) (*Server, error) {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{deps: deps, log: deps.Logger, metrics: newMetrics(), fast: newFastRoutes(deps.Settings.BasePath)}
	s.files = newFileGates(deps.Settings.Files)
	for _, c := range deps.Collectors {
		s.metrics.reg.MustRegister(c)
	}
	cat, err := newCatalog(deps.Communities, deps.Settings, s.log)
	if err != nil {
		return nil, err
	}
	s.sealCatalog(cat)
	s.cat.Store(cat)
	s.warnClientBytes(cat)
	s.metrics.communities(cat)
	s.metrics.reloaded(true)
	s.e = s.routes()
	return s, nil
}

// ErrReloadFailed is returned by Reload when the new communities did not load; the old ones
// keep being served.
var ErrReloadFailed = errors.New("reload failed; still serving the previous communities")

// Reload loads every community again and swaps the new catalog in atomically. When loading
// fails, it logs every error, keeps serving the old catalog and returns ErrReloadFailed.
// Requests in flight finish on the catalog they started with.
func (s *Server) Reload(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	start := time.Now()
	set, err := s.deps.Load(ctx)
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			s.log.Error("reload: config error", slog.String("error", e.Error()))
		}
		if len(list.Fatal()) > 0 {
			s.metrics.reloaded(false)
			return ErrReloadFailed
		}
	} else if err != nil {
		s.log.Error("reload failed", slog.Any("error", err))
		s.metrics.reloaded(false)
		return ErrReloadFailed
	}
	cat, err := newCatalog(set, s.deps.Settings, s.log)
	if err != nil {
		s.log.Error("reload failed", slog.Any("error", err))
		s.metrics.reloaded(false)
		return ErrReloadFailed
	}
	s.sealCatalog(cat)
	s.cat.Store(cat)
	if s.deps.Applied != nil {
		s.deps.Applied(set)
	}
	s.warnClientBytes(cat)
	s.metrics.communities(cat)
	s.metrics.reloaded(true)
	s.log.Info("reloaded communities", slog.Int("communities", len(cat.ids)), slog.Duration("duration", time.Since(start)))
	return nil
}

// Register adds a collector to GET /metrics after New: the fast path's counters, which exist
// only once the server they count for does.
func (s *Server) Register(c prometheus.Collector) error {
	return s.metrics.reg.Register(c)
}

// toolsOff reports whether c's client tools are switched off right now.
func (s *Server) toolsOff(id string) bool {
	return config.ClientToolsDisabled(s.deps.Getenv, id)
}
