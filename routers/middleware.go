package routers

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

const requestIDKey = "request_id"

// A client may send its own X-Request-ID to correlate logs; it is kept only when short and
// plain, so a header cannot inject text into logs.
var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{8,64}$`)

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// observe assigns the request id, bounds how long a response may take to write, and records
// the request in the log and the metrics after the error handler has chosen its status.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !requestIDRE.MatchString(id) {
			id = newRequestID()
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		// Ordinary answers are small; a slow reader must not hold a connection for long.
		// Streaming handlers extend their own deadline.
		_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(start.Add(writeTimeout))
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.observe(route, c.Request().Method, status, time.Since(start))
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(c.Request().Context(), level, "request",
			slog.String("request_id", id),
			slog.String("method", c.Request().Method),
			slog.String("route", route),
			slog.String("path", c.Request().URL.EscapedPath()),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)),
			slog.Int64("bytes", c.Response().Size),
		)
		return nil
	}
}

// writeTimeout bounds writing one ordinary response; a non-streamed chat may take two minutes
// (api.md §7.3). Large files extend it (extendWrite); streams push it forward on every event.
const writeTimeout = 150 * time.Second

// bulkWriteTimeout bounds sending a large file (a Pyodide runtime file is about 10 MB) to a
// slow client.
const bulkWriteTimeout = 10 * time.Minute

// extendWrite gives a large response more time to be written.
func extendWrite(c echo.Context) {
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(bulkWriteTimeout))
}

// corsHeaders are the request headers a widget may send (api.md §7.4).
const corsAllowHeaders = "Content-Type, X-API-Key, X-Anthropic-API-Key, X-OpenRouter-Key, X-User-Id, X-Request-ID, cf-turnstile-response"

// cors adds the CORS headers, and the preflight headers to an OPTIONS request, which the
// router then answers: 204 on a path some route serves, 404 on any other. The allowed origins
// are the community's cors_origins plus the server-wide list; routes that belong to no
// community allow the server-wide list plus every community's origins. A foreign origin gets
// no Access-Control-Allow-Origin: the request is still answered, but the browser keeps the
// response from the page. Public immutable files (wheels, logos) allow any origin without
// credentials, since a wheel is fetched from a blob: worker of the embedding page; their
// preflights are judged like any other path's, as they were when a catch-all route answered
// every preflight.
func (s *Server) cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Add("Vary", "Origin")
		origin := c.Request().Header.Get("Origin")
		preflight := c.Request().Method == http.MethodOptions
		if origin != "" {
			if !preflight && isPublicAsset(strings.TrimPrefix(c.Path(), s.deps.Settings.BasePath)) {
				h.Set("Access-Control-Allow-Origin", "*")
			} else if s.originAllowed(c, origin) {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Credentials", "true")
				h.Set("Access-Control-Expose-Headers", "X-Session-ID, X-Request-ID")
			}
		}
		if preflight && h.Get("Access-Control-Allow-Origin") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", "600")
		}
		return next(c)
	}
}

func isPublicAsset(route string) bool {
	return route == "/:c/runtime/:file" || route == "/:c/logo"
}

// originAllowed judges origin for the community the path names, or for the server as a whole.
// It reads the path rather than the route parameters so that a path no route serves is judged
// too.
func (s *Server) originAllowed(c echo.Context, origin string) bool {
	cat := s.cat.Load()
	rest := strings.TrimPrefix(c.Request().URL.Path, s.deps.Settings.BasePath+"/")
	id, _, _ := strings.Cut(rest, "/")
	if cc := cat.byID[id]; cc != nil {
		return cc.origins.allows(origin)
	}
	return cat.origins.allows(origin)
}
