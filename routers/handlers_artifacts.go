package routers

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
)

var errNoArtifact = &apiError{http.StatusNotFound, "No such artifact"}

// ArtifactReader reads the files server-side runs saved (store.Store implements it).
type ArtifactReader interface {
	// ViewArtifact returns one kept file, to be read only (it may be the store's own bytes), or
	// store.ErrNotFound.
	ViewArtifact(ctx context.Context, community, id, callID, path string) ([]byte, error)
}

// artifact is GET /{c}/sessions/{session_id}/artifacts/{call_id}/{path}: a file a server-side
// run saved, served to whoever holds the session id (the session's credential, as the call id
// is for results). The bytes were written by untrusted code, so they are served as a download
// that the browser must not sniff or run.
func (s *Server) artifact(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok || s.deps.Artifacts == nil {
		return errNotFound
	}
	// Each parameter decoded once, as every session route decodes them (sessionParam).
	sid, okSession := sessionParam(c)
	callID, okCall := pathParam(c, "call")
	p, okPath := pathParam(c, "*")
	if !okSession || !okCall || !okPath || callID == "" || len([]rune(callID)) > int(limits.MaxCallIDChars) ||
		p == "" || len([]rune(p)) > int(limits.MaxArtifactNameChars) {
		return errNoArtifact
	}
	data, err := s.deps.Artifacts.ViewArtifact(c.Request().Context(), cc.cfg.ID, sid, callID, p)
	if errors.Is(err, store.ErrNotFound) {
		return errNoArtifact
	}
	if err != nil {
		return err
	}
	ct := mime.TypeByExtension(path.Ext(p))
	if ct == "" || strings.Contains(ct, "html") || strings.Contains(ct, "javascript") || strings.Contains(ct, "svg") {
		ct = "application/octet-stream"
	}
	extendWrite(c)
	h := c.Response().Header()
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	return c.Blob(http.StatusOK, ct, data)
}
