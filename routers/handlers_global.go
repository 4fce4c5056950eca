package routers

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

func (s *Server) environment() string {
	if s.deps.Settings.Deployment == "develop" {
		return "development"
	}
	return "production"
}

// root is GET /: what this server is and where its routes are.
func (s *Server) root(c echo.Context) error {
	cat := s.cat.Load()
	return c.JSON(http.StatusOK, map[string]any{
		"name":        "Open Science Assistant",
		"version":     s.deps.Settings.Version,
		"description": "AI assistants for open-science communities",
		"communities": cat.ids,
		"endpoints": map[string]string{
			"community_config": "GET /{community_id}",
			"chat":             "POST /{community_id}/chat",
			"chat_resume":      "POST /{community_id}/chat/resume",
			"runtime_wheel":    "GET /{community_id}/runtime/{file_name}",
			"logo":             "GET /{community_id}/logo",
			"communities":      "GET /communities",
			"health":           "GET /health",
			"version":          "GET /version",
			"feedback":         "POST /feedback",
			"metrics":          "GET /metrics",
		},
	})
}

type healthBody struct {
	Status      string      `json:"status"`
	Version     string      `json:"version"`
	CommitSHA   *string     `json:"commit_sha"`
	Timestamp   string      `json:"timestamp"`
	Environment string      `json:"environment"`
	Backend     *healthBody `json:"backend,omitempty"`
	// Sections are what the HealthReporters among Deps.Collectors report (mcp_servers).
	Sections map[string]any `json:"-"`
}

// HealthReporter is a collector of Deps.Collectors that also reports a section of GET /health
// (the MCP servers' states). The server stays "healthy" whatever it reports: a section says how
// an optional part fares.
type HealthReporter interface {
	Health() (name string, report any)
}

// MarshalJSON writes the body's fields, then its sections.
func (b healthBody) MarshalJSON() ([]byte, error) {
	type plain healthBody
	out, err := json.Marshal(plain(b))
	if err != nil || len(b.Sections) == 0 {
		return out, err
	}
	extra, err := json.Marshal(b.Sections)
	if err != nil {
		return nil, err
	}
	return append(append(out[:len(out)-1], ','), extra[1:]...), nil
}

// health is GET /health. The widget reads only response.ok and, for its footer,
// backend.version and backend.commit_sha; a backend reached directly plays the edge's role too,
// so it nests its own health as backend.
func (s *Server) health(c echo.Context) error {
	var commit *string
	if s.deps.Settings.Commit != "" && s.deps.Settings.Commit != "unknown" {
		commit = strPtr(s.deps.Settings.Commit)
	}
	b := healthBody{Status: "healthy", Version: s.deps.Settings.Version, CommitSHA: commit,
		Timestamp: time.Now().UTC().Format(time.RFC3339), Environment: s.environment()}
	for _, col := range s.deps.Collectors {
		if h, ok := col.(HealthReporter); ok {
			if b.Sections == nil {
				b.Sections = map[string]any{}
			}
			name, report := h.Health()
			b.Sections[name] = report
		}
	}
	inner := b
	b.Backend = &inner
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, b)
}

// version is GET /version.
func (s *Server) version(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"version": s.deps.Settings.Version, "commit": s.deps.Settings.Commit})
}

// listCommunities is GET /communities: the available communities with their widget display,
// precomputed at each (re)load like GET /{c}.
func (s *Server) listCommunities(c echo.Context) error {
	return serveBody(c, &s.cat.Load().communities, noCache)
}

// reload is POST /admin/reload: load every community again; on failure keep the old ones.
func (s *Server) reload(c echo.Context) error {
	if err := s.Reload(c.Request().Context()); err != nil {
		if errors.Is(err, ErrReloadFailed) {
			return &apiError{http.StatusUnprocessableEntity, err.Error()}
		}
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "reloaded", "communities": s.cat.Load().ids})
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
