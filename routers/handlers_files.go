package routers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/workspace"
)

// SessionFiles is what the file, manifest and export routes need of the session store;
// store.Store implements it (Deps.Files).
type SessionFiles interface {
	ArtifactReader
	ArtifactPaths(ctx context.Context, community, id, callID string) ([]string, error)
	EnsureSession(ctx context.Context, community, id string) (store.Session, bool, error)
	PutFiles(ctx context.Context, community, id string, files []store.NewFile, lim store.FileLimits) ([]store.SessionFile, error)
	Files(ctx context.Context, community, id string) ([]store.SessionFile, error)
	ViewFile(ctx context.Context, community, id, name string) ([]byte, error)
	DeleteFile(ctx context.Context, community, id, name string) (bool, error)
	Runs(ctx context.Context, community, id string) ([]store.RunRecord, error)
}

// uploadRoute is the route whose handler bounds its own body (see boundsOwnBody).
const uploadRoute = "/:c/sessions/:session/files"

// multipartOverhead is what an upload's body may hold besides its files' bytes: the part
// headers and boundaries (a few hundred bytes a part) and small form fields.
const multipartOverhead = 256 << 10

var (
	errUploadsOff     = &apiError{http.StatusNotFound, "This community does not accept file uploads."}
	errNoFile         = &apiError{http.StatusNotFound, "No such file in this session."}
	errNotMultipart   = &apiError{http.StatusUnsupportedMediaType, `Upload files as multipart/form-data, one part named "file" per file.`}
	errNoFilePart     = &apiError{http.StatusUnprocessableEntity, `The request holds no file: send each file as a multipart/form-data part named "file" with a filename.`}
	errFileNoName     = &apiError{http.StatusUnprocessableEntity, `A part named "file" must carry a filename.`}
	errUploadSession  = &apiError{http.StatusBadRequest, fmt.Sprintf("A session id has 1 to %d characters, none of them a control character.", limits.MaxSessionIDChars)}
	errUploadsStorage = &apiError{http.StatusInsufficientStorage, "The server's storage for session files is full. Try again later."}
	errClientStorage  = &apiError{http.StatusInsufficientStorage, "You keep as many files on this server as one reader may. Delete some from your sessions, or wait until older sessions end."}
)

// uploadLimits are one community's upload rules, in bytes.
type uploadLimits struct {
	maxFile, maxSession int64
	maxFiles            int
	types               []string
}

// uploadsOf returns the community's upload rules, or false when it takes no uploads (no Python
// runtime, or uploads not enabled).
func uploadsOf(c *config.Community) (uploadLimits, bool) {
	u, ok := c.TakesUploads()
	if !ok {
		return uploadLimits{}, false
	}
	return uploadLimits{maxFile: int64(u.MaxFileMB) << 20, maxSession: int64(u.MaxSessionMB) << 20, maxFiles: u.MaxFiles, types: u.Types}, true
}

// boundsOwnBody reports whether the request's handler bounds its body itself, so the server's
// 10 MB body limit does not apply: an upload may be as large as the community's session cap.
func (s *Server) boundsOwnBody(c echo.Context) bool {
	return c.Request().Method == http.MethodPost && strings.TrimPrefix(c.Path(), s.deps.Settings.BasePath) == uploadRoute
}

// sessionFiles finds the community and the store behind the session routes; the session id
// must be one a session can have.
func (s *Server) sessionFiles(c echo.Context) (*community, SessionFiles, string, error) {
	cc, ok := s.community(c)
	if !ok {
		return nil, nil, "", errNotFound
	}
	fs := s.deps.Files
	if fs == nil {
		return nil, nil, "", errNotFound
	}
	sid, ok := sessionParam(c)
	if !ok {
		return nil, nil, "", errSessionNotFound // no session can have that id
	}
	return cc, fs, sid, nil
}

