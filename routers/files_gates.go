package routers

import (
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
)

// FileSettings bound the upload and export routes for the whole process (Settings.Files); a
// zero field takes its default.
type FileSettings struct {
	// UploadBufferBytes bounds the upload bodies held in memory at once, whatever the number of
	// uploads: each reserves its Content-Length (or, without one, its community's cap) before a
	// byte is read, and one that does not fit is refused at once (DefaultUploadBufferBytes).
	UploadBufferBytes int64
	// ClientBytes bounds what one client address may keep in attached files in one community
	// (store.FileLimits.MaxClientBytes); 0 is a quarter of the community's storage for them.
	ClientBytes int64
	// Exports is how many export.zip answers may be written at once; past it an export is
	// refused with 503 and a Retry-After (0: one per CPU).
	Exports int
}

// DefaultUploadBufferBytes is FileSettings.UploadBufferBytes by default: as much as the
// default artifact budget (store.DefaultArtifactBytes), so uploads in flight never hold more
// than what the server keeps of them.
const DefaultUploadBufferBytes = 256 << 20

// busyRetrySeconds is the Retry-After of an upload or an export refused for the process's
// bounds: they are freed as the uploads and exports in flight end, in seconds.
const busyRetrySeconds = "5"

var (
	errUploadsBusy = &apiError{http.StatusServiceUnavailable, "The server is receiving as many uploads as it can hold at once. Try again in a few seconds."}
	errExportsBusy = &apiError{http.StatusServiceUnavailable, "The server is writing as many exports as it may at once. Try again in a few seconds."}
)

// fileGates are the process-wide bounds of the file routes: the bytes of upload bodies in
// memory, and the exports being written.
type fileGates struct {
	uploads *byteBudget
	exports chan struct{}
	// clientBytes is FileSettings.ClientBytes.
	clientBytes int64
}

func newFileGates(fs FileSettings) *fileGates {
	if fs.UploadBufferBytes <= 0 {
		fs.UploadBufferBytes = DefaultUploadBufferBytes
	}
	if fs.Exports <= 0 {
		fs.Exports = runtime.GOMAXPROCS(0)
	}
	return &fileGates{uploads: &byteBudget{total: fs.UploadBufferBytes}, exports: make(chan struct{}, fs.Exports), clientBytes: max(fs.ClientBytes, 0)}
}

// byteBudget hands out bytes of a fixed total, all of a request at once: a partial grant would
// let several large uploads each hold part of the budget and all of them fail.
type byteBudget struct {
	mu          sync.Mutex
	total, used int64
}

// reserve takes n bytes, or reports false when they are not free now. release gives them back;
// it may be called more than once.
func (b *byteBudget) reserve(n int64) (release func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.total-b.used {
		return nil, false
	}
	b.used += n
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.used -= n
			b.mu.Unlock()
		})
	}, true
}

// startExport takes one of the export places, or reports false when all are taken.
func (g *fileGates) startExport() (done func(), ok bool) {
	select {
	case g.exports <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-g.exports }) }, true
	default:
		return nil, false
	}
}

// busy sets the Retry-After of a refusal for the process's bounds and returns it.
func busy(c echo.Context, err *apiError) error {
	c.Response().Header().Set("Retry-After", busyRetrySeconds)
	return err
}

// pathParam is the path parameter name decoded exactly once. echo matches a request on its
// raw path when net/http kept one (URL.RawPath: the path has an escape net/http would not have
// written, such as %2F or a lower-case %0d), and then hands the parameter over still escaped;
// otherwise on URL.Path, already decoded, which must not be decoded again ("%252F" is the id
// "%2F"). It reports false for an escape that does not decode.
func pathParam(c echo.Context, name string) (string, bool) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, true
	}
	d, err := url.PathUnescape(v)
	return d, err == nil
}

// sessionParam is the :session parameter of every session route, decoded once (pathParam),
// when it is an id a session can have: the body's session_id rule (1 to MaxSessionIDChars code
// points, valid UTF-8, as a JSON string is), and no control character (CR, LF, NUL, …), which
// no log line or header should meet.
func sessionParam(c echo.Context) (string, bool) {
	sid, ok := pathParam(c, "session")
	if !ok || sid == "" || !utf8.ValidString(sid) || utf8.RuneCountInString(sid) > int(limits.MaxSessionIDChars) {
		return "", false
	}
	if store.HasControl(sid) {
		return "", false
	}
	return sid, true
}
