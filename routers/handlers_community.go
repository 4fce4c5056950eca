package routers

import (
	"github.com/labstack/echo/v4"
)

var (
	logoCacheControl = []string{"public, max-age=86400"}
	svgCSP           = []string{"default-src 'none'; style-src 'unsafe-inline'"}
)

// communityConfig is GET /{c}: precomputed bytes, with or without client tools depending on
// the live kill switch, in the encoding Accept-Encoding asks for.
func (s *Server) communityConfig(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	return serveBody(c, s.configBody(cc), noCache)
}

// configBody is the GET /{c} body served right now: without client tools under the kill
// switch.
func (s *Server) configBody(cc *community) *body {
	if s.toolsOff(cc.cfg.ID) {
		return &cc.plain
	}
	return &cc.public
}

// runtimeCacheControl is the reference's exact header for wheels: a file name never changes
// bytes, so a wheel may be cached for a year.
const runtimeCacheControl = "public, max-age=31536000, immutable"

// runtimeWheel is GET /{c}/runtime/{file}: verified bytes looked up by exact overlay name,
// never a file-system path.
func (s *Server) runtimeWheel(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNoRuntimeFile
	}
	f, err := s.servedWheel(cc, c.Param("file"))
	if err != nil {
		return err
	}
	return serveWheel(c, f)
}

// servedWheel is the wheel name of cc's overlay served right now, or the error the route
// answers: none while the tools are off or not configured, 503 when the overlay failed.
func (s *Server) servedWheel(cc *community, name string) (*wheelFile, error) {
	if !cc.offersToolsConfigured() || s.toolsOff(cc.cfg.ID) {
		return nil, errNoRuntimeFile
	}
	if cc.overlayFailed {
		return nil, errRuntimeUnavailable
	}
	f, ok := cc.wheels[name]
	if !ok {
		return nil, errNoRuntimeFile
	}
	return f, nil
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
	if cc.logo.svg {
		// An SVG can carry script; this keeps it inert when opened directly.
		c.Response().Header()["Content-Security-Policy"] = svgCSP
	}
	return serveBody(c, &cc.logo.body, logoCacheControl)
}
