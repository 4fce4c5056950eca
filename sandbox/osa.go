package sandbox

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	expsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	wsys "github.com/tetratelabs/wazero/sys"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/web/osa"
)

// How the guest reaches the host.
//
// python.wasm is a stock CPython build: it imports only WASI preview 1, so it cannot call a host
// function of our own, and Python cannot call wasm imports directly. The osa module instead
// talks to a device file, /dev/osa/call, served by osaDevice below (Go code, like the scratch
// directory). Each call opens the file, writes one request, and reads the answer:
//
//	request:  one line of JSON ({"op": "fetch", "url": ...}), "\n", then the raw request body
//	answer:   one line of JSON ({"status": 200, ...} or {"refused": reason, "detail": ...}),
//	          "\n", then the raw response body
//
// The first read runs the request on the host (the guest is blocked in fd_read meanwhile, and a
// fetch is bounded by the run's own context), every read after it returns the next part of the
// answer, and a read at the end returns 0 bytes. Nothing the guest writes is trusted: the URL
// check, the address check, redirects, every cap and the save rules are all enforced here, so
// code that bypasses the osa module and writes to the device itself gains nothing.
//
// Operations: fetch (url, method, headers, body flag), check (url; no request), save (kind,
// name; the body is the file), report (the body is "Type: message" of the exception that ended
// the run; written by the run driver), phase ("prelude" or "code": the run driver says which
// part of the run starts; see osaHost.advance). The guest can call report and phase as well as
// the driver can, so neither decides a verdict on its own: a report is only shown, and a phase
// only ever moves forward.

// Guest paths of the run's policy.
const (
	guestDevice = "/dev/osa" // osaDevice: the file "call"
	guestData   = "/data"    // read-only: the reader's attached files (Request.Data)
	guestOsa    = "/opt/osa" // read-only: python/osa.py, wheels/*.whl, fetch_allow, available, driver.pyc
	guestOsaPy  = "/opt/osa/python"
)

// osaDeviceTransport is the server's transport of the osa module: the part of /opt/osa/python/osa.py
// that talks to osaDevice.
//
//go:embed osa_device.py
var osaDeviceTransport []byte

// osaModule is the guest's osa module: the one both runtimes share (web/osa), then the server's
// transport, which installs itself.
var osaModule = slices.Concat(osa.Module, osaDeviceTransport)

// Workspace caps (limits; the community's tool description promises them to the model).
const (
	MaxSavedFiles     = limits.MaxSavedFiles
	MaxSavedFileBytes = int(limits.MaxSavedFileBytes)
	MaxSavedBytes     = int64(limits.MaxSavedBytes)
	// maxSaveNameChars is the longest name a result may list.
	maxSaveNameChars = int(limits.MaxArtifactNameChars)
)

// Reasons a save is refused.
const (
	ReasonBadName       = "bad_name"
	ReasonTooManyFiles  = "too_many_files"
	ReasonWorkspaceFull = "workspace_full"
)

// maxCallHeader caps the JSON line of one request; maxCallBody caps its body (the larger of a
// fetch's request body and a saved file); maxBuffered caps the request bytes held by all the
// open calls of a run together.
const (
	maxCallHeader = 256 << 10
	maxCallBody   = max(maxFetchBodyBytes, MaxSavedFileBytes)
	maxOpenCalls  = 4
	maxBuffered   = maxCallHeader + 1 + maxCallBody + 1<<20
)

// ArtifactNameProblem says what is wrong with a name given to osa.save_script or
// osa.save_artifact, or returns "" when it is fine: a relative path of 1 to 512 characters,
// segments separated by "/", each made of ASCII letters, digits, ".", "_" and "-", none empty,
// "." or "..". The same rule keeps a stored name safe to serve back under a URL path.
func ArtifactNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case utf8.RuneCountInString(name) > maxSaveNameChars:
		return fmt.Sprintf("the name is longer than %d characters", maxSaveNameChars)
	case strings.HasPrefix(name, "/"):
		return "the name must be a relative path, without a leading /"
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return "the name has an empty path segment"
		case ".", "..":
			return "the name has a . or .. path segment"
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return fmt.Sprintf("the name has the character %q; use letters, digits, '.', '_', '-' and '/'", r)
			}
		}
	}
	return ""
}

// workspace holds the files one run saved.
type workspace struct {
	files map[string][]byte
	total int64
}

