package routers

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// communityConfig is GET /{c}: precomputed bytes, with or without client tools depending on
// the live kill switch.
func (s *Server) communityConfig(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	b := cc.public
	if s.toolsOff(cc.cfg.ID) {
		b = cc.plain
	}
	h := c.Response().Header()
	h.Set("ETag", b.etag)
	h.Set("Cache-Control", "no-cache")
	if etagMatches(c.Request().Header.Get("If-None-Match"), b.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b.data)
}

// etagMatches implements If-None-Match for a strong ETag: a list of tags, or *.
func etagMatches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// runtimeCacheControl is the reference's exact header for wheels: a file name never changes
// bytes, so a wheel may be cached for a year.
const runtimeCacheControl = "public, max-age=31536000, immutable"

// runtimeWheel is GET /{c}/runtime/{file}: verified bytes looked up by exact overlay name,
// never a file-system path.
func (s *Server) runtimeWheel(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok || !cc.offersToolsConfigured() || s.toolsOff(cc.cfg.ID) {
		return errNoRuntimeFile
	}
	if cc.overlayFailed {
		return errRuntimeUnavailable
	}
	data, sum, ok := cc.overlay.Wheel(c.Param("file"))
	if !ok {
		return errNoRuntimeFile
	}
	extendWrite(c)
	h := c.Response().Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Cache-Control", runtimeCacheControl)
	h.Set("ETag", `"`+sum+`"`)
	// ServeContent answers If-None-Match and Range from the ETag; no Last-Modified is sent.
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(data))
	return nil
}

// offersToolsConfigured reports whether the community configures client tools and a lockfile,
// whether or not its overlay verified: the wheel route answers 503 rather than 404 for a
// failed overlay, so edges do not cache it as a missing file.
func (cc *community) offersToolsConfigured() bool {
	c := cc.cfg
	return c.Extensions != nil && len(c.Extensions.ClientTools) > 0 && pythonOf(c) != nil && pythonOf(c).Lockfile != nil
}

// logo is GET /{c}/logo.
func (s *Server) logo(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	if cc.logo == nil {
		return errNoLogo
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=86400")
	if cc.logo.svg {
		// An SVG can carry script; this keeps it inert when opened directly.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	}
	return c.Blob(http.StatusOK, cc.logo.contentType, cc.logo.data)
}
