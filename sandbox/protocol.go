package sandbox

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/osc-assistant/assistant/limits"
)

// The worker protocol: how a Pool talks to its `assistant sandbox-worker` processes over the
// worker's stdin (pool → worker) and stdout (worker → pool). The worker's stderr carries its
// logs only.
//
// Each message is one frame: a 4-byte big-endian length n, then n bytes of one JSON object (a
// frame). n is at most maxFrameBytes; a reader that sees a larger n stops, and the pool then
// kills the worker. The messages:
//
//	worker → pool  {"type":"ready","hello":{...}}         once, when the engine is loaded
//	pool → worker  {"type":"run","id":N,"request":{...},"data":[{"name":"x.csv","bytes":B},...]}
//	               a Request (one at a time), then one raw frame per announced file
//	worker → pool  {"type":"started","id":N}               run N is starting
//	worker → pool  {"type":"result","id":N,"result":{...}} how run N ended (a Result)
//	worker → pool  {"type":"error","id":N,"error":"..."}   run N could not be judged
//	pool → worker  {"type":"cancel","id":N}                the caller gave up on run N
//
// A worker runs one request at a time; it acknowledges every run with a started frame before
// it runs anything (so a worker that dies before that point has not run it, and the pool may
// send it to another), then answers with exactly one result or error frame (a cancelled run
// answers with an error). It exits when its stdin ends, even in the middle of a run. Request and Result travel as encoding/json encodes them, so every field
// added to them must survive a JSON round trip (no funcs, channels or interfaces; hooks that
// need host state are Options of the worker's Engine instead).
//
// Request.Data (the reader's attached files, up to hundreds of MB) is the exception: base64 in
// JSON would add a third and overflow maxFrameBytes, so a run frame carries its Request with Data
// nil and a "data" list of the files' names and sizes, and is followed by one raw frame per file
// in that order: a 4-byte big-endian length, then the file's bytes, no JSON. readFrame reads them
// and rebuilds Request.Data; writeFrame refuses a Request whose Data is set (writeRun sends it).
// The files are bounded as uploads are (maxDataFiles, maxDataFileBytes, maxDataBytes), and
// every raw frame must have the length its file announced; anything else is a protocol error.

// maxFrameBytes bounds one frame: a Result carries at most 16384 + 8192 clipped characters of
// output (4 bytes each at worst, 6 when JSON escapes them) plus whatever the policy adds
// (artifacts, up to 25 MB per run, base64 in JSON), and a Request the program and its
// prelude.
const maxFrameBytes = 64 << 20

// Frame types.
const (
	frameReady  = "ready"
	frameRun    = "run"
	frameStart  = "started"
	frameResult = "result"
	frameError  = "error"
	frameCancel = "cancel"
)

// frame is one protocol message.
type frame struct {
	Type    string   `json:"type"`
	ID      uint64   `json:"id,omitempty"`
	Request *Request `json:"request,omitempty"`
	Result  *Result  `json:"result,omitempty"`
	Error   string   `json:"error,omitempty"`
	Hello   *hello   `json:"hello,omitempty"`
	// Sessions is the worker's live interpreters after a run (with a result or an error).
	Sessions *sessionStats `json:"sessions,omitempty"`
	// Stuck, on a result or an error, says that an interpreter of the worker did not stop when
	// told to and still runs (Engine.Stuck): the pool kills the worker, the only way to end it.
	Stuck bool `json:"stuck,omitempty"`
	// Data announces the raw frames that follow a run frame: its Request's attached files.
	// readFrame consumes it (into Request.Data), so a frame it returns never has it.
	Data []dataFile `json:"data,omitempty"`
}

// dataFile is one attached file of a run frame; a raw frame of Bytes bytes carries it.
type dataFile struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// The bounds of a run's attached files on the pipe: the server's upload caps (a community's
// own limits are lower, and the upload routes enforce them), so no valid session is refused
// and a broken or hostile stream cannot make a worker allocate more than a session may hold.
var (
	maxDataFiles = limits.Uploads.MaxFiles.Max
	// A raw frame's length is 4 bytes, whatever the upload cap becomes.
	maxDataFileBytes = min(int64(limits.Uploads.MaxFileMB.Max)<<20, math.MaxUint32)
	maxDataBytes     = int64(limits.Uploads.MaxSessionMB.Max) << 20
)

// errBadData is wrapped by the errors about a run's attached files on the pipe.
var errBadData = errors.New("sandbox: worker protocol: bad attached files")

// sessionStats counts a worker's live session interpreters and their linear memory.
type sessionStats struct {
	Live   int   `json:"live"`
	Memory int64 `json:"memory"`
}

// hello is what a worker says once its engine is loaded.
type hello struct {
	PID    int    `json:"pid"`
	SHA256 string `json:"sha256"` // of python.wasm
	Python string `json:"python"` // e.g. "3.13.5"
	Mode   string `json:"mode"`
}

// errFrameTooLarge is returned by readFrame for a length over maxFrameBytes.
var errFrameTooLarge = errors.New("sandbox: worker protocol frame too large")

// writeFrame writes f as one frame. It is not safe for concurrent use on one writer. It
// refuses a frame with attached files (writeRun sends those).
func writeFrame(w io.Writer, f *frame) error {
	if f.Data != nil || (f.Request != nil && f.Request.Data != nil) {
		return fmt.Errorf("%w: a %s frame's files go as raw frames (writeRun)", errBadData, f.Type)
	}
	return writeJSON(w, f)
}

