package routers

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/labstack/echo/v4"
)

const requestIDKey = "request_id"

// validRequestID reports whether a client's own X-Request-ID may be kept: short and plain
// ([A-Za-z0-9._-]{8,64}), so a header cannot inject text into logs.
func validRequestID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// requestIDHeader is a request id and the header value holding it, in one allocation.
type requestIDHeader struct {
	value [1]string
	hex   [32]byte
}

// newRequestID is 128 random bits in hex, as a header value. The ids must be unique, not
// secret: math/rand/v2's generator (ChaCha8, seeded by the system) needs no system call.
func newRequestID() []string {
	r := new(requestIDHeader)
	fillRequestID(&r.hex)
	r.value[0] = unsafe.String(&r.hex[0], len(r.hex)) // r.hex is never written again
	return r.value[:]
}

// fillRequestID writes a new request id into dst.
func fillRequestID(dst *[32]byte) {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	hex.Encode(dst[:], b[:])
}

// requestID is the id observe gave the request (the X-Request-ID it answers with).
func requestID(c echo.Context) string {
	if id, ok := c.Get(requestIDKey).(string); ok {
		return id
	}
	return headerValue(c.Response().Header(), "X-Request-Id")
}

// AccessLog says which requests the request log records. The zero value records every one;
// errors (status 500 and above) are recorded whatever it says.
type AccessLog struct {
	skip float64 // the share of requests not recorded, 0 to 1
}

// ParseAccessLog reads --access-log: on (or empty), off, or the share of requests to record,
// a number from 0 to 1 such as 0.1.
func ParseAccessLog(v string) (AccessLog, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "on":
		return AccessLog{}, nil
	case "off":
		return AccessLog{skip: 1}, nil
	}
	rate, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(rate >= 0 && rate <= 1) {
		return AccessLog{}, fmt.Errorf("access log %q: want on, off, or a share of requests from 0 to 1 such as 0.1", v)
	}
	return AccessLog{skip: 1 - rate}, nil
}

// records reports whether a request answered with status is recorded.
func (a AccessLog) records(status int) bool {
	switch {
	case status >= 500 || a.skip == 0:
		return true
	case a.skip >= 1:
		return false
	}
	return rand.Float64() >= a.skip
}

// writeDeadliner is net/http's response writer; asserting it directly avoids building a
// ResponseController for every request.
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// setWriteDeadline sets the deadline for writing the response.
func setWriteDeadline(w http.ResponseWriter, t time.Time) {
	if d, ok := w.(writeDeadliner); ok {
		_ = d.SetWriteDeadline(t)
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(t)
}

// ServeHTTP routes the request and runs its handler inside observe. It does what
// echo.ServeHTTP does, except that the middleware every request goes through (observe, recover,
// cors) are plain calls rather than echo middleware: echo wraps its middleware around the
// handler anew for every request, one allocation each.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := s.e.AcquireContext()
	c.Reset(r, w)
	s.e.Router().Find(r.Method, echo.GetPath(r), c)
	s.observe(c, c.Handler())
	s.e.ReleaseContext(c)
}

