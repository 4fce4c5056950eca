// Package mcptest is a real MCP server, built with the official Go SDK, for tests: over
// streamable HTTP (an httptest server on loopback) or over stdio as a child process (the test
// binary run again, see ServeStdioIfChild).
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChildEnv is the environment variable that makes a test binary serve MCP over stdio instead of
// running its tests; a command server's config must name it in env.
const ChildEnv = "MCPTEST_STDIO_CHILD"

// PrettyEnv, set in a child's environment, makes it write every message indented over many
// lines, as some servers do: JSON-RPC over stdio ends a message where its JSON value ends, not
// at a newline.
const PrettyEnv = "MCPTEST_STDIO_PRETTY"

// CallsEnv, set in a child's environment to a file's path, makes it append the name of every
// tools/call it receives to that file, a line each, before the tool runs.
const CallsEnv = "MCPTEST_STDIO_CALLS"

// NewServer returns the test server. Its tools:
//
//   - echo {text}: answers "echo: <text>"
//   - fail: answers with isError and "no such tag: Foo"
//   - hang: never answers (until the call is cancelled; over HTTP, until the client goes away)
//   - die: the process exits mid-call (over HTTP, the connection is dropped unanswered)
//   - rename_me: removes itself and adds "renamed", so the server sends tools/list_changed
//   - pid: answers the server's process id
//   - big: answers 100,000 characters of "x"
//   - flood {bytes, blocks}: answers that many characters of "x", in that many text blocks
//     (default 1; over HTTP, Handler streams it as one)
//   - chatty {events, size}: over HTTP, Handler streams that many log notifications of that
//     size before the answer "chatty: done"; over stdio it only answers
//   - bad_schema: an input schema that is not a JSON Schema
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes its text.", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"},
	}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return text("echo: " + in.Text), nil
	})
	empty := map[string]any{"type": "object"}
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r := text("no such tag: Foo")
		r.IsError = true
		return r, nil
	})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "Never answers.", InputSchema: empty}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return text("too late"), nil
	})
	s.AddTool(&sdk.Tool{Name: "die", Description: "Ends the process.", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		os.Exit(3) // over HTTP, Handler drops the connection before this runs
		return nil, nil
	})
	s.AddTool(&sdk.Tool{Name: "pid", Description: "The server's process id.", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(strconv.Itoa(os.Getpid())), nil
	})
	s.AddTool(&sdk.Tool{Name: "big", Description: "A long answer.", InputSchema: empty}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(strings.Repeat("x", 100_000)), nil
	})
	s.AddTool(&sdk.Tool{Name: "flood", Description: "An answer as long as asked.", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"bytes": map[string]any{"type": "integer"}, "blocks": map[string]any{"type": "integer"}, "sse": map[string]any{"type": "boolean"}},
	}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Bytes, Blocks int }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		blocks := max(in.Blocks, 1)
		res := &sdk.CallToolResult{}
		for i := range blocks {
			n := in.Bytes / blocks
			if i == 0 {
				n += in.Bytes % blocks
			}
			res.Content = append(res.Content, &sdk.TextContent{Text: strings.Repeat("x", n)})
		}
		return res, nil
	})
	s.AddTool(&sdk.Tool{Name: "chatty", Description: "Many small messages, then an answer.", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"events": map[string]any{"type": "integer"}, "size": map[string]any{"type": "integer"}},
	}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("chatty: done"), nil
	})
	s.AddTool(&sdk.Tool{Name: "bad_schema", Description: "Its schema is broken.", InputSchema: map[string]any{"type": "object", "properties": "oops"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ran"), nil })
	var rename sdk.ToolHandler
	rename = func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.RemoveTools("rename_me")
		s.AddTool(&sdk.Tool{Name: "renamed", Description: "The new name.", InputSchema: empty}, rename)
		return text("renamed"), nil
	}
	s.AddTool(&sdk.Tool{Name: "rename_me", Description: "Renames itself.", InputSchema: empty}, rename)
	return s
}

// Options shape the HTTP test server.
type Options struct {
	// Check, when set, sees every request first; the server answers 401 when it returns false.
	Check func(*http.Request) bool
	// Tools are added to NewServer's; each answers "ok".
	Tools []*sdk.Tool
	// Flooded, when set, is told how many bytes a flood or chatty answer managed to write
	// before it ended (all of them, or up to the write that failed as the client went away).
	Flooded func(written int64)
	// Calls, when set, is told the name of every tools/call that reaches the server.
	Calls func(name string)
}

// Handler serves NewServer over streamable HTTP; check, when set, sees every request first and
// answers 401 when it returns false.
func Handler(check func(*http.Request) bool) http.Handler {
	return HandlerWith(Options{Check: check})
}

// HandlerWith serves NewServer, with o's tools added, over streamable HTTP.
//
// The flood and chatty tools are answered here, not by the SDK, so that an answer of many
// megabytes is written as it is made (and the bytes the client took are counted) rather than
// built in memory first.
func HandlerWith(o Options) http.Handler {
	srv := NewServer()
	for _, t := range o.Tools {
		srv.AddTool(t, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Check != nil && !o.Check(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Bytes, Events, Size int
					SSE                 bool
				} `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" && o.Calls != nil {
			o.Calls(msg.Params.Name)
		}
		if msg.Method == "tools/call" {
			a := msg.Params.Arguments
			switch msg.Params.Name {
			case "die":
				// The server "dies" mid-call: the connection is dropped without an answer.
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						_ = conn.Close()
					}
				}
				return
			case "hang":
				// Never answers: the stream is open until the client goes away, so that a call
				// that was given up ends here too.
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_ = http.NewResponseController(w).Flush()
				<-r.Context().Done()
				return
			case "flood":
				n := flood(w, msg.ID, a.Bytes, a.SSE)
				if o.Flooded != nil {
					o.Flooded(n)
				}
				return
			case "chatty":
				n := chatty(w, msg.ID, a.Events, a.Size)
				if o.Flooded != nil {
					o.Flooded(n)
				}
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// countingWriter counts the bytes written and flushes each write, so that a write fails soon
// after the client stops reading and closes the connection.
type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err == nil {
		err = http.NewResponseController(c.w).Flush()
	}
	return n, err
}

// flood writes the answer to call id: a text of n "x", as JSON or as one SSE event, in chunks,
// until done or a write fails. It returns the bytes written.
func flood(w http.ResponseWriter, id json.RawMessage, n int, sse bool) int64 {
	cw := &countingWriter{w: w}
	head, tail := `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"`, `"}]}}`
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		head, tail = "event: message\ndata: "+head, tail+"\n\n"
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if _, err := io.WriteString(cw, head); err != nil {
		return cw.n
	}
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for left := n; left > 0; left -= len(chunk) {
		if _, err := cw.Write(chunk[:min(left, len(chunk))]); err != nil {
			return cw.n
		}
	}
	_, _ = io.WriteString(cw, tail)
	return cw.n
}

// chatty writes, as SSE, events log notifications of about size bytes each, then the answer to
// call id. It returns the bytes written.
func chatty(w http.ResponseWriter, id json.RawMessage, events, size int) int64 {
	cw := &countingWriter{w: w}
	w.Header().Set("Content-Type", "text/event-stream")
	note := "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("y", size) + `"}}` + "\r\n\r\n"
	for range events {
		if _, err := io.WriteString(cw, note); err != nil {
			return cw.n
		}
	}
	_, _ = io.WriteString(cw, "event: message\ndata: "+`{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"chatty: done"}]}}`+"\n\n")
	return cw.n
}

