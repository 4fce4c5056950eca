package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/osc-assistant/assistant/mcp/mcptest"
)

const mcpSecret = "kb-secret-token"

// mcpCommunities writes a communities directory with one community, kb, whose MCP server is a
// real one on loopback that wants the X-Api-Key header from KB_TOKEN.
func mcpCommunities(t *testing.T) (dir string) {
	return mcpCommunitiesWith(t, nil)
}

// mcpCommunitiesWith is mcpCommunities with tools added to the server's.
func mcpCommunitiesWith(t *testing.T, tools []*sdk.Tool) (dir string) {
	t.Helper()
	srv := httptest.NewServer(mcptest.HandlerWith(mcptest.Options{Tools: tools, Check: func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == mcpSecret }}))
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "kb"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `id: kb
name: Knowledge
description: A community with an MCP server.
extensions:
  mcp_servers:
    - name: kb
      url:
        production: ` + srv.URL + `
        develop: http://127.0.0.1:1/
      headers_env:
        X-Api-Key: KB_TOKEN
  mcp_tools_deny: ["kb__die", "kb__hang"]
`
	if err := os.WriteFile(filepath.Join(dir, "kb", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestValidateConnect: validate --connect connects to every MCP server and lists the tools the
// model sees; an unreachable one is exit 1.
func TestValidateConnect(t *testing.T) {
	dir := mcpCommunities(t)
	run1 := func(env map[string]string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"assistant", "validate", "--connect", dir}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	code, out := run1(map[string]string{"KB_TOKEN": mcpSecret})
	if want := "kb: MCP server kb (production): 7 tools: kb__big, kb__chatty, kb__echo, kb__fail, kb__flood, kb__pid, kb__rename_me\n"; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "1 of 1 MCP server reachable") {
		t.Errorf("exit %d, output:\n%s\nwant %q", code, out, want)
	}
	if strings.Contains(out, mcpSecret) {
		t.Error("the output holds the secret")
	}
	old := mcpConnectWait
	mcpConnectWait = 5 * time.Second
	defer func() { mcpConnectWait = old }()
	code, out = run1(map[string]string{"KB_TOKEN": mcpSecret, "ASSISTANT_DEPLOYMENT": "develop"})
	if code != 1 || !strings.Contains(out, "kb: MCP server kb (develop): not reachable") {
		t.Errorf("develop: exit %d, output:\n%s", code, out)
	}
}

// TestServeMCP: serve connects the MCP servers at start, /health and /metrics report them, and a
// reload connects them again.
func TestServeMCP(t *testing.T) {
	dir := mcpCommunities(t)
	ts := startServerWith(t, map[string]string{"KB_TOKEN": mcpSecret}, nil, "--communities", dir, "--admin-key", "sesame")
	var health struct {
		Status     string `json:"status"`
		MCPServers []struct {
			Community, Server string
			Connected         bool
			Tools             int
		} `json:"mcp_servers"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		body := readAll(t, ts.do(t, "GET", "/health", nil))
		if err := json.Unmarshal(body, &health); err != nil {
			t.Fatal(err)
		}
		if len(health.MCPServers) == 1 && health.MCPServers[0].Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health never showed the server connected: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := health.MCPServers[0]; health.Status != "healthy" || s.Community != "kb" || s.Server != "kb" || s.Tools != 7 {
		t.Errorf("health %+v", health)
	}
	m := string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
	for _, want := range []string{`assistant_mcp_server_up{community="kb",server="kb"} 1`, `assistant_mcp_server_tools{community="kb",server="kb"} 7`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "mcp"))
		}
	}
	// A reload reconnects: the old client is closed, the new one lists its tools again.
	if r := ts.do(t, "POST", "/admin/reload", nil, "X-API-Key", "sesame"); r.StatusCode != 200 {
		t.Fatalf("reload: %d", r.StatusCode)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		m = string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
		if strings.Contains(m, `assistant_mcp_server_up{community="kb",server="kb"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not connected after the reload:\n%s", grepLines(m, "mcp"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// manyTools are 100 tools more than the server's own: more than are bound from one server.
func manyTools() []*sdk.Tool {
	var out []*sdk.Tool
	for i := range 100 {
		out = append(out, &sdk.Tool{Name: fmt.Sprintf("t%03d", i), Description: "Tool.", InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

// TestMCPToolsLeftOut: a server offering more tools than are bound says so in validate
// --connect, in /health and in /metrics.
func TestMCPToolsLeftOut(t *testing.T) {
	dir := mcpCommunitiesWith(t, manyTools())
	// The server's 7 allowed tools and 100 more: 64 bound, 43 left out.
	const note = "43 tools left out: at most 64 are bound from one server"
	var out, errb bytes.Buffer
	env := map[string]string{"KB_TOKEN": mcpSecret}
	code := run(context.Background(), []string{"assistant", "validate", "--connect", dir}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	if want := "kb: MCP server kb (production): " + note + "\n"; code != 0 || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "(production): 64 tools: ") {
		t.Errorf("exit %d, output:\n%s%s\nwant %q", code, out.String(), errb.String(), want)
	}
	ts := startServerWith(t, env, nil, "--communities", dir)
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		body = readAll(t, ts.do(t, "GET", "/health", nil))
		if strings.Contains(string(body), `"connected":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health never showed the server connected: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if want := `"tools":64,"tools_left_out":43,"note":"` + note + `"`; !strings.Contains(string(body), want) {
		t.Errorf("health %s lacks %s", body, want)
	}
	m := string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
	if want := `assistant_mcp_server_tools_left_out{community="kb",server="kb"} 43`; !strings.Contains(m, want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "mcp"))
	}
}