// observe assigns the request id, bounds how long a response may take to write, runs the
// handler (run) and records the request in the log and the metrics after the error handler has
// chosen its status. Past the request id (one allocation) it allocates nothing unless the
// request is logged.
func (s *Server) observe(c echo.Context, h echo.HandlerFunc) {
	start := time.Now()
	req := c.Request()
	idv := req.Header["X-Request-Id"] // a client's own id, kept when plain
	switch {
	case len(idv) == 0 || !validRequestID(idv[0]):
		idv = newRequestID()
	case len(idv) > 1:
		idv = idv[:1:1]
	}
	c.Response().Header()["X-Request-Id"] = idv
	// Ordinary answers are small; a slow reader must not hold a connection for long.
	// Streaming handlers extend their own deadline.
	setWriteDeadline(c.Response().Writer, start.Add(writeTimeout))
	if err := s.run(c, h); err != nil {
		c.Error(err)
	}
	status := c.Response().Status
	route := c.Path()
	if route == "" {
		route = "unmatched"
	}
	d := time.Since(start)
	s.metrics.observe(route, req.Method, status, d)
	if !s.deps.Settings.AccessLog.records(status) {
		return
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	s.log.LogAttrs(req.Context(), level, "request",
		slog.String("request_id", idv[0]),
		slog.String("method", req.Method),
		slog.String("route", route),
		slog.String("path", req.URL.EscapedPath()),
		slog.Int("status", status),
		slog.Duration("duration", d),
		slog.Int64("bytes", c.Response().Size),
	)
}

// maxBodyBytes bounds a request body (echo's BodyLimit, applied only to requests that have one).
const maxBodyBytes = "10M"

// run runs h after the CORS headers, turning a panic into a 500 as echo's Recover did, and
// limiting the body of a request that has one.
func (s *Server) run(c echo.Context, h echo.HandlerFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			perr, ok := r.(error)
			if !ok {
				perr = fmt.Errorf("%v", r)
			}
			stack := make([]byte, 4<<10)
			stack = stack[:runtime.Stack(stack, false)]
			s.log.Error("panic in a handler", slog.String("request_id", requestID(c)), slog.Any("error", perr), slog.String("stack", string(stack)))
			c.Error(perr)
			err = nil
		}
	}()
	s.cors(c)
	if body := c.Request().Body; body != nil && body != http.NoBody && !s.boundsOwnBody(c) {
		return s.bodyLimit(h)(c)
	}
	return h(c)
}

// bulk reports whether a file of n bytes gets bulkWriteTimeout rather than writeTimeout.
func bulk(n int) bool { return n > 1<<20 }

// writeTimeout bounds writing one ordinary response; a non-streamed chat may take two minutes
// (api.md §7.3). Large files extend it (extendWrite); streams push it forward on every event.
const writeTimeout = 150 * time.Second

// bulkWriteTimeout bounds sending a large file (a Pyodide runtime file is about 10 MB) to a
// slow client.
const bulkWriteTimeout = 10 * time.Minute

// extendWrite gives a large response more time to be written.
func extendWrite(c echo.Context) {
	setWriteDeadline(c.Response().Writer, time.Now().Add(bulkWriteTimeout))
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
func (s *Server) cors(c echo.Context) {
	h := c.Response().Header()
	if v := h["Vary"]; len(v) == 0 {
		h["Vary"] = varyOrigin // shared, never written into (see static.go)
	} else {
		h["Vary"] = append(v, "Origin")
	}
	origin := headerValue(c.Request().Header, "Origin")
	preflight := c.Request().Method == http.MethodOptions
	public := !preflight && isPublicAsset(strings.TrimPrefix(c.Path(), s.deps.Settings.BasePath))
	if allow, credentials := s.corsAllow(public, c.Request().URL.Path, origin); allow != "" {
		h.Set("Access-Control-Allow-Origin", allow)
		if credentials {
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
	}
	if preflight && h.Get("Access-Control-Allow-Origin") != "" {
		methods := "GET, POST, OPTIONS"
		if c.Request().Header.Get("Access-Control-Request-Method") == http.MethodDelete {
			methods = "GET, POST, DELETE, OPTIONS" // a session's file (DELETE …/files/{name})
		}
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", "600")
	}
}

// corsExposeHeaders are the response headers a credentialed widget may read.
const corsExposeHeaders = "X-Session-ID, X-Request-ID"

// corsAllow is the Access-Control-Allow-Origin a request from origin to path gets ("" for
// none) and whether it may carry credentials: any origin, without, for a public asset; an
// allowed one, with.
func (s *Server) corsAllow(public bool, path, origin string) (allow string, credentials bool) {
	switch {
	case origin == "":
		return "", false
	case public:
		return "*", false
	case s.allowsOrigin(path, origin):
		return origin, true
	}
	return "", false
}

func isPublicAsset(route string) bool {
	return route == "/:c/runtime/:file" || route == "/:c/logo"
}

// allowsOrigin judges origin for the community path names, or for the server as a whole. It
// reads the path rather than the route parameters so that a path no route serves is judged
// too.
func (s *Server) allowsOrigin(path, origin string) bool {
	cat := s.cat.Load()
	rest := strings.TrimPrefix(path, s.deps.Settings.BasePath+"/")
	id, _, _ := strings.Cut(rest, "/")
	if cc := cat.byID[id]; cc != nil {
		return cc.origins.allows(origin)
	}
	return cat.origins.allows(origin)
}
