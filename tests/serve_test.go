package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "assistant-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "assistant")
	build := exec.Command("go", "build", "-o", binary, "../cmd/assistant")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binary:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// process is a running assistant serve.
type process struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	stdout *syncBuffer
}

// syncBuffer is the process's stderr, written by exec's copier while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int { return len(s.String()) }

// serve starts the binary on a free loopback port and waits for it to say where it serves.
func serve(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	// Each process gets its own data directory (the knowledge store), never the user's,
	// unless the test names one,
	// and no scheduled sync reaches a real API unless the test turns syncing on.
	cmd.Env = append(append(os.Environ(), "ASSISTANT_DATA_DIR="+t.TempDir(), "ASSISTANT_SYNC_ENABLED=false"), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &syncBuffer{}, stdout: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.stdout.Write([]byte(sc.Text() + "\n"))
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		// A people's line ("assistant v serving on http://…/"), or, with JSON logs, a record.
		var rec struct{ Msg, URL string }
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
			line = rec.URL
		}
		i := strings.Index(line, "http://")
		if i < 0 {
			t.Fatalf("unexpected first line %q", line)
		}
		p.url = strings.TrimSuffix(line[i:], "/")
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start; stderr:\n%s", p.stderr)
	}
	return p
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	cmd := exec.Command("cp", "-R", from+"/.", to)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
}

// waitFor polls until cond holds: the reload runs in the server after the signal is delivered.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeShippedCommunities(t *testing.T) {
	// Text logs: the start lines are the people's (with JSON logs they are records too).
	p := serve(t, nil, "--communities", "../communities", "--log-format", "text")
	for _, id := range []string{"bids", "hed", "nemar"} {
		if code, body := get(t, p.url+"/"+id); code != 200 || !strings.Contains(body, `"id":"`+id+`"`) {
			t.Errorf("GET /%s: %d %s", id, code, body)
		}
	}
	if code, _ := get(t, p.url+"/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl"); code != 200 {
		t.Errorf("wheel: %d", code)
	}
	// serve prints the demo page of each community that can run code, for a newcomer to open.
	waitFor(t, "the demo URL", func() bool { return strings.Contains(p.stdout.String(), "demo page: "+p.url+"/nemar/demo/\n") })
	if strings.Contains(p.stdout.String(), "/bids/demo/") {
		t.Errorf("a community without client tools got a demo URL:\n%s", p.stdout)
	}
}

// TestBrokenConfigStopsStart: a config error stops the process before it listens.
func TestBrokenConfigStopsStart(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../communities", dir)
	if err := os.WriteFile(filepath.Join(dir, "bids/config.yaml"), []byte("id: bids\nname: BIDS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--communities", dir).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "bids/config.yaml:1:1: description: required field is missing") || strings.Contains(string(out), "serving on") {
		t.Errorf("output:\n%s", out)
	}
}

func TestBadDeploymentStopsStart(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--communities", "../communities")
	cmd.Env = append(os.Environ(), "ASSISTANT_DEPLOYMENT=staging")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `staging`) || !strings.Contains(string(out), "must be one of (production, develop)") || strings.Contains(string(out), "serving on") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}

// TestSIGHUPReload: a broken config on SIGHUP keeps the old communities; a good one swaps.
func TestSIGHUPReload(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../communities", dir)
	p := serve(t, nil, "--communities", dir)
	file := filepath.Join(dir, "bids/config.yaml")
	good, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte("id: bids\nname: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := p.stderr.Len()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed reload to be logged", func() bool {
		return strings.Contains(p.stderr.String()[before:], "reload: config error")
	})
	if code, body := get(t, p.url+"/bids"); code != 200 || !strings.Contains(body, `"name":"BIDS"`) {
		t.Fatalf("after a broken reload: %d %s", code, body)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(good), "name: BIDS", "name: BIDS reloaded", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the good reload to swap", func() bool {
		_, body := get(t, p.url+"/bids")
		return strings.Contains(body, `"name":"BIDS reloaded"`)
	})
}

// stop sends SIGTERM and waits (20 s at most) for the process to end with status 0.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr:\n%s", err, p.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not stop")
	}
}

// TestGracefulShutdown: SIGTERM ends the process with status 0.
func TestGracefulShutdown(t *testing.T) {
	p := serve(t, nil, "--communities", "../communities")
	p.stop(t)
	if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no stop log:\n%s", p.stderr)
	}
}

// engineDir finds the Python engine, or skips; under CI a missing engine fails.
func engineDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ASSISTANT_ENGINE_DIR")
	if dir == "" {
		if out, err := exec.Command("../scripts/build_python_wasi.sh", "--print-dir").Output(); err == nil {
			dir = strings.TrimSpace(string(out))
		}
	}
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("the Python engine is not built under CI; run make engine")
		}
		t.Skip("the Python engine is not built; run make engine")
	}
	return dir
}

