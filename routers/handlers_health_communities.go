package routers

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/config"
)

// DocsHealth reports a community's documentation for GET /health/communities (the knowledge
// store implements it through cmd's adapter; Deps.Docs).
type DocsHealth interface {
	DocsReport(community string) (DocsReport, bool)
}

// DocsReport is the "docs" object of a community's health (knowledge.md §7.4), with what we
// add: every document's state and the knowledge store's file.
type DocsReport struct {
	Preloaded          int          `json:"preloaded"`
	PreloadFailed      []DocProblem `json:"preload_failed"`
	FetchFailed        []DocProblem `json:"fetch_failed"`
	LastRefresh        *string      `json:"last_refresh"`
	PreloadChars       int          `json:"preload_chars"`
	PreloadBudgetChars int          `json:"preload_budget_chars"`
	// Moved are the preloads the budget moved to on demand (each one a warning).
	Moved     []DocProblem `json:"moved_to_on_demand"`
	Documents []DocStatus  `json:"documents"`
	Store     *StoreStatus `json:"store"`
}

// DocProblem is a document that failed (or was moved), with the error and since when.
type DocProblem struct {
	URL   string  `json:"url"`
	Title string  `json:"title"`
	Error string  `json:"error,omitempty"`
	Since *string `json:"since,omitempty"`
}

// DocStatus is one document as the store holds it.
type DocStatus struct {
	URL        string  `json:"url"`
	Title      string  `json:"title"`
	Preload    bool    `json:"preload"`
	HasContent bool    `json:"has_content"`
	FetchedAt  *string `json:"fetched_at"`
	Bytes      int     `json:"bytes"`
	Sections   int     `json:"sections"`
	LastError  *string `json:"last_error"`
}

// StoreStatus is a community's published knowledge database.
type StoreStatus struct {
	Bytes       int64   `json:"bytes"`
	PublishedAt *string `json:"published_at"`
	AgeHours    float64 `json:"age_hours"`
}

// communityHealth is one community's entry (knowledge.md §7.4); the first six keys are the
// reference's.
type communityHealth struct {
	Status       string         `json:"status"`
	APIKey       string         `json:"api_key"`
	CORSOrigins  int            `json:"cors_origins"`
	Documents    int            `json:"documents"`
	SyncAgeHours *float64       `json:"sync_age_hours"`
	Warnings     []string       `json:"warnings"`
	Syncs        map[string]any `json:"syncs"`
	Docs         *DocsReport    `json:"docs"`
}

const platformKeyWarning = "using shared platform key. This is for demonstration only and is not sustainable. Requires a dedicated API key and active maintainer."

// healthCommunities is GET /health/communities (admin key): each community's configuration,
// key and documentation state.
func (s *Server) healthCommunities(c echo.Context) error {
	cat := s.cat.Load()
	out := make(map[string]communityHealth, len(cat.ids))
	for _, id := range cat.ids {
		h := s.communityHealth(cat.byID[id].cfg)
		s.addSyncHealth(c.Request().Context(), &h, cat.byID[id].cfg) // handlers_sync.go
		out[id] = h
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}

func (s *Server) communityHealth(cfg *config.Community) communityHealth {
	h := communityHealth{CORSOrigins: len(cfg.CORSOrigins), Documents: len(cfg.Documentation), Warnings: []string{}, Syncs: map[string]any{}}
	keyVar := cfg.AnthropicAPIKeyEnvVar
	if keyVar == nil {
		keyVar = cfg.OpenRouterAPIKeyEnvVar
	}
	switch {
	case keyVar != nil && s.getenv(*keyVar) != "":
		h.APIKey = "configured"
	case keyVar != nil:
		h.APIKey = "missing"
		h.Warnings = append(h.Warnings, fmt.Sprintf("Environment variable '%s' not set; %s", *keyVar, platformKeyWarning))
	default:
		h.APIKey = "using_platform"
		h.Warnings = append(h.Warnings, "No community-specific API key configured; "+platformKeyWarning)
	}
	if h.Documents == 0 {
		h.Warnings = append(h.Warnings, "No documentation sources configured")
	}
	degraded := h.APIKey == "using_platform"
	if d := s.deps.Docs; d != nil && h.Documents > 0 {
		if r, ok := d.DocsReport(cfg.ID); ok {
			h.Docs = &r
			for _, p := range r.PreloadFailed {
				h.Warnings = append(h.Warnings, fmt.Sprintf("Preloaded document unavailable: %s (%s): %s", p.Title, p.URL, p.Error))
				degraded = true
			}
			for _, p := range r.Moved {
				h.Warnings = append(h.Warnings, fmt.Sprintf("Preload budget exceeded: %s (%s) moved to on-demand", p.Title, p.URL))
			}
		}
	}
	switch {
	case h.Documents == 0 || h.APIKey == "missing":
		h.Status = "error"
	case degraded:
		h.Status = "degraded"
	default:
		h.Status = "healthy"
	}
	return h
}

func (s *Server) getenv(k string) string {
	if s.deps.Getenv == nil || strings.TrimSpace(k) == "" {
		return ""
	}
	return s.deps.Getenv(k)
}

// ISOTime is a time as the knowledge routes write it: ISO 8601 UTC with microseconds and
// "+00:00" (knowledge.md's conventions); nil for the zero time.
func ISOTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
	return &s
}