// NewHTTP starts the server on loopback; its URL is the MCP endpoint.
func NewHTTP(check func(*http.Request) bool) *httptest.Server {
	return httptest.NewServer(Handler(check))
}

// ServeStdioIfChild serves MCP over stdio and exits when the process was started as a child
// (ChildEnv set, and PrettyEnv and CallsEnv as they say); call it first in TestMain.
func ServeStdioIfChild() {
	if os.Getenv(ChildEnv) == "" {
		return
	}
	srv := NewServer()
	if path := os.Getenv(CallsEnv); path != "" {
		srv.AddReceivingMiddleware(recordCalls(path))
	}
	var out io.WriteCloser = os.Stdout
	if os.Getenv(PrettyEnv) != "" {
		out = indenter{os.Stdout}
	}
	_ = srv.Run(context.Background(), &sdk.IOTransport{Reader: os.Stdin, Writer: out})
	os.Exit(0)
}

// recordCalls appends the name of every tools/call to the file at path.
func recordCalls(path string) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if call, ok := req.(*sdk.CallToolRequest); ok {
				if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
					_, _ = f.WriteString(call.Params.Name + "\n")
					_ = f.Close()
				}
			}
			return next(ctx, method, req)
		}
	}
}

// indenter writes each message it is given (the SDK writes one a Write, ending in a newline)
// indented, one member or element a line.
type indenter struct{ w io.WriteCloser }

func (i indenter) Write(p []byte) (int, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimRight(p, "\n"), "", "  "); err != nil {
		return 0, err
	}
	b.WriteByte('\n')
	if _, err := i.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (i indenter) Close() error { return i.w.Close() }
