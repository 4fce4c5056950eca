package routers

import (
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
	File(ctx context.Context, community, id, name string) (store.SessionFile, []byte, error)
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
	errUploadSession  = &apiError{http.StatusBadRequest, fmt.Sprintf("A session id has 1 to %d characters.", limits.MaxSessionIDChars)}
	errUploadsStorage = &apiError{http.StatusInsufficientStorage, "The server's storage for session files is full. Try again later."}
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
	sid := c.Param("session")
	if !validSessionID(sid) {
		return nil, nil, "", errSessionNotFound
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

func validSessionID(sid string) bool {
	return sid != "" && len([]rune(sid)) <= int(limits.MaxSessionIDChars)
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
// at most that much is ever held.
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
	sid := c.Param("session")
	if !validSessionID(sid) {
		return errUploadSession
	}
	req := c.Request()
	mt, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return errNotMultipart
	}
	capBytes := up.maxSession + multipartOverhead
	if req.ContentLength > capBytes {
		return uploadTooLarge(up) // refused before reading a byte
	}
	body := http.MaxBytesReader(c.Response(), req.Body, capBytes)
	files, err := readUploads(body, params["boundary"], up)
	if err != nil {
		return err
	}
	ctx := req.Context()
	if _, _, err := fs.EnsureSession(ctx, cc.cfg.ID, sid); err != nil {
		return err
	}
	list, err := fs.PutFiles(ctx, cc.cfg.ID, sid, files, store.FileLimits{MaxFiles: up.maxFiles, MaxSessionBytes: up.maxSession})
	if err != nil {
		return filesError(err, up)
	}
	return c.JSON(http.StatusOK, filesBody{Files: list})
}

// readUploads reads a multipart body and checks every part named "file" against up: its name,
// its size, its bytes (workspace.CheckUpload), that no name comes twice, and that the request
// alone stays within the count and the session's bytes. Other parts are read and dropped.
// Every error it returns is an *apiError or a *http.MaxBytesError.
func readUploads(r io.Reader, boundary string, up uploadLimits) ([]store.NewFile, error) {
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
		data, err := io.ReadAll(io.LimitReader(part, up.maxFile+1))
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

// bodyError is a failure to read the body: over its cap (413), or not a well-formed multipart
// body (400).
func bodyError(err error, up uploadLimits) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return uploadTooLarge(up)
	}
	return &apiError{http.StatusBadRequest, "The multipart/form-data body is malformed: " + err.Error()}
}

func uploadTooLarge(up uploadLimits) *apiError {
	return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("A session's files may total at most %d MB, and one file at most %d MB.", up.maxSession>>20, up.maxFile>>20)}
}

func tooManyFiles(up uploadLimits) *apiError {
	return &apiError{http.StatusConflict, fmt.Sprintf("A session may hold at most %d files. Delete one to make room.", up.maxFiles)}
}

// filesError is the answer to a store's refusal of an upload, with the community's numbers.
func filesError(err error, up uploadLimits) error {
	switch {
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
	name := c.Param("name")
	if name == "" || len([]rune(name)) > workspace.MaxUploadNameChars {
		return errNoFile
	}
	ok, err := fs.DeleteFile(c.Request().Context(), cc.cfg.ID, sid, name)
	if err != nil {
		return err
	}
	if !ok {
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
	runs, err := sessionRuns(c.Request().Context(), fs, cc.cfg.ID, sid, false)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, workspace.Manifest(runs))
}

// sessionRuns turns the session's run records into workspace runs, each with the files it
// saved that the store still keeps (with their bytes when withBytes) and the others as
// missing. 404 for an unknown session.
func sessionRuns(ctx context.Context, fs SessionFiles, community, sid string, withBytes bool) ([]workspace.Run, error) {
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
			Stdout: r.Stdout, Stderr: r.Stderr, Summary: r.Summary, Files: map[string][]byte{}, Time: r.Time}
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
			var b []byte
			if withBytes {
				b, err = fs.Artifact(ctx, community, sid, r.CallID, p)
				if errors.Is(err, store.ErrNotFound) { // evicted since the listing
					run.Missing = append(run.Missing, p)
					continue
				}
				if err != nil {
					return nil, err
				}
			}
			run.Files[p] = b
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
// under data/, as a download. Its size is bounded by the store's: at most MaxRunRecords
// records, MaxArtifactRuns runs' files (25 MB each) and the session's uploads (max_session_mb),
// which are read into memory before the zip is streamed.
func (s *Server) export(c echo.Context) error {
	cc, fs, sid, err := s.sessionFiles(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	runs, err := sessionRuns(ctx, fs, cc.cfg.ID, sid, c.Request().Method != http.MethodHead)
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
	data := make(map[string][]byte, len(list))
	for _, f := range list {
		modified = later(modified, f.AddedAt)
		if c.Request().Method == http.MethodHead {
			continue
		}
		_, b, err := fs.File(ctx, cc.cfg.ID, sid, f.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return err
		}
		data[f.Name] = b
	}
	if modified.IsZero() {
		modified = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC) // the zip format's first day
	}
	extendWrite(c)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/zip")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": exportName(cc.cfg.ID, sid)}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	if c.Request().Method == http.MethodHead {
		return c.NoContent(http.StatusOK)
	}
	c.Response().WriteHeader(http.StatusOK)
	if err := workspace.WriteZip(c.Response(), runs, data, modified); err != nil {
		// The answer has started: the client sees a cut zip, which does not open.
		s.log.LogAttrs(ctx, slog.LevelWarn, "writing an export failed", slog.String("request_id", requestID(c)), slog.Any("error", err))
	}
	return nil
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
