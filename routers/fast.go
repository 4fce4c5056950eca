package routers

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/osc-assistant/assistant/fastpath"
)

// The fast path (package fastpath) answers the precomputed routes ahead of net/http: GET and
// HEAD of /{c}, /{c}/, /communities, /{c}/logo and /{c}/runtime/{file}, when the answer is 200
// or 304. It sends what the echo route sends — the same status, headers (CORS, Vary, ETag,
// X-Request-ID, caching) and bytes, recorded the same way in the metrics and the request log —
// and leaves every other answer (404, 503, a range, an unknown path) to the echo route,
// which renders the errors. TestFastPathMatchesEcho holds the two paths to the same answers.

// fastRoutes are the route templates (metrics labels, as echo names them) under the base path.
type fastRoutes struct {
	prefix, communities, config, configSlash, wheel, logo string
}

func newFastRoutes(base string) fastRoutes {
	return fastRoutes{
		prefix:      base + "/",
		communities: base + "/communities",
		config:      base + "/:c",
		configSlash: base + "/:c/",
		wheel:       base + "/:c/runtime/:file",
		logo:        base + "/:c/logo",
	}
}

// fastAnswer is what a precomputed route answers with, found from the path alone.
type fastAnswer struct {
	route        string
	body         *body      // a precomputed body, or nil for a wheel
	wheel        *wheelFile // a wheel, or nil
	cacheControl []string
	svg          bool // a logo that is an SVG: sent with its Content-Security-Policy
	public       bool // a public asset: any origin may read it
}

// findFast resolves path to a precomputed answer, or false when the echo route must answer
// (any error, any other route).
func (s *Server) findFast(path string) (fastAnswer, bool) {
	r := &s.fast
	rest, ok := strings.CutPrefix(path, r.prefix)
	if !ok {
		return fastAnswer{}, false
	}
	cat := s.cat.Load()
	if rest == "communities" {
		return fastAnswer{route: r.communities, body: &cat.communities, cacheControl: noCache}, true
	}
	id, tail, slash := strings.Cut(rest, "/")
	cc := cat.byID[id]
	if cc == nil {
		return fastAnswer{}, false
	}
	switch {
	case tail == "":
		route := r.config
		if slash {
			route = r.configSlash
		}
		return fastAnswer{route: route, body: s.configBody(cc), cacheControl: noCache}, true
	case tail == "logo":
		if cc.logo == nil {
			return fastAnswer{}, false
		}
		return fastAnswer{route: r.logo, body: &cc.logo.body, cacheControl: logoCacheControl, svg: cc.logo.svg, public: true}, true
	}
	file, ok := strings.CutPrefix(tail, "runtime/")
	if !ok || strings.Contains(file, "/") {
		return fastAnswer{}, false
	}
	f, err := s.servedWheel(cc, file)
	if err != nil {
		return fastAnswer{}, false
	}
	return fastAnswer{route: r.wheel, wheel: f, cacheControl: wheelCacheHeader, public: true}, true
}

// AnswerFast is the fast path's Answer: it answers r as the echo route would, or returns false
// to leave r to it. SentFast records the answer once written.
func (s *Server) AnswerFast(r *fastpath.Request, w *fastpath.Response) bool {
	a, ok := s.findFast(r.Path)
	if !ok {
		return false
	}
	// The same headers, in the same order of decision, as observe, cors and serveBody/serveWheel.
	if validRequestID(r.RequestID) {
		w.Header("X-Request-Id", r.RequestID)
	} else {
		var id [32]byte
		fillRequestID(&id)
		w.HeaderBytes("X-Request-Id", id[:])
	}
	w.WriteTimeout(writeTimeout) // observe's bound; a large wheel extends it (fastBody)
	w.Header("Vary", "Origin")
	if a.body != nil && a.body.gzip != nil {
		w.Header("Vary", "Accept-Encoding")
	}
	if allow, credentials := s.corsAllow(a.public, r.Path, r.Origin); allow != "" {
		w.Header("Access-Control-Allow-Origin", allow)
		if credentials {
			w.Header("Access-Control-Allow-Credentials", "true")
			w.Header("Access-Control-Expose-Headers", corsExposeHeaders)
		}
	}
	if a.svg {
		w.Header("Content-Security-Policy", svgCSP[0])
	}
	s.fastBody(r, w, &a)
	w.SetTag(a.route)
	return true
}

