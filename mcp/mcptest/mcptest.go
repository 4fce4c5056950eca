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

// NewServer returns the test server. Its tools:
//
//   - echo {text}: answers "echo: <text>"
//   - fail: answers with isError and "no such tag: Foo"
//   - hang: never answers (until the call is cancelled)
//   - die: the process exits mid-call (over HTTP, the connection is dropped unanswered)
//   - rename_me: removes itself and adds "renamed", so the server sends tools/list_changed
//   - pid: answers the server's process id
//   - big: answers 100,000 characters of "x"
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

// Handler serves NewServer over streamable HTTP; check, when set, sees every request first and
// answers 401 when it returns false.
func Handler(check func(*http.Request) bool) http.Handler {
	srv := NewServer()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil && !check(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) && bytes.Contains(body, []byte(`"name":"die"`)) {
			// The server "dies" mid-call: the connection is dropped without an answer.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// NewHTTP starts the server on loopback; its URL is the MCP endpoint.
func NewHTTP(check func(*http.Request) bool) *httptest.Server {
	return httptest.NewServer(Handler(check))
}

// ServeStdioIfChild serves MCP over stdio and exits when the process was started as a child
// (ChildEnv set); call it first in TestMain.
func ServeStdioIfChild() {
	if os.Getenv(ChildEnv) == "" {
		return
	}
	_ = NewServer().Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0)
}
