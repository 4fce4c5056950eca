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
	e.Use(s.observe, middleware.Recover(), s.cors, middleware.BodyLimit("10M"))

	base := s.deps.Settings.BasePath
	if base != "" {
		// The bare prefix answers with the prefix and a slash, keeping the query (api.md §1).
		e.Any(base, func(c echo.Context) error {
			target := base + "/"
			if q := c.Request().URL.RawQuery; q != "" {
				target += "?" + q
			}
			return c.Redirect(http.StatusPermanentRedirect, target)
		})
	}
	g := e.Group(base)

	g.GET("/", s.root)
	g.GET("/health", s.health)
	g.GET("/version", s.version)
	g.GET("/communities", s.listCommunities)
	g.POST("/feedback", s.feedback)
	g.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})))
	g.POST("/admin/reload", s.reload, s.requireAdmin)

	g.GET("/:c", s.communityConfig)
	g.GET("/:c/", s.communityConfig)
	g.GET("/:c/runtime/:file", s.runtimeWheel)
	g.GET("/:c/logo", s.logo)
	s.demoRoutes(g)
	rl := s.deps.Settings.RateLimits
	g.POST("/:c/chat", s.chatHandler, s.rateLimit("chat", rl.ChatPerMinute, rl.ChatPerHour))
	g.POST("/:c/chat/resume", s.resumeHandler, s.rateLimit("resume", rl.ResumePerMinute, rl.ResumePerHour))
	g.GET("/:c/sessions/:session/artifacts/:call/*", s.artifact)

	// Preflights for every route above.
	g.OPTIONS("/*", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	return e
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