// uploadSession is sessionFiles for the routes of a community that takes uploads.
func (s *Server) uploadSession(c echo.Context) (*community, SessionFiles, string, error) {
	cc, fs, sid, err := s.sessionFiles(c)
	if err == nil {
		if _, ok := uploadsOf(cc.cfg); !ok {
			err = errUploadsOff
		}
	}
	return cc, fs, sid, err
}

// filesBody is the answer of the file routes: the session's files by name.
type filesBody struct {
	Files []store.SessionFile `json:"files"`
}

// uploadFiles is POST /{c}/sessions/{session_id}/files: multipart/form-data with one or more
// parts named "file". Every file is checked (name, size, type and bytes) and the batch is kept
// all or nothing; the session is created when it does not exist. It answers 200 with the
// session's files after the change. The body is read as it arrives, each file through a limit
// of max_file_mb + 1 byte and the whole within max_session_mb plus the multipart overhead, so
// at most that much is ever held; and before a byte is read the request reserves that much
// (its Content-Length, or the cap without one) of the process's upload buffer, so that however
// many uploads arrive at once they hold no more than it (503 and a Retry-After past it). One
// client holds at most a share of the buffer (its first upload in flight aside), and a body
// must keep coming, a MiB at a time (pacedBody), or it is cut with 408 and its reservation
// freed: connections that send no body cannot keep the buffer from the others.
func (s *Server) uploadFiles(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	up, ok := uploadsOf(cc.cfg)
	fs := s.deps.Files
	if !ok || fs == nil {
		return errUploadsOff
	}
	sid, ok := sessionParam(c)
	if !ok {
		return errUploadSession
	}
	req := c.Request()
	mt, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return errNotMultipart
	}
	capBytes := up.maxSession + multipartOverhead
	if req.ContentLength > capBytes {
		return s.unread(c, uploadTooLarge(up)) // refused before reading a byte
	}
	// What the body may hold: its Content-Length (net/http reads no more), or without one the
	// cap, and never more than the whole upload buffer.
	if req.ContentLength > s.files.buffer.total {
		return s.unread(c, errUploadOverBuffer(s.files.buffer.total))
	}
	want := min(capBytes, s.files.buffer.total)
	if req.ContentLength >= 0 {
		want = req.ContentLength
	}
	client := requestClient(c)
	held, err := s.files.buffer.reserve(client, want)
	if err != nil {
		return s.unread(c, busy(c, uploadRefusal(err)))
	}
	defer held.release()
	paced := newPacedBody(req.Body, readDeadline(c), time.Now, s.files.bodyWindow, bodyStep)
	body := &countingReader{r: http.MaxBytesReader(c.Response(), io.NopCloser(paced), want)}
	left := func() int64 { return want - body.n }
	files, err := readUploads(body, params["boundary"], up, left)
	if err != nil && req.ContentLength < 0 && want < capBytes && body.n >= want {
		return errUploadOverBuffer(s.files.buffer.total) // a body of unknown length, cut at the buffer
	}
	var slow *slowBodyError
	if errors.As(err, &slow) {
		return errUploadTooSlow
	}
	if err != nil {
		return err
	}
	ctx := req.Context()
	if _, _, err := fs.EnsureSession(ctx, cc.cfg.ID, sid); err != nil {
		return err
	}
	lim := store.FileLimits{MaxFiles: up.maxFiles, MaxSessionBytes: up.maxSession,
		Client: client, MaxClientBytes: s.files.clientBytes, Communities: s.uploadCommunities()}
	list, err := fs.PutFiles(ctx, cc.cfg.ID, sid, files, lim)
	if errors.Is(err, store.ErrNameClash) {
		return nameClash(ctx, fs, cc.cfg.ID, sid, files)
	}
	if err != nil {
		return filesError(err, up)
	}
	return c.JSON(http.StatusOK, filesBody{Files: list})
}

// unread answers err to an upload whose body it will not read. net/http reads up to 256 KB
// of such a body before it answers (so that the connection can be used again): that read gets
// the pace's window too, not the server's whole read timeout, for a client that sends none.
func (s *Server) unread(c echo.Context, err error) error {
	_ = readDeadline(c)(time.Now().Add(s.files.bodyWindow))
	return err
}