// TestServerFallbackThroughWorkers: the real binary with its pool of sandbox-worker processes
// runs a curl-style chat's code (no client tools declared) and streams its output.
func TestServerFallbackThroughWorkers(t *testing.T) {
	p := serve(t, nil, "--communities", "../communities", "--engine-dir", engineDir(t), "--sandbox-workers", "1")
	body := `{"message":"Run:\n` + "```python\\nimport nemar_tools\\nprint(nemar_tools.__name__, 6*7)\\n```" + `"}`
	resp, err := http.Post(p.url+"/nemar/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream, _ := io.ReadAll(resp.Body)
	s := string(stream)
	for _, want := range []string{`"event":"tool_start"`, `"event":"tool_end"`, `nemar_tools 42`, `"event":"done"`} {
		if !strings.Contains(s, want) {
			t.Errorf("stream lacks %s:\n%s", want, s)
		}
	}
	if !strings.Contains(p.stderr.String(), "python workers ready") {
		t.Errorf("the pool did not start:\n%s", p.stderr)
	}
}

// TestServerFallbackSessionThroughWorkers: through the real binary's worker pool, a chat
// session's server runs share one live interpreter.
func TestServerFallbackSessionThroughWorkers(t *testing.T) {
	p := serve(t, nil, "--communities", "../communities", "--engine-dir", engineDir(t), "--sandbox-workers", "2",
		"--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0")
	chat := func(body string) string {
		t.Helper()
		resp, err := http.Post(p.url+"/nemar/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first := chat(`{"message":"` + "```python x = 41 ```" + `"}`)
	_, rest, ok := strings.Cut(first, `"session_id":"`)
	sid, _, _ := strings.Cut(rest, `"`)
	if !ok || sid == "" {
		t.Fatalf("no session id in:\n%s", first)
	}
	for i := range 3 {
		s := chat(`{"message":"` + "```python x += 1; print(x) ```" + `","session_id":"` + sid + `"}`)
		if !strings.Contains(s, fmt.Sprintf("%d", 42+i)) {
			t.Errorf("run %d:\n%s", i, s)
		}
	}
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(m), "\nassistant_python_sessions_live 1\n") {
		t.Errorf("/metrics does not count the live session interpreter")
	}
}

// metricValue reads one unlabelled sample from GET /metrics, or -1 when it is absent.
func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	_, body := get(t, url+"/metrics")
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	return -1
}

// TestFastPathInTheBinary: assistant serve answers GET /{c} on the fast path and hands the
// rest of a keep-alive connection to net/http after a request it does not answer (a POST with
// a body), as /metrics counts; --fast-path off leaves everything to net/http. An idle
// keep-alive connection does not hold up a graceful stop.
func TestFastPathInTheBinary(t *testing.T) {
	p := serve(t, nil, "--communities", "../communities")
	c, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	roundTrip := func(req, method string) (*http.Response, string) {
		t.Helper()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	const getNemar = "GET /nemar HTTP/1.1\r\nHost: x\r\n\r\n"
	if resp, body := roundTrip(getNemar, "GET"); resp.StatusCode != 200 || !strings.Contains(body, `"id":"nemar"`) {
		t.Fatalf("GET /nemar: %d %.80s", resp.StatusCode, body)
	}
	feedback := `{"community":"nemar","rating":"up"}`
	resp, body := roundTrip("POST /feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(feedback))+"\r\n\r\n"+feedback, "POST")
	if resp.StatusCode >= 500 || resp.StatusCode == 404 {
		t.Fatalf("POST /feedback after a fast answer: %d %s", resp.StatusCode, body)
	}
	if resp, body := roundTrip(getNemar, "GET"); resp.StatusCode != 200 || !strings.Contains(body, `"id":"nemar"`) {
		t.Fatalf("GET /nemar after the hand-off: %d %.80s", resp.StatusCode, body)
	}
	if n := metricValue(t, p.url, "assistant_http_fast_answers_total"); n < 1 {
		t.Errorf("fast answers %v, want at least 1", n)
	}
	if n := metricValue(t, p.url, "assistant_http_fast_handoffs_total"); n < 2 { // the POST's, and /metrics'
		t.Errorf("hand-offs %v, want at least 2", n)
	}

	// An idle keep-alive connection of the fast path, then SIGTERM: the process still stops.
	idle, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, getNemar); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("idle connection's answer: %v", err)
	}
	p.stop(t) // an idle fast-path connection must not hold it up

	off := serve(t, nil, "--communities", "../communities", "--fast-path", "off")
	if code, body := get(t, off.url+"/nemar"); code != 200 || !strings.Contains(body, `"id":"nemar"`) {
		t.Fatalf("--fast-path off: GET /nemar %d", code)
	}
	if n := metricValue(t, off.url, "assistant_http_fast_answers_total"); n != -1 {
		t.Errorf("--fast-path off still counts fast answers: %v", n)
	}
}