func (w *workspace) save(name string, data []byte) *refusal {
	if p := ArtifactNameProblem(name); p != "" {
		return &refusal{ReasonBadName, p}
	}
	if len(data) > MaxSavedFileBytes {
		return &refusal{ReasonTooLarge, fmt.Sprintf("the file is %d bytes, over the %d-byte (%d MiB) cap per file", len(data), MaxSavedFileBytes, MaxSavedFileBytes>>20)}
	}
	old, exists := w.files[name]
	if !exists && len(w.files) >= MaxSavedFiles {
		return &refusal{ReasonTooManyFiles, fmt.Sprintf("a run may save at most %d files", MaxSavedFiles)}
	}
	if total := w.total - int64(len(old)) + int64(len(data)); total > MaxSavedBytes {
		return &refusal{ReasonWorkspaceFull, fmt.Sprintf("the files of this run would take %d bytes, over the %d-byte (%d MiB) cap per run", total, MaxSavedBytes, MaxSavedBytes>>20)}
	}
	if w.files == nil {
		w.files = map[string][]byte{}
	}
	w.total += int64(len(data)) - int64(len(old))
	w.files[name] = bytes.Clone(data)
	return nil
}

// osaHost is the host side of one run's osa module.
type osaHost struct {
	// session is set for a run of a live session (session.go): what its driver reports when
	// the run's program has returned. Nil outside sessions.
	session   *runEnd
	ctx       context.Context
	mu        sync.Mutex
	egress    *egress
	fetched   fetchTally // this run's fetches
	ws        workspace
	exception string
	phase     phase
	open      int
	buffered  atomic.Int64 // request bytes held by open calls
}

// phase is the part of a run the run driver last announced.
type phase int

const (
	phaseSetup   phase = iota // the driver's own setup: nothing of the prelude or program ran
	phasePrelude              // the community's prelude
	phaseCode                 // the program
)

var phaseNames = map[string]phase{"prelude": phasePrelude, "code": phaseCode}

// advance moves the run to the named phase, and reports whether it did. A phase is accepted
// only after the current one, so each at most once: the driver announces "code" before the
// program's first line runs, and from then on nothing the program writes can take the run back
// to its prelude (Run would then blame the prelude for the program's failure).
func (h *osaHost) advance(name string) bool {
	next, ok := phaseNames[name]
	if !ok || next <= h.phase {
		return false
	}
	h.phase = next
	return true
}

// phaseNow returns the last phase the driver announced.
func (h *osaHost) phaseNow() phase {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.phase
}

// reported returns the exception the driver reported, or "".
func (h *osaHost) reported() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.exception
}