// errUploadOverBuffer refuses an upload larger than the whole upload buffer, which no wait
// would let in.
func errUploadOverBuffer(total int64) *apiError {
	return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("This server takes uploads of at most %d MB at once.", total>>20)}
}

// uploadCommunities is how many communities of the catalog take uploads: the in-memory store
// gives each that share of its budget (store.FileLimits.Communities).
func (s *Server) uploadCommunities() int {
	n := 0
	for _, cc := range s.cat.Load().byID {
		if _, ok := uploadsOf(cc.cfg); ok {
			n++
		}
	}
	return n
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readUploads reads a multipart body and checks every part named "file" against up: its name,
// its size, its bytes (workspace.CheckUpload), that no name comes twice (nor two names that
// differ only in case), and that the request alone stays within the count and the session's
// bytes. Other parts are read and dropped. left, when not nil, is at most how many bytes of the
// body are still to come (from its Content-Length), so that a file's buffer can be made its
// size at once rather than grown (and copied) as it is read. Every error it returns is an
// *apiError, or a *slowBodyError when the body stopped coming.
func readUploads(r io.Reader, boundary string, up uploadLimits, left func() int64) ([]store.NewFile, error) {
	mr := multipart.NewReader(r, boundary)
	var (
		files []store.NewFile
		total int64
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bodyError(err, up)
		}
		if part.FormName() != "file" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return nil, bodyError(err, up)
			}
			continue
		}
		name, ok := partFileName(part)
		if !ok {
			return nil, errFileNoName
		}
		if len(files) == up.maxFiles {
			return nil, tooManyFiles(up)
		}
		var hint int64
		if left != nil {
			hint = left() + peekAhead
		}
		data, err := readPart(part, up.maxFile, hint)
		if err != nil {
			return nil, bodyError(err, up)
		}
		if int64(len(data)) > up.maxFile {
			return nil, &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("File %q is larger than %d MB, the most one file may have.", shownName(name), up.maxFile>>20)}
		}
		typ, err := workspace.CheckUpload(name, data, up.types)
		if err != nil {
			return nil, &apiError{http.StatusUnprocessableEntity, uploadReason(err)}
		}
		if slices.ContainsFunc(files, func(f store.NewFile) bool { return f.Name == name }) {
			return nil, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("File %q is in the request twice.", name)}
		}
		if i := slices.IndexFunc(files, func(f store.NewFile) bool { return workspace.SameName(f.Name, name) }); i >= 0 {
			return nil, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Files %q and %q differ only in case: an unpacked export could not hold both.", files[i].Name, name)}
		}
		if total += int64(len(data)); total > up.maxSession {
			return nil, uploadTooLarge(up)
		}
		files = append(files, store.NewFile{Name: name, Type: typ, Data: data})
	}
	if len(files) == 0 {
		return nil, errNoFilePart
	}
	return files, nil
}

// peekAhead is more than what multipart.Reader reads past the part it hands out (its 4 KB
// buffer), which readUploads's left has already counted as read.
const peekAhead = 8 << 10

// readPart reads a part of at most limit bytes (limit+1 or more tells the caller it was longer)
// into a buffer of hint bytes, when hint is known (else it grows as it is read). A buffer much
// larger than its part (the first of several files, sized for the whole body) is copied to its
// size: the store keeps what it is given, and so would keep the rest too.
func readPart(r io.Reader, limit, hint int64) ([]byte, error) {
	b := make([]byte, 0, min(limit+1, max(hint, 512)))
	for int64(len(b)) <= limit {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(cap(b), int(limit+1)-len(b)))
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if slack := cap(b) - len(b); slack > 64<<10 && slack > len(b)/8 {
		b = bytes.Clone(b)
	}
	return b, nil
}

