package routers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
)

// FileSettings bound the upload and export routes for the whole process (Settings.Files); a
// zero field takes its default.
type FileSettings struct {
	// UploadBufferBytes bounds the session file bytes held in memory at once, whatever the
	// number of requests (DefaultUploadBufferBytes): the upload bodies being read, each
	// reserving its Content-Length (or, without one, its community's cap) before a byte is
	// read, and, with a store whose reads are copies (Redis), the file each export is writing.
	// An upload that does not fit is refused at once; an export waits for room.
	UploadBufferBytes int64
	// ClientBytes bounds what one client may keep in attached files in one community
	// (store.FileLimits.MaxClientBytes); 0 is the store's default, a quarter of the
	// community's storage for them but at least a whole session's worth.
	ClientBytes int64
	// Exports is how many export.zip answers may be written at once; past it an export is
	// refused with 503 and a Retry-After (0: one per CPU). One client writes one at a time.
	Exports int
}

// DefaultUploadBufferBytes is FileSettings.UploadBufferBytes by default: as much as the
// default artifact budget (store.DefaultArtifactBytes), so uploads in flight never hold more
// than what the server keeps of them.
const DefaultUploadBufferBytes = 256 << 20

// busyRetrySeconds is the Retry-After of an upload or an export refused for the process's
// bounds: they are freed as the uploads and exports in flight end, in seconds.
const busyRetrySeconds = "5"

// clientShareOf is how much of the buffer one client may hold at once: its total divided by
// this. A client's first upload in flight may be larger (up to the whole buffer), or no reader
// could send a session larger than a quarter of it.
const clientShareOf = 4

// The pace a body or an answer must keep. An upload's body must bring each MiB (bodyStep)
// within bodyWindow of the previous one (the first within bodyWindow of the start), else it is
// cut and its reservation freed; an export's answer must take each chunk (writeStep) within
// writeWindow. exportRoomWait bounds how long an export waits for room in the buffer to read
// its next file.
const (
	bodyStep       = 1 << 20
	bodyWindow     = 10 * time.Second
	writeStep      = 256 << 10
	writeWindow    = 30 * time.Second
	exportRoomWait = 30 * time.Second
)

var (
	errUploadsBusy       = &apiError{http.StatusServiceUnavailable, "The server is receiving as many uploads as it can hold at once. Try again in a few seconds."}
	errClientUploadsBusy = &apiError{http.StatusServiceUnavailable, "You are sending as many uploads at once as one reader may. Try again when they have finished."}
	errExportsBusy       = &apiError{http.StatusServiceUnavailable, "The server is writing as many exports as it may at once. Try again in a few seconds."}
	errClientExportBusy  = &apiError{http.StatusServiceUnavailable, "An export of yours is being written already. Try again when it has finished."}
	errUploadTooSlow     = &apiError{http.StatusRequestTimeout, fmt.Sprintf("The upload arrived too slowly: each MB must arrive within %d seconds. Try again on a faster connection, or send fewer files at once.", int(bodyWindow/time.Second))}
)

// fileGates are the process-wide bounds of the file routes: the session file bytes in memory
// (upload bodies, and the files exports read from a store that copies them), and the exports
// being written, with at most one per client.
type fileGates struct {
	buffer    *byteBudget
	exports   chan struct{}
	mu        sync.Mutex
	exporting map[string]bool // the clients with an export in flight
	// clientBytes is FileSettings.ClientBytes.
	clientBytes int64
	// The paces (bodyWindow, writeWindow, exportRoomWait); tests shorten them.
	bodyWindow, writeWindow, roomWait time.Duration
}

func newFileGates(fs FileSettings) *fileGates {
	if fs.UploadBufferBytes <= 0 {
		fs.UploadBufferBytes = DefaultUploadBufferBytes
	}
	if fs.Exports <= 0 {
		fs.Exports = runtime.GOMAXPROCS(0)
	}
	return &fileGates{buffer: newByteBudget(fs.UploadBufferBytes, fs.UploadBufferBytes/clientShareOf),
		exports: make(chan struct{}, fs.Exports), exporting: make(map[string]bool), clientBytes: max(fs.ClientBytes, 0),
		bodyWindow: bodyWindow, writeWindow: writeWindow, roomWait: exportRoomWait}
}

// byteBudget hands out bytes of a fixed total, all of a request at once: a partial grant would
// let several large uploads each hold part of the budget and wait for the rest, and none of
// them could finish. A client holds at most share at once, except that its first reservation
// may be of any size that fits, so one reader's connections cannot take the whole budget.
type byteBudget struct {
	mu          sync.Mutex
	total, used int64
	share       int64
	byClient    map[string]int64
	// freed is closed (and replaced) whenever bytes are given back; waiting counts the
	// reservations waiting for room (tests watch it).
	freed   chan struct{}
	waiting int
}

var (
	errBudgetFull = errors.New("the buffer is full")
	errShareFull  = errors.New("the client holds its share of the buffer")
)

func newByteBudget(total, share int64) *byteBudget {
	return &byteBudget{total: total, share: share, byClient: make(map[string]int64), freed: make(chan struct{})}
}

// grant is bytes taken from a byteBudget; release gives them back (it may be called more
// than once) and shrink gives back what is more than n.
type grant struct {
	b      *byteBudget
	client string
	mu     sync.Mutex
	n      int64
}

func (g *grant) release() { g.shrink(0) }

func (g *grant) shrink(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n < g.n {
		g.b.give(g.client, g.n-n)
		g.n = n
	}
}

