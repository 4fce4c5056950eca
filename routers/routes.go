package routers

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes builds echo and registers every route. It is the API's table of contents.
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort, e.Debug = true, true, false
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = ipExtractor(s.deps.Settings.TrustedProxies)
	// Every request goes through s.observe (ServeHTTP), which also recovers panics, adds the
	// CORS headers and limits request bodies.
	s.bodyLimit = middleware.BodyLimit(maxBodyBytes)

	base := s.deps.Settings.BasePath
	if base != "" {
		// The bare prefix answers with the prefix and a slash, keeping the query (api.md §1).
		e.Any(base, func(c echo.Context) error {
			if c.Request().Method == http.MethodOptions {
				return c.NoContent(http.StatusNoContent) // a preflight is answered, never redirected
			}
			target := base + "/"
			if q := c.Request().URL.RawQuery; q != "" {
				target += "?" + q
			}
			return c.Redirect(http.StatusPermanentRedirect, target)
		})
	}
	g := e.Group(base)

	getRoute(g, "/", s.root)
	getRoute(g, "/health", s.health)
	getRoute(g, "/version", s.version)
	getRoute(g, "/communities", s.listCommunities)
	g.POST("/feedback", s.feedback)
	getRoute(g, "/metrics", echo.WrapHandler(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})))
	g.POST("/admin/reload", s.reload, s.requireAdmin)
	getRoute(g, "/health/communities", s.healthCommunities, s.requireAdmin)
	// The syncs (knowledge.md §7.1–7.3, handlers_sync.go).
	getRoute(g, "/sync/status", s.syncStatus)
	getRoute(g, "/sync/health", s.syncHealth)
	g.POST("/sync/trigger", s.syncTrigger, s.requireAdmin)
	getRoute(g, "/sync/jobs/:id", s.syncJob, s.requireAdmin)

	getRoute(g, "/:c", s.communityConfig)
	getRoute(g, "/:c/", s.communityConfig)
	getRoute(g, "/:c/runtime/:file", s.runtimeWheel)
	getRoute(g, "/:c/logo", s.logo)
	getRoute(g, "/:c/faq", s.faqFeed) // the public feeds (§7.5, §7.6, handlers_feeds.go)
	getRoute(g, "/:c/citations", s.citationsFeed)
	s.demoRoutes(g)
	rl := s.deps.Settings.RateLimits
	g.POST("/:c/chat", s.chatHandler, s.rateLimit("chat", rl.ChatPerMinute, rl.ChatPerHour))
	g.POST("/:c/chat/resume", s.resumeHandler, s.rateLimit("resume", rl.ResumePerMinute, rl.ResumePerHour))
	g.POST("/:c/ask", s.askHandler, s.rateLimit("chat", rl.ChatPerMinute, rl.ChatPerHour))
	getRoute(g, "/:c/sessions/:session/artifacts/:call/*", s.artifact)
	// A session's files, its runs' manifest and its export (issue 14). Writes and exports are
	// limited like resumes, under their own counter; the listings are as free as the artifacts.
	files := s.rateLimit("files", rl.ResumePerMinute, rl.ResumePerHour)
	getRoute(g, "/:c/sessions/:session/artifacts", s.manifest)
	g.POST(uploadRoute, s.uploadFiles, files)
	getRoute(g, uploadRoute, s.listFiles)
	g.DELETE("/:c/sessions/:session/files/:name", s.deleteFile, files)
	getRoute(g, "/:c/sessions/:session/export.zip", s.export, files)

	// Preflights need no route of their own: s.cors (called by s.run) adds the CORS headers,
	// and echo's router answers OPTIONS with 204 on a path some route serves and 404 on any
	// other path. (A catch-all OPTIONS route would make every unknown path a known one,
	// answering 405.)
	return e
}

// getHead are the methods of a GET route: HEAD answers wherever GET does, with the same
// status and headers; net/http drops the body.
var getHead = []string{http.MethodGet, http.MethodHead}

// getRoute registers h for GET and HEAD on path.
func getRoute(g *echo.Group, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	g.Match(getHead, path, h, m...)
}

// requireAdmin guards admin routes with the X-API-Key admin key. With no key configured the
// admin routes do not exist.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		want := s.deps.Settings.AdminKey
		if want == "" {
			return errNotFound
		}
		got := c.Request().Header.Get("X-API-Key")
		if got == "" {
			c.Response().Header().Set("WWW-Authenticate", "ApiKey")
			return errAdminKeyRequired
		}
		if !constantTimeEqual(got, want) {
			return errInvalidAdminKey
		}
		return next(c)
	}
}

// community finds the community named by the :c parameter in the current catalog.
func (s *Server) community(c echo.Context) (*community, bool) {
	cc, ok := s.cat.Load().byID[c.Param("c")]
	return cc, ok
}