// partFileName is the filename of a part's Content-Disposition as sent. (Part.FileName keeps
// only the last path element, which would turn "../x.csv" into "x.csv"; a name is checked as
// the reader gave it.)
func partFileName(p *multipart.Part) (string, bool) {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return "", false
	}
	name, ok := params["filename"]
	return name, ok && name != ""
}

// shownName is a file name as an error message quotes it: at most MaxUploadNameChars.
func shownName(name string) string {
	if r := []rune(name); len(r) > workspace.MaxUploadNameChars {
		return string(r[:workspace.MaxUploadNameChars]) + "…"
	}
	return name
}

// uploadReason is a refused file's message.
func uploadReason(err error) string {
	var ue *workspace.UploadError
	if errors.As(err, &ue) {
		return fmt.Sprintf("File %q was refused: %s.", ue.Name, ue.Reason)
	}
	return "A file was refused."
}

// bodyError is a failure to read the body: over its cap (413), too slow (its deadline passed:
// a *slowBodyError), or not a well-formed multipart body (400).
func bodyError(err error, up uploadLimits) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return uploadTooLarge(up)
	}
	if tooSlow(err) {
		return &slowBodyError{err}
	}
	return &apiError{http.StatusBadRequest, "The multipart/form-data body is malformed: " + err.Error()}
}

// slowBodyError is a body whose read deadline passed (pacedBody): the handler answers
// errUploadTooSlow.
type slowBodyError struct{ err error }

func (e *slowBodyError) Error() string { return "upload body too slow: " + e.err.Error() }
func (e *slowBodyError) Unwrap() error { return e.err }

func uploadTooLarge(up uploadLimits) *apiError {
	return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("A session's files may total at most %d MB, and one file at most %d MB.", up.maxSession>>20, up.maxFile>>20)}
}

func tooManyFiles(up uploadLimits) *apiError {
	return &apiError{http.StatusConflict, fmt.Sprintf("A session may hold at most %d files. Delete one to make room.", up.maxFiles)}
}

// filesError is the answer to a store's refusal of an upload, with the community's numbers.
func filesError(err error, up uploadLimits) error {
	switch {
	case errors.Is(err, store.ErrClientFilesFull):
		return errClientStorage
	case errors.Is(err, store.ErrTooManyFiles):
		return tooManyFiles(up)
	case errors.Is(err, store.ErrSessionFilesFull):
		return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("A session's files may total at most %d MB. Delete one to make room.", up.maxSession>>20)}
	case errors.Is(err, store.ErrArtifactBudget):
		return errUploadsStorage
	case errors.Is(err, store.ErrNotFound):
		return errSessionNotFound // it expired between its creation and the upload
	}
	return err
}

// nameClash is the answer to an upload whose file has the name of one the session holds but
// for case (store.ErrNameClash): 409, naming both.
func nameClash(ctx context.Context, fs SessionFiles, community, sid string, files []store.NewFile) error {
	held, err := fs.Files(ctx, community, sid)
	if err != nil {
		return lookupError(err)
	}
	for _, f := range files {
		for _, h := range held {
			if h.Name != f.Name && workspace.SameName(h.Name, f.Name) {
				return &apiError{http.StatusConflict, fmt.Sprintf("File %q differs only in case from %q, which the session holds: an unpacked export could not hold both. Rename it, or send it as %q to replace that file.", f.Name, h.Name, h.Name)}
			}
		}
	}
	// The other spelling went meanwhile: the reader may send the file again.
	return &apiError{http.StatusConflict, "A file's name differed only in case from another of the session. Try again."}
}

// listFiles is GET /{c}/sessions/{session_id}/files.
func (s *Server) listFiles(c echo.Context) error {
	cc, fs, sid, err := s.uploadSession(c)
	if err != nil {
		return err
	}
	list, err := fs.Files(c.Request().Context(), cc.cfg.ID, sid)
	if errors.Is(err, store.ErrNotFound) {
		return errSessionNotFound
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, filesBody{Files: list})
}

