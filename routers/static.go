package routers

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/fastpath"
)

// Precomputed responses (GET /{c}, GET /communities, logos, wheels) are fixed bytes built at
// load and at reload. Every header value they send is built then too, as a one-element slice
// shared by every response (len == cap, so a later Add copies rather than writes into it), so
// answering one is a map lookup, a few header assignments and one Write, with no allocation.

// encoded is a body in one content coding, with its header values.
type encoded struct {
	data     []byte
	etag     []string         // `"<hash>"`, or `"<hash>-gzip"` for the gzip variant
	length   []string         // Content-Length
	encoding []string         // Content-Encoding; nil for identity
	sealed   *fastpath.Sealed // a copy the fast path sends with sendfile (sealCatalog); nil for small bodies
}

// body is a precomputed response body: the identity bytes and, when it is smaller, a gzip
// variant, chosen per request by Accept-Encoding.
type body struct {
	contentType []string
	identity    encoded
	gzip        *encoded
}

// minGzip is the smallest body worth a gzip variant; below it the framing costs more than it
// saves.
const minGzip = 256

// newBody precomputes data (served as contentType) and, when compress is set and it pays, its
// gzip variant. The ETags are a hash of the identity bytes, with -gzip for the variant, so a
// cache never confuses the two.
func newBody(contentType string, data []byte, compress bool) body {
	sum := sha256.Sum256(data)
	tag := hex.EncodeToString(sum[:16])
	b := body{
		contentType: []string{contentType},
		identity:    encoded{data: data, etag: []string{`"` + tag + `"`}, length: []string{strconv.Itoa(len(data))}},
	}
	if compress && len(data) >= minGzip {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(data) // a bytes.Buffer does not fail
		_ = zw.Close()
		if buf.Len() < len(data) {
			z := bytes.Clone(buf.Bytes())
			b.gzip = &encoded{data: z, etag: []string{`"` + tag + `-gzip"`}, length: []string{strconv.Itoa(len(z))}, encoding: gzipEncoding}
		}
	}
	return b
}

var (
	gzipEncoding     = []string{"gzip"}
	varyOrigin       = []string{"Origin"}
	varyOriginAE     = []string{"Origin", "Accept-Encoding"}
	varyAE           = []string{"Accept-Encoding"}
	noCache          = []string{"no-cache"}
	acceptRanges     = []string{"bytes"}
	octetStream      = []string{"application/octet-stream"}
	wheelCacheHeader = []string{runtimeCacheControl}
)

// choose picks the variant Accept-Encoding asks for (RFC 9110 §12.5.3): the acceptable coding
// with the highest q-value, gzip on a tie (it is smaller). No header, or a header that refuses
// everything we have (identity;q=0 and no gzip), gets the identity bytes: the RFC allows an
// origin to answer without any content coding instead of 406, and a client that refuses
// identity outright is rarer than one that would break on a 406.
func (b *body) choose(acceptEncoding string) *encoded {
	if b.gzip == nil || acceptEncoding == "" {
		return &b.identity
	}
	qGzip, qIdentity := acceptQ(acceptEncoding)
	if qGzip > 0 && qGzip >= qIdentity {
		return b.gzip
	}
	return &b.identity
}

// acceptQ reads an Accept-Encoding value without allocating: the q-values (in thousandths) of
// gzip (or x-gzip) and of identity. A coding not named takes the q of *, if given; identity
// not named and not covered by * stays acceptable (q 1), anything else unnamed is refused.
func acceptQ(h string) (gzipQ, identityQ int) {
	gzipQ, identityQ, starQ := -1, -1, -1
	for h != "" {
		var item string
		item, h, _ = strings.Cut(h, ",")
		name, params, _ := strings.Cut(item, ";")
		name = strings.TrimSpace(name)
		q := 1000
		for params != "" {
			var p string
			p, params, _ = strings.Cut(params, ";")
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && (k == "q" || k == "Q") {
				q = parseQ(strings.TrimSpace(v))
			}
		}
		switch {
		case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
			gzipQ = max(gzipQ, q)
		case strings.EqualFold(name, "identity"):
			identityQ = max(identityQ, q)
		case name == "*":
			starQ = max(starQ, q)
		}
	}
	if gzipQ < 0 {
		gzipQ = max(starQ, 0)
	}
	if identityQ < 0 {
		identityQ = 1000
		if starQ >= 0 {
			identityQ = starQ
		}
	}
	return gzipQ, identityQ
}

// parseQ parses a qvalue (0, 0.5, 1.000) into thousandths; anything malformed counts as 0, so
// a garbled weight never selects a coding.
func parseQ(v string) int {
	if v == "" || len(v) > 5 {
		return 0
	}
	n := 0
	switch v[0] {
	case '0':
	case '1':
		n = 1000
	default:
		return 0
	}
	if len(v) == 1 {
		return n
	}
	if v[1] != '.' {
		return 0
	}
	scale := 100
	for _, c := range v[2:] {
		if c < '0' || c > '9' {
			return 0
		}
		n += int(c-'0') * scale
		scale /= 10
	}
	return min(n, 1000)
}