// call answers one request.
func (h *osaHost) call(header, body []byte) []byte {
	var req struct {
		Op      string      `json:"op"`
		URL     string      `json:"url"`
		Method  string      `json:"method"`
		Headers [][2]string `json:"headers"`
		Body    bool        `json:"body"`
		Kind    string      `json:"kind"`
		Name    string      `json:"name"`
		Phase   string      `json:"phase"`
		Code    int         `json:"code"`
	}
	if len(header) > 0 && header[0] == '{' {
		if err := json.Unmarshal(header, &req); err != nil {
			return answer(map[string]any{"error": "the request is not valid JSON: " + err.Error()}, nil)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch req.Op {
	case "fetch":
		if !req.Body {
			body = nil
		}
		resp, data, err := h.egress.fetch(h.ctx, &h.fetched, fetchRequest{URL: req.URL, Method: req.Method, Headers: req.Headers}, body)
		var r *refusal
		switch {
		case errors.As(err, &r):
			return answer(map[string]any{"refused": r.Reason, "detail": r.Detail}, nil)
		case err != nil:
			return answer(map[string]any{"error": err.Error()}, nil)
		}
		return answer(resp, data)
	case "check":
		_, reason := CheckURL(req.URL, h.egress.allow)
		return answer(map[string]any{"ok": reason == "", "reason": reason}, nil)
	case "save":
		if r := h.ws.save(req.Name, body); r != nil {
			return answer(map[string]any{"refused": r.Reason, "detail": r.Detail}, nil)
		}
		return answer(map[string]any{"ok": true}, nil)
	case "phase":
		if !h.advance(req.Phase) {
			return answer(map[string]any{"error": fmt.Sprintf("phase %q does not follow the run's current phase", req.Phase)}, nil)
		}
		return answer(map[string]any{"ok": true}, nil)
	case "done":
		// A live session's driver reports the run's exit code. It does not end the run: the
		// program could write this too, and then go on running. The run ends when the
		// interpreter, having reported, waits for its next request (sessionInput), so only what
		// the host sees ends it (see runEnd).
		if h.session == nil || req.Code < 0 {
			return answer(map[string]any{"error": "not a session"}, nil)
		}
		h.session.report(req.Code)
		return answer(map[string]any{"ok": true}, nil)
	case "report":
		h.exception = strings.ToValidUTF8(string(body[:min(len(body), 1000)]), "")
		if len(body) > 1000 {
			h.exception += "…"
		}
		return answer(map[string]any{"ok": true}, nil)
	}
	return answer(map[string]any{"error": fmt.Sprintf("unknown operation %q", req.Op)}, nil)
}

func answer(header any, body []byte) []byte {
	b, err := json.Marshal(header)
	if err != nil {
		b = []byte(`{"error":"the answer could not be encoded"}`)
	}
	out := make([]byte, 0, len(b)+1+len(body))
	out = append(append(append(out, b...), '\n'), body...)
	return out
}

// files returns the saved files, sorted names and their bytes.
func (h *osaHost) files() ([]string, map[string][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ws.files) == 0 {
		return nil, nil
	}
	return slices.Sorted(maps.Keys(h.ws.files)), h.ws.files
}

// osaDevice is the file system mounted at /dev/osa: one file, "call", that every open turns
// into a fresh request channel.
type osaDevice struct {
	expsys.UnimplementedFS
	// hp is the current run's host: one per run, swapped between the runs of a live session.
	hp *atomic.Pointer[osaHost]
}

var deviceRoot = wsys.Stat_t{Ino: 1, Mode: fs.ModeDir | 0o555, Nlink: 2}
var deviceCall = wsys.Stat_t{Ino: 2, Mode: 0o666, Nlink: 1}

func (d *osaDevice) OpenFile(p string, flag expsys.Oflag, _ fs.FileMode) (expsys.File, expsys.Errno) {
	p, _ = split(p)
	write := flag&(expsys.O_WRONLY|expsys.O_RDWR) != 0
	switch p {
	case ".":
		if write {
			return nil, expsys.EISDIR
		}
		return &deviceDir{}, 0
	case "call":
		if flag&expsys.O_DIRECTORY != 0 {
			return nil, expsys.ENOTDIR
		}
		if flag&expsys.O_RDWR == 0 {
			return nil, expsys.EACCES // a call both writes and reads
		}
		h := d.hp.Load()
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.open >= maxOpenCalls {
			return nil, expsys.EAGAIN
		}
		h.open++
		return &osaCall{h: h}, 0
	}
	if flag&expsys.O_CREAT != 0 {
		return nil, expsys.EPERM
	}
	return nil, expsys.ENOENT
}

func (d *osaDevice) Stat(p string) (wsys.Stat_t, expsys.Errno) {
	switch p, _ = split(p); p {
	case ".":
		return deviceRoot, 0
	case "call":
		return deviceCall, 0
	}
	return wsys.Stat_t{}, expsys.ENOENT
}

func (d *osaDevice) Lstat(p string) (wsys.Stat_t, expsys.Errno) { return d.Stat(p) }

// deviceDir is /dev/osa opened as a directory.
type deviceDir struct {
	expsys.UnimplementedFile
	listed bool
}

func (f *deviceDir) IsDir() (bool, expsys.Errno)       { return true, 0 }
func (f *deviceDir) Stat() (wsys.Stat_t, expsys.Errno) { return deviceRoot, 0 }
func (f *deviceDir) Close() expsys.Errno               { return 0 }
func (f *deviceDir) Readdir(int) ([]expsys.Dirent, expsys.Errno) {
	if f.listed {
		return nil, 0
	}
	f.listed = true
	return []expsys.Dirent{{Ino: 2, Name: "call"}}, 0
}

// osaCall is one open of /dev/osa/call.
type osaCall struct {
	expsys.UnimplementedFile
	h        *osaHost
	req      []byte
	overflow bool
	resp     []byte
	answered bool
	closed   bool
}

func (c *osaCall) IsDir() (bool, expsys.Errno) { return false, 0 }

func (c *osaCall) Stat() (wsys.Stat_t, expsys.Errno) {
	st := deviceCall
	st.Size = int64(len(c.resp))
	return st, 0
}

func (c *osaCall) Write(p []byte) (int, expsys.Errno) {
	switch {
	case c.closed:
		return 0, expsys.EBADF
	case c.answered:
		return 0, expsys.EBADF // one request per open
	}
	if c.overflow || len(c.req)+len(p) > maxCallHeader+1+maxCallBody {
		c.overflow = true
		return len(p), 0 // the answer will say so
	}
	if c.h.buffered.Add(int64(len(p))) > int64(maxBuffered) {
		c.h.buffered.Add(-int64(len(p)))
		c.overflow = true
		return len(p), 0
	}
	c.req = append(c.req, p...)
	return len(p), 0
}

func (c *osaCall) Read(p []byte) (int, expsys.Errno) {
	if c.closed {
		return 0, expsys.EBADF
	}
	if !c.answered {
		c.answered = true
		c.resp = c.run()
		c.release()
	}
	n := copy(p, c.resp)
	c.resp = c.resp[n:]
	return n, 0
}

// release gives back the request's share of the run's buffer budget.
func (c *osaCall) release() {
	c.h.buffered.Add(-int64(len(c.req)))
	c.req = nil
}

func (c *osaCall) run() []byte {
	if c.overflow {
		return answer(map[string]any{"refused": ReasonTooLarge, "detail": fmt.Sprintf("a request may carry at most %d bytes", maxCallBody)}, nil)
	}
	header, body, ok := bytes.Cut(c.req, []byte("\n"))
	if !ok || len(header) > maxCallHeader {
		return answer(map[string]any{"error": "a request is one line of JSON, a newline, then the body"}, nil)
	}
	return c.h.call(header, body)
}

func (c *osaCall) Close() expsys.Errno {
	if c.closed {
		return 0
	}
	c.closed = true
	c.release()
	c.resp = nil
	c.h.mu.Lock()
	c.h.open--
	c.h.mu.Unlock()
	return 0
}

// runPolicy is the community's policy set up for one run: the read-only /opt/osa, the
// /dev/osa device and the host side behind it.
type runPolicy struct {
	host   *osaHost
	hp     *atomic.Pointer[osaHost] // what the device serves: host, or a later run's (sessions)
	mounts []mount
	args   []string // the interpreter's command line: the run driver, from bytecode when it can
}

// dataNameRE is what an attached file may be called (the upload route's rule).
var dataNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// newRunPolicy prepares req's policy for a run bounded by runCtx; ctx is the caller's.
func (e *Engine) newRunPolicy(ctx, runCtx context.Context, req Request) (*runPolicy, error) {
	files, err := e.policyFiles(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.newRunPolicyFiles(runCtx, req, files)
}

// newRunPolicyFiles is newRunPolicy with /opt/osa's files already made (policyFiles).
func (e *Engine) newRunPolicyFiles(runCtx context.Context, req Request, files memFS) (*runPolicy, error) {
	timeout := req.FetchTimeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	maxBytes := req.FetchMaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultFetchMaxBytes
	}
	h := &osaHost{ctx: runCtx, egress: newEgress(req.FetchAllow, req.AllowLoopback, timeout, maxBytes)}
	ro := &sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: files}}
	hp := new(atomic.Pointer[osaHost])
	hp.Store(h)
	p := &runPolicy{host: h, hp: hp, mounts: []mount{{fs: ro, guest: guestOsa}, {fs: &osaDevice{hp: hp}, guest: guestDevice}},
		args: []string{"python", "-c", runDriver}}
	if len(req.Data) > 0 {
		data := make(memFS, len(req.Data))
		for name, b := range req.Data {
			if !dataNameRE.MatchString(name) || name == "." || name == ".." {
				return nil, fmt.Errorf("sandbox: attached file name %q is not a plain file name", name)
			}
			data[name] = b
		}
		p.mounts = append(p.mounts, mount{fs: &sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: data}}, guest: guestData})
	}
	if files["driver.pyc"] != nil {
		p.args = []string{"python", "-c", driverBootstrap}
	}
	return p, nil
}

// close releases what the run's fetches held.
func (p *runPolicy) close() { p.host.egress.close() }

// driverInput is the run driver's stdin: the prelude's length in bytes on the first line, then
// the prelude, then the code.
func driverInput(req Request) []byte {
	b := make([]byte, 0, 16+len(req.Prelude)+len(req.Source))
	b = fmt.Appendf(b, "%d\n", len(req.Prelude))
	b = append(b, req.Prelude...)
	return append(b, req.Source...)
}

// mount is one more file system in a run's guest, at an absolute guest path.
type mount struct {
	fs    expsys.FS
	guest string
}