// deleteFile is DELETE /{c}/sessions/{session_id}/files/{name}: 204, or 404 when the session
// holds no such file.
func (s *Server) deleteFile(c echo.Context) error {
	cc, fs, sid, err := s.uploadSession(c)
	if err != nil {
		return err
	}
	name, ok := pathParam(c, "name")
	if !ok || name == "" || len([]rune(name)) > workspace.MaxUploadNameChars {
		return errNoFile
	}
	found, err := fs.DeleteFile(c.Request().Context(), cc.cfg.ID, sid, name)
	if err != nil {
		return err
	}
	if !found {
		return errNoFile
	}
	return c.NoContent(http.StatusNoContent)
}

// manifest is GET /{c}/sessions/{session_id}/artifacts: the manifest of the session's server
// runs, the array the export's manifest.json holds (the browser workspace's shape: ordinal,
// call_id, status, description, files, timestamp; plus missing, the saved files the server no
// longer keeps). Each listed file is at artifacts/{call_id}/{path}.
func (s *Server) manifest(c echo.Context) error {
	cc, fs, sid, err := s.sessionFiles(c)
	if err != nil {
		return err
	}
	runs, err := sessionRuns(c.Request().Context(), fs, cc.cfg.ID, sid)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, workspace.Manifest(runs))
}

// sessionRuns turns the session's run records into workspace runs, each with the paths of the
// files it saved that the store still keeps and the others as missing. 404 for an unknown
// session.
func sessionRuns(ctx context.Context, fs SessionFiles, community, sid string) ([]workspace.Run, error) {
	recs, err := fs.Runs(ctx, community, sid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errSessionNotFound
	}
	if err != nil {
		return nil, err
	}
	runs := make([]workspace.Run, 0, len(recs))
	for _, r := range recs {
		run := workspace.Run{Ordinal: r.Ordinal, CallID: r.CallID, Status: r.Status, Description: r.Description, Code: r.Code,
			Stdout: r.Stdout, Stderr: r.Stderr, Summary: r.Summary, Files: []string{}, Time: r.Time}
		var kept []string
		if len(r.Files) > 0 {
			if kept, err = fs.ArtifactPaths(ctx, community, sid, r.CallID); err != nil {
				return nil, lookupError(err)
			}
		}
		for _, p := range r.Files {
			if !slices.Contains(kept, p) || !workspace.SafePath(p) {
				run.Missing = append(run.Missing, p)
				continue
			}
			run.Files = append(run.Files, p)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// lookupError is a store error met after the session was found: it expired meanwhile.
func lookupError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return errSessionNotFound
	}
	return err
}

// export is GET /{c}/sessions/{session_id}/export.zip: the session's workspace (scripts,
// results, the kept files of its runs, manifest.json, notebook.ipynb) and its uploaded files
// under data/, as a download. The zip is streamed from the store one file at a time, read
// without a copy (ViewFile, ViewArtifact); what is compressed already is stored as it is
// (workspace.Method). At most FileSettings.Exports are written at once, and one per client:
// past that an export is refused with 503 and a Retry-After (HEAD, which writes no zip, is not
// counted). The answer is written in steps that must each be taken within writeWindow
// (pacedWriter), so a reader who stops reading frees the place within it. With a store whose
// reads are copies (Redis), each file's bytes are reserved from the process's buffer before
// they are read, waiting (at most exportRoomWait) for room.
func (s *Server) export(c echo.Context) error {
	cc, fs, sid, err := s.sessionFiles(c)
	if err != nil {
		return err
	}
	head := c.Request().Method == http.MethodHead
	if !head {
		done, refused := s.files.startExport(requestClient(c))
		if refused != nil {
			return busy(c, refused)
		}
		defer done()
	}
	ctx := c.Request().Context()
	runs, err := sessionRuns(ctx, fs, cc.cfg.ID, sid)
	if err != nil {
		return err
	}
	list, err := fs.Files(ctx, cc.cfg.ID, sid)
	if err != nil {
		return lookupError(err)
	}
	var modified time.Time
	for _, r := range runs {
		modified = later(modified, r.Time)
	}
	names := make([]string, len(list))
	sizes := make(map[string]int64, len(list))
	for i, f := range list {
		modified = later(modified, f.AddedAt)
		names[i] = f.Name
		sizes[f.Name] = f.Bytes
	}
	if modified.IsZero() {
		modified = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC) // the zip format's first day
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/zip")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": exportName(cc.cfg.ID, sid)}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	if head {
		return c.NoContent(http.StatusOK)
	}
	c.Response().WriteHeader(http.StatusOK)
	src := &exportSource{ctx: ctx, fs: fs, community: cc.cfg.ID, sid: sid, sizes: sizes}
	if vc, ok := fs.(viewCopier); ok && vc.ViewsCopy() {
		src.budget, src.roomWait = s.files.buffer, s.files.roomWait
	}
	defer src.done()
	w := &pacedWriter{w: c.Response(), set: writeDeadline(c), now: time.Now, window: s.files.writeWindow, step: writeStep}
	if err := workspace.WriteZip(w, runs, names, modified, src); err != nil {
		// The answer has started: the client sees a cut zip, which does not open.
		s.log.LogAttrs(ctx, slog.LevelWarn, "writing an export failed", slog.String("request_id", requestID(c)), slog.Any("error", err))
	}
	return nil
}