// serveBody answers with the variant of b that the request accepts: 304 when If-None-Match
// names that variant's ETag, otherwise 200 with Content-Length and the bytes in one write.
// cacheControl may be nil.
func serveBody(c echo.Context, b *body, cacheControl []string) error {
	req := c.Request()
	e := b.choose(headerValue(req.Header, "Accept-Encoding"))
	w := c.Response()
	h := w.Header()
	if b.gzip != nil {
		addVaryAE(h)
	}
	h["Etag"] = e.etag
	if cacheControl != nil {
		h["Cache-Control"] = cacheControl
	}
	if inm := headerValue(req.Header, "If-None-Match"); inm != "" && etagMatches(inm, e.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h["Content-Type"] = b.contentType
	h["Content-Length"] = e.length
	if e.encoding != nil {
		h["Content-Encoding"] = e.encoding
	}
	w.WriteHeader(http.StatusOK)
	if req.Method != http.MethodHead {
		_, _ = w.Write(e.data)
	}
	return nil
}

// headerValue is Header.Get for a key already in canonical form.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// addVaryAE adds Accept-Encoding to Vary, reusing a shared slice in the usual case where the
// CORS middleware set Vary: Origin.
func addVaryAE(h http.Header) {
	v := h["Vary"]
	switch {
	case len(v) == 0:
		h["Vary"] = varyAE
	case len(v) == 1 && v[0] == "Origin":
		h["Vary"] = varyOriginAE
	default:
		h["Vary"] = append(v, "Accept-Encoding")
	}
}

// etagMatches implements If-None-Match (weak comparison, RFC 9110 §13.1.2): a list of tags,
// or *.
func etagMatches(header, etag string) bool {
	for header != "" {
		var tag string
		tag, header, _ = strings.Cut(header, ",")
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// wheelFile is one verified wheel with its header values.
type wheelFile struct {
	data   []byte
	etag   []string // `"<sha256>"`
	length []string
	sealed *fastpath.Sealed // as encoded.sealed
}

func newWheelFile(data []byte, sha256hex string) *wheelFile {
	return &wheelFile{data: data, etag: []string{`"` + sha256hex + `"`}, length: []string{strconv.Itoa(len(data))}}
}

// serveWheel answers for a wheel: 304 on If-None-Match, a single Range as 206 (or 416), the
// whole file otherwise, always from the bytes in memory in one write. Wheels are zips, so they
// are never compressed again. A request with several ranges goes to http.ServeContent, which
// answers multipart/byteranges.
func serveWheel(c echo.Context, f *wheelFile) error {
	req := c.Request()
	w := c.Response()
	h := w.Header()
	h["Etag"] = f.etag
	h["Cache-Control"] = wheelCacheHeader
	h["Accept-Ranges"] = acceptRanges
	if inm := headerValue(req.Header, "If-None-Match"); inm != "" && etagMatches(inm, f.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h["Content-Type"] = octetStream
	if bulk(len(f.data)) {
		extendWrite(c)
	}
	rng := headerValue(req.Header, "Range")
	if rng != "" {
		// If-Range with anything but our strong ETag means "send it all" (RFC 9110 §13.1.5).
		if ir := headerValue(req.Header, "If-Range"); ir != "" && ir != f.etag[0] {
			rng = ""
		}
	}
	if rng == "" {
		h["Content-Length"] = f.length
		w.WriteHeader(http.StatusOK)
		if req.Method != http.MethodHead {
			_, _ = w.Write(f.data)
		}
		return nil
	}
	start, end, ok, multi := parseRange(rng, int64(len(f.data)))
	if multi {
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(f.data))
		return nil
	}
	if !ok {
		h["Content-Range"] = []string{"bytes */" + f.length[0]}
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		msg := "invalid range: failed to overlap\n"
		h["Content-Length"] = []string{strconv.Itoa(len(msg))}
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		if req.Method != http.MethodHead {
			_, _ = w.Write([]byte(msg))
		}
		return nil
	}
	h["Content-Range"] = []string{"bytes " + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(end-1, 10) + "/" + f.length[0]}
	h["Content-Length"] = []string{strconv.FormatInt(end-start, 10)}
	w.WriteHeader(http.StatusPartialContent)
	if req.Method != http.MethodHead {
		_, _ = w.Write(f.data[start:end])
	}
	return nil
}

// parseRange reads a Range header for a body of size bytes (RFC 9110 §14.1.2): one
// bytes=first-last, first- or -suffix range gives [start, end) and ok; multi reports a list of
// ranges, for the caller to hand on; ok false is unsatisfiable or malformed (416, as
// http.ServeContent answers).
func parseRange(h string, size int64) (start, end int64, ok, multi bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found {
		return 0, 0, false, false
	}
	if strings.Contains(spec, ",") {
		return 0, 0, false, true
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n <= 0 || size == 0 {
			return 0, 0, false, false
		}
		return max(size-n, 0), size, true, false
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 || a >= size {
		return 0, 0, false, false
	}
	if last == "" {
		return a, size, true, false
	}
	b, err := strconv.ParseInt(last, 10, 64)
	if err != nil || b < a {
		return 0, 0, false, false
	}
	return a, min(b+1, size), true, false
}