// SentFast is the fast path's Sent: the metrics and the request log line of an answer, as
// observe records them, timed to the end of the write and counting the bytes of body written.
func (s *Server) SentFast(r *fastpath.Request, w *fastpath.Response, written int64, _ error) {
	d := time.Since(w.Began())
	status := w.Status()
	s.metrics.observe(w.Tag(), r.Method, status, d)
	if !s.deps.Settings.AccessLog.records(status) {
		return
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "request",
		slog.String("request_id", w.HeaderValue("X-Request-Id")),
		slog.String("method", r.Method),
		slog.String("route", w.Tag()),
		slog.String("path", strings.Clone(r.Path)), // r.Path is a view of the read buffer
		slog.Int("status", status),
		slog.Duration("duration", d),
		slog.Int64("bytes", written),
	)
}

// fastBody adds the body's headers and sends it, or 304.
func (s *Server) fastBody(r *fastpath.Request, w *fastpath.Response, a *fastAnswer) {
	var data []byte
	var etag string
	var enc *encoded
	var sealed *fastpath.Sealed
	if a.wheel != nil {
		data, etag, sealed = a.wheel.data, a.wheel.etag[0], a.wheel.sealed
	} else {
		enc = a.body.choose(r.AcceptEncoding)
		data, etag, sealed = enc.data, enc.etag[0], enc.sealed
	}
	w.Header("Etag", etag)
	w.Header("Cache-Control", a.cacheControl[0])
	if a.wheel != nil {
		w.Header("Accept-Ranges", acceptRanges[0])
	}
	if r.IfNoneMatch != "" && etagMatches(r.IfNoneMatch, etag) {
		w.Send(http.StatusNotModified, nil)
		return
	}
	switch {
	case a.wheel != nil:
		w.Header("Content-Type", octetStream[0])
		if bulk(len(data)) {
			w.WriteTimeout(bulkWriteTimeout)
		}
	default:
		w.Header("Content-Type", a.body.contentType[0])
		if enc.encoding != nil {
			w.Header("Content-Encoding", enc.encoding[0])
		}
	}
	w.SendSealed(http.StatusOK, data, sealed)
}

// sealer keeps one sealed copy per distinct large body across catalogs, so a reload seals only
// the bodies that changed, and a wheel every reload shares (the lock cache) has one file. An
// entry lives while some catalog holds its copy; its file closes when the last one is garbage.
type sealer struct {
	mu sync.Mutex
	m  map[[32]byte]weak.Pointer[fastpath.Sealed]
}

func (sl *sealer) seal(data []byte) *fastpath.Sealed {
	if len(data) < fastpath.MinSealed {
		return nil
	}
	sum := sha256.Sum256(data)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if f := sl.m[sum].Value(); f != nil {
		return f
	}
	for k, p := range sl.m {
		if p.Value() == nil {
			delete(sl.m, k)
		}
	}
	f := fastpath.Seal(data)
	if f == nil {
		return nil
	}
	if sl.m == nil {
		sl.m = map[[32]byte]weak.Pointer[fastpath.Sealed]{}
	}
	sl.m[sum] = weak.Make(f)
	return f
}

// sealCatalog gives the large bodies of cat their sealed copies, when the fast path serves
// them.
func (s *Server) sealCatalog(cat *catalog) {
	if !s.deps.Settings.FastPath {
		return
	}
	sealBody := func(b *body) {
		b.identity.sealed = s.sealer.seal(b.identity.data)
		if b.gzip != nil {
			b.gzip.sealed = s.sealer.seal(b.gzip.data)
		}
	}
	sealBody(&cat.communities)
	for _, cc := range cat.byID {
		sealBody(&cc.public)
		sealBody(&cc.plain)
		if cc.logo != nil {
			sealBody(&cc.logo.body)
		}
		for _, w := range cc.wheels {
			w.sealed = s.sealer.seal(w.data)
		}
	}
}