// viewCopier is a store that may say whether its views (ViewFile, ViewArtifact) are bytes read
// for the caller, which an export then holds in memory beside the store's (store.Redis: every
// reply is), rather than the store's own bytes (store.Memory).
type viewCopier interface{ ViewsCopy() bool }

// exportSource reads an export's files from the store as the zip is written, without copies.
// With a budget, each file's bytes are reserved from it before they are read (a data file's
// listed size; a run's file its cap, limits.MaxSavedFileBytes, until it is read) and given
// back when the next file is read, or at done.
type exportSource struct {
	ctx            context.Context // the request's: the export ends with it
	fs             SessionFiles
	community, sid string
	sizes          map[string]int64 // the data files' listed sizes
	budget         *byteBudget
	roomWait       time.Duration
	held           *grant // the bytes of the file being written
}

func (e *exportSource) RunFile(callID, path string) ([]byte, error) {
	if err := e.reserve(int64(limits.MaxSavedFileBytes)); err != nil {
		return nil, err
	}
	b, err := gone(e.fs.ViewArtifact(e.ctx, e.community, e.sid, callID, path))
	if e.held != nil {
		e.held.shrink(int64(len(b))) // most saved files are far below the cap
	}
	return b, err
}

func (e *exportSource) DataFile(name string) ([]byte, error) {
	if err := e.reserve(e.sizes[name]); err != nil {
		return nil, err
	}
	return gone(e.fs.ViewFile(e.ctx, e.community, e.sid, name))
}

// reserve gives back the previous file's bytes (written by now) and takes n for the next,
// waiting for room at most e.roomWait.
func (e *exportSource) reserve(n int64) error {
	e.done()
	if e.budget == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.roomWait)
	defer cancel()
	g, err := e.budget.wait(ctx, n)
	if err != nil {
		return fmt.Errorf("waiting %v for room to read an export's file of %d bytes: %w", e.roomWait, n, err)
	}
	e.held = g
	return nil
}

// done gives back the bytes of the file being written.
func (e *exportSource) done() {
	if e.held != nil {
		e.held.release()
		e.held = nil
	}
}

// gone turns a file the store no longer has (evicted, deleted, or the session expired since the
// listing) into workspace.ErrGone.
func gone(b []byte, err error) ([]byte, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, workspace.ErrGone
	}
	return b, err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// exportName is the download's file name: the community and the first characters of the
// session id that are safe in a file name.
func exportName(community, sid string) string {
	var b strings.Builder
	for _, r := range sid {
		if b.Len() == 8 {
			break
		}
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			b.WriteRune(r)
		}
	}
	prefix := b.String()
	if prefix == "" {
		prefix = "session"
	}
	return community + "-" + prefix + ".zip"
}