// writeJSON writes f as one JSON frame, whatever it holds.
func writeJSON(w io.Writer, f *frame) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("sandbox: encoding a %s frame: %w", f.Type, err)
	}
	if len(body) > maxFrameBytes {
		return fmt.Errorf("%w: %d bytes", errFrameTooLarge, len(body))
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = w.Write(buf)
	return err
}

// readFrame reads one frame, and for a run frame that announces attached files the raw frames
// that follow it, into its Request.Data (only the worker's side reads those: see
// readWorkerFrame). It returns io.EOF at a clean end between frames and io.ErrUnexpectedEOF
// for a message cut short.
func readFrame(r io.Reader) (*frame, error) { return readFrameData(r, true) }

// readWorkerFrame reads one frame a worker sent: a worker never sends files, so a frame that
// announces any is a protocol error before a byte of them is read.
func readWorkerFrame(r io.Reader) (*frame, error) { return readFrameData(r, false) }

func readFrameData(r io.Reader, acceptData bool) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes", errFrameTooLarge, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, cutShort(err)
	}
	f := new(frame)
	if err := json.Unmarshal(body, f); err != nil {
		return nil, fmt.Errorf("sandbox: decoding a worker protocol frame: %w", err)
	}
	if f.Type == "" {
		return nil, errors.New("sandbox: worker protocol frame without a type")
	}
	if f.Request != nil && f.Request.Data != nil {
		return nil, fmt.Errorf("%w: inside the JSON of a %s frame", errBadData, f.Type)
	}
	if f.Data != nil {
		if !acceptData {
			return nil, fmt.Errorf("%w: announced by the worker", errBadData)
		}
		if f.Type != frameRun || f.Request == nil {
			return nil, fmt.Errorf("%w: announced by a %s frame without a request", errBadData, f.Type)
		}
		data, err := readData(r, f.Data)
		if err != nil {
			return nil, err
		}
		f.Request.Data, f.Data = data, nil
	}
	return f, nil
}

// announceData lists data for a run frame, by name, after checking it against the bounds a
// reader enforces (checkData); nil when there is none.
func announceData(data map[string][]byte) ([]dataFile, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) > maxDataFiles { // before listing a map of any size
		return nil, fmt.Errorf("%w: %d files, at most %d", errBadData, len(data), maxDataFiles)
	}
	files := make([]dataFile, 0, len(data))
	for name, b := range data {
		files = append(files, dataFile{Name: name, Bytes: int64(len(b))})
	}
	slices.SortFunc(files, func(a, b dataFile) int { return cmp.Compare(a.Name, b.Name) })
	if err := checkData(files); err != nil {
		return nil, err
	}
	return files, nil
}

// checkData enforces the bounds of an announcement: at most maxDataFiles files with distinct
// flat names (the sandbox's dataNameRE), each at most maxDataFileBytes, at most maxDataBytes in
// all.
func checkData(files []dataFile) error {
	if len(files) > maxDataFiles {
		return fmt.Errorf("%w: %d files, at most %d", errBadData, len(files), maxDataFiles)
	}
	seen := make(map[string]struct{}, len(files))
	var total int64
	for _, f := range files {
		if !dataNameRE.MatchString(f.Name) || f.Name == "." || f.Name == ".." {
			return fmt.Errorf("%w: %q is not a plain file name", errBadData, f.Name)
		}
		if _, dup := seen[f.Name]; dup {
			return fmt.Errorf("%w: %q twice", errBadData, f.Name)
		}
		seen[f.Name] = struct{}{}
		if f.Bytes < 0 || f.Bytes > maxDataFileBytes {
			return fmt.Errorf("%w: %q has %d bytes, at most %d", errBadData, f.Name, f.Bytes, maxDataFileBytes)
		}
		total += f.Bytes
		if total > maxDataBytes {
			return fmt.Errorf("%w: more than %d bytes in all", errBadData, maxDataBytes)
		}
	}
	return nil
}

// writeRun writes a run frame for req without its Data, announcing files (announceData's list
// of req.Data), then each file as a raw frame. A failure may leave a partial message: the
// stream is then broken. Not safe for concurrent use on one writer.
func writeRun(w io.Writer, id uint64, req Request, files []dataFile) error {
	if len(files) != len(req.Data) {
		return fmt.Errorf("%w: %d announced for %d files", errBadData, len(files), len(req.Data))
	}
	data := req.Data
	req.Data = nil
	if err := writeJSON(w, &frame{Type: frameRun, ID: id, Request: &req, Data: files}); err != nil {
		return err
	}
	var hdr [4]byte
	for _, f := range files {
		b, ok := data[f.Name]
		if !ok || int64(len(b)) != f.Bytes {
			return fmt.Errorf("%w: %q is not as announced", errBadData, f.Name)
		}
		binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// readData reads the raw frames that files announces and returns them by name.
func readData(r io.Reader, files []dataFile) (map[string][]byte, error) {
	if err := checkData(files); err != nil {
		return nil, err
	}
	data := make(map[string][]byte, len(files))
	var hdr [4]byte
	for _, f := range files {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, cutShort(err)
		}
		// Checked against the announcement (itself bounded) before anything is allocated.
		if n := binary.BigEndian.Uint32(hdr[:]); int64(n) != f.Bytes {
			return nil, fmt.Errorf("%w: %q announced %d bytes, its frame has %d", errBadData, f.Name, f.Bytes, n)
		}
		// Only the worker reads data frames, from the pool (readWorkerFrame refuses them from a
		// worker), and the size is bounded above: one exact allocation.
		b := make([]byte, f.Bytes)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, cutShort(err)
		}
		data[f.Name] = b
	}
	return data, nil
}

// cutShort turns io.EOF, inside a message, into io.ErrUnexpectedEOF.
func cutShort(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