// reserve takes n bytes for client ("" is no client: not bounded by a share), or answers
// errShareFull or errBudgetFull when they are not free now.
func (b *byteBudget) reserve(client string, n int64) (*grant, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.take(client, n)
}

// take is reserve with b.mu held.
func (b *byteBudget) take(client string, n int64) (*grant, error) {
	held := b.byClient[client]
	switch {
	case client != "" && held > 0 && held+n > b.share:
		return nil, errShareFull
	case n > b.total-b.used:
		return nil, errBudgetFull
	}
	b.used += n
	if client != "" {
		b.byClient[client] = held + n
	}
	return &grant{b: b, client: client, n: n}, nil
}

func (b *byteBudget) give(client string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if client != "" {
		if b.byClient[client] -= n; b.byClient[client] <= 0 {
			delete(b.byClient, client)
		}
	}
	close(b.freed)
	b.freed = make(chan struct{})
}

// wait takes n bytes (no more than the whole budget), waiting for room until ctx ends. It
// belongs to no client: what it is for (an export) is bounded per client elsewhere.
func (b *byteBudget) wait(ctx context.Context, n int64) (*grant, error) {
	n = min(n, b.total)
	b.mu.Lock()
	for {
		g, err := b.take("", n)
		if err == nil {
			b.mu.Unlock()
			return g, nil
		}
		freed := b.freed
		b.waiting++
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
		}
		b.mu.Lock()
		b.waiting--
		if err := ctx.Err(); err != nil {
			b.mu.Unlock()
			return nil, err
		}
	}
}

// uploadRefusal is the answer to an upload whose reservation was refused.
func uploadRefusal(err error) *apiError {
	if errors.Is(err, errShareFull) {
		return errClientUploadsBusy
	}
	return errUploadsBusy
}

// startExport takes one of the export places for client, or answers why it may not: every
// place is taken, or the client is writing one already.
func (g *fileGates) startExport(client string) (done func(), err *apiError) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.exporting[client] {
		return nil, errClientExportBusy
	}
	select {
	case g.exports <- struct{}{}:
	default:
		return nil, errExportsBusy
	}
	g.exporting[client] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			delete(g.exporting, client)
			g.mu.Unlock()
			<-g.exports
		})
	}, nil
}

// busy sets the Retry-After of a refusal for the process's bounds and returns it.
func busy(c echo.Context, err *apiError) error {
	c.Response().Header().Set("Retry-After", busyRetrySeconds)
	return err
}

// clientKey is who a request counts as for the per-client bounds (the buffer's share, one
// export at a time, what one client keeps): an IPv4 address as it is, an IPv6 address by its
// /64, since one host or home network is given a whole /64 and may use any address in it. ip is
// the address the rate limits use (echo's RealIP: the connection's, or X-Forwarded-For from a
// trusted proxy); a value that is no address is used as it is.
func clientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64) // never fails for an IPv6 address
	return p.String()
}

// requestClient is the request's clientKey.
func requestClient(c echo.Context) string { return clientKey(c.RealIP()) }

// pacedBody is an upload's body that must keep coming: its read deadline is window from the
// start, and moves to window from now each time another step of bytes has been read.
type pacedBody struct {
	r      io.Reader
	set    func(time.Time) error
	now    func() time.Time
	window time.Duration
	step   int64
	n      int64 // bytes read
	next   int64 // at which count the deadline moves next
}

// newPacedBody starts the pace at once: the first step must arrive within window.
func newPacedBody(r io.Reader, set func(time.Time) error, now func() time.Time, window time.Duration, step int64) *pacedBody {
	p := &pacedBody{r: r, set: set, now: now, window: window, step: step, next: step}
	_ = set(now().Add(window)) // a writer without deadlines (a test recorder) is not paced
	return p
}

func (p *pacedBody) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.n >= p.next {
		p.next = p.n + p.step
		_ = p.set(p.now().Add(p.window))
	}
	return n, err
}

// tooSlow reports whether a body's read failed on its deadline.
func tooSlow(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// pacedWriter writes an answer in steps, each given window to be taken from the time it
// starts: a reader who stops reading ends the answer within window, however long it is, and
// one who reads on is never cut.
type pacedWriter struct {
	w      io.Writer
	set    func(time.Time) error
	now    func() time.Time
	window time.Duration
	step   int
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), p.step)]
		_ = p.set(p.now().Add(p.window))
		n, err := p.w.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// readDeadline sets the read deadline of the request's connection.
func readDeadline(c echo.Context) func(time.Time) error {
	rc := http.NewResponseController(c.Response().Writer)
	return rc.SetReadDeadline
}

// writeDeadline sets the write deadline of the request's connection.
func writeDeadline(c echo.Context) func(time.Time) error {
	w := c.Response().Writer
	return func(t time.Time) error {
		setWriteDeadline(w, t)
		return nil
	}
}

// warnClientBytes logs, for each community of cat that takes uploads, when the operator's
// per-client bound (FileSettings.ClientBytes) is below one file the community allows: a reader
// could not attach such a file at all (507). It runs at start and on every reload.
func (s *Server) warnClientBytes(cat *catalog) {
	if s.files.clientBytes == 0 {
		return
	}
	for _, id := range cat.ids {
		up, ok := uploadsOf(cat.byID[id].cfg)
		if ok && up.maxFile > s.files.clientBytes {
			s.log.Warn("--upload-client-mb is below the community's max_file_mb: a reader's file of that size is refused",
				slog.String("community", id), slog.Int64("upload_client_mb", s.files.clientBytes>>20), slog.Int64("max_file_mb", up.maxFile>>20))
		}
	}
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
