package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
//	pool → worker  {"type":"run","id":N,"request":{...}}   a Request; one at a time
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
}

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

// writeFrame writes f as one frame. It is not safe for concurrent use on one writer.
func writeFrame(w io.Writer, f *frame) error {
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

// readFrame reads one frame. It returns io.EOF at a clean end between frames and
// io.ErrUnexpectedEOF for a frame cut short.
func readFrame(r io.Reader) (*frame, error) {
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
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	f := new(frame)
	if err := json.Unmarshal(body, f); err != nil {
		return nil, fmt.Errorf("sandbox: decoding a worker protocol frame: %w", err)
	}
	if f.Type == "" {
		return nil, errors.New("sandbox: worker protocol frame without a type")
	}
	return f, nil
}
