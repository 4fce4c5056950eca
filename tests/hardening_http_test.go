package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requestSeries reads the label sets of assistant_http_requests_total from GET /metrics, with
// their counts.
func requestSeries(t *testing.T, url string) map[string]float64 {
	t.Helper()
	_, body := get(t, url+"/metrics")
	out := map[string]float64{}
	for line := range strings.Lines(body) {
		rest, ok := strings.CutPrefix(line, "assistant_http_requests_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimSpace(rest), "} ")
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[labels] = f
	}
	return out
}

// TestMetricsLabelsBounded (issue 22, item 10): requests with invented methods, invented
// community ids and paths no route serves add no series to /metrics, on the fast path and
// without it: unknown methods count as method "other", paths of no route as route
// "unmatched", and a community path under its route template.
func TestMetricsLabelsBounded(t *testing.T) {
	for _, fast := range []string{"on", "off"} {
		t.Run("fast path "+fast, func(t *testing.T) {
			p := serve(t, nil, "--communities", "../communities", "--fast-path", fast)
			client := &http.Client{Timeout: 30 * time.Second}
			do := func(method, path string) {
				t.Helper()
				req, err := http.NewRequest(method, p.url+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode >= 500 {
					t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
				}
			}
			round := func(i int) {
				do(fmt.Sprintf("INVENTED%d", i), "/nemar")                   // 405
				do(fmt.Sprintf("INVENTED%d", i), fmt.Sprintf("/x%d/y/z", i)) // 404, no route
				do(http.MethodGet, fmt.Sprintf("/invented-%d", i))           // 404 under /:c
				do(http.MethodGet, fmt.Sprintf("/invented-%d/logo", i))      // 404 under /:c/logo
				do(http.MethodGet, "/nemar")                                 // 200 (the fast path's, when on)
			}
			round(0)
			before := requestSeries(t, p.url)
			const rounds = 300
			for i := 1; i <= rounds; i++ {
				round(i)
			}
			after := requestSeries(t, p.url)
			var invented, added []string
			for labels := range after {
				if strings.Contains(strings.ToLower(labels), "invented") {
					invented = append(invented, labels)
				}
				if _, ok := before[labels]; !ok && !strings.Contains(labels, `route="/metrics"`) {
					added = append(added, labels)
				}
			}
			if len(invented) > 0 || len(added) > 0 {
				slices.Sort(invented)
				slices.Sort(added)
				t.Errorf("%d more rounds: %d series (%d before); %d with a label value the client invented (%q …), %d new (%q …)",
					rounds, len(after), len(before), len(invented), invented[:min(3, len(invented))], len(added), added[:min(3, len(added))])
			}
			for _, want := range []string{
				`method="other",route="/:c",status="405"`,
				`method="other",route="unmatched",status="404"`,
				`method="GET",route="/:c",status="404"`,
				`method="GET",route="/:c/logo",status="404"`,
			} {
				if got := after[want]; got != rounds+1 {
					t.Errorf("{%s} = %v, want %d", want, got, rounds+1)
				}
			}
		})
	}
}

// logFormat is a --log-format and how to read one line of it.
type logFormat struct {
	name string
	// record parses one line as a record, returning its "duration" attribute's text ("" when
	// absent), or fails.
	record func(line string) (msg, duration string, err error)
}

// textRecord is the start of a record of slog's text handler.
var textRecord = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=("(?:[^"\\]|\\.)*"|\S+)`)

var logFormats = []logFormat{
	{"json", func(line string) (string, string, error) {
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		var r map[string]any
		if err := d.Decode(&r); err != nil {
			return "", "", err
		}
		if _, ok := r["time"].(string); !ok {
			return "", "", errors.New("no time")
		}
		if _, ok := r["level"].(string); !ok {
			return "", "", errors.New("no level")
		}
		msg, _ := r["msg"].(string)
		switch v := r["duration"].(type) {
		case nil:
			return msg, "", nil
		case json.Number:
			return msg, v.String(), nil
		default:
			return msg, "", fmt.Errorf("duration %v is not a number", v)
		}
	}},
	{"text", func(line string) (string, string, error) {
		m := textRecord.FindStringSubmatch(line)
		if m == nil {
			return "", "", errors.New("not a record of slog's text handler")
		}
		msg := m[2]
		if u, err := strconv.Unquote(msg); err == nil {
			msg = u
		}
		_, rest, ok := strings.Cut(line, " duration=")
		if !ok {
			return msg, "", nil
		}
		d, _, _ := strings.Cut(rest, " ")
		return msg, d, nil
	}},
}

// checkRecords fails unless every line of stderr is a record of the format, and every
// duration is float seconds. It returns the records' messages.
func checkRecords(t *testing.T, f logFormat, stderr string) []string {
	t.Helper()
	var msgs []string
	for line := range strings.Lines(stderr) {
		line = strings.TrimSuffix(line, "\n")
		msg, d, err := f.record(line)
		if err != nil {
			t.Errorf("not a %s record (%v): %s", f.name, err, line)
			continue
		}
		msgs = append(msgs, msg)
		if d == "" {
			continue
		}
		secs, err := strconv.ParseFloat(d, 64)
		if err != nil || !strings.ContainsAny(d, ".e") || secs < 0 || secs > 60 {
			t.Errorf("duration %s is not float seconds: %s", d, line)
		}
	}
	return msgs
}

// stoppableRedis starts a redis-server of the test's own on a free port, so the test can stop
// it; it is skipped without redis-server (failed under CI=true).
func stoppableRedis(t *testing.T) (addr string, proc *os.Process) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed under CI=true")
		}
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitFor(t, "redis-server", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr, cmd.Process
}

func contains(msgs []string, msg string) bool {
	for _, m := range msgs {
		if m == msg {
			return true
		}
	}
	return false
}

// TestLogsAreOneFormat (issue 22, item 17): with --log-format json (or text) every line the
// server writes to stderr is a record of that format, go-redis's own lines included, and
// durations are float seconds: when Redis cannot be reached at start, when Redis goes away
// while serving, and through requests (the fast path's and net/http's), a reload and a stop.
func TestLogsAreOneFormat(t *testing.T) {
	for _, f := range logFormats {
		t.Run(f.name+": Redis unreachable at start", func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			dead := ln.Addr().String()
			ln.Close() // nothing listens there now
			cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--communities", "../communities",
				"--log-format", f.name, "--redis-url", "redis://"+dead+"/0")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			var exit *exec.ExitError
			if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1; stderr:\n%s", err, &stderr)
			}
			msgs := checkRecords(t, f, stderr.String())
			if !contains(msgs, "redis client") || !contains(msgs, "not starting") {
				t.Errorf("want go-redis's lines and the refusal to start as records; stderr:\n%s", &stderr)
			}
		})
		t.Run(f.name+": serving", func(t *testing.T) {
			addr, redis := stoppableRedis(t)
			p := serve(t, nil, "--communities", "../communities", "--log-format", f.name,
				"--redis-url", "redis://"+addr+"/0?dial_timeout=200ms", "--rate-limits", "chat_minute=0,chat_hour=0")
			for _, path := range []string{"/nemar", "/health", "/no/such/route"} {
				get(t, p.url+path)
			}
			chat := func() int {
				resp, err := http.Post(p.url+"/nemar/chat", "application/json", strings.NewReader(`{"message":"hi","stream":false}`))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			if code := chat(); code != 200 {
				t.Fatalf("chat with Redis up: %d", code)
			}
			// Redis goes away: the pool's dial failures are logged while serving.
			if err := redis.Kill(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "go-redis to log its dial failure", func() bool {
				chat()
				return strings.Contains(p.stderr.String(), "failed to dial")
			})
			before := p.stderr.Len()
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the reload", func() bool { return strings.Contains(p.stderr.String()[before:], "reloaded communities") })
			p.stop(t)
			msgs := checkRecords(t, f, p.stderr.String())
			for _, want := range []string{"serving", "request", "redis client", "reloaded communities", "stopped"} {
				if !contains(msgs, want) {
					t.Errorf("no %q record; stderr:\n%s", want, p.stderr)
				}
			}
			// The start line on stdout is in the logs' format too: stdout and stderr are often
			// one stream.
			if f.name == "json" {
				checkRecords(t, f, p.stdout.String())
				if !strings.Contains(p.stdout.String(), `"msg":"serving","url":"`+p.url+`/"`) {
					t.Errorf("stdout lost the start record: %q", p.stdout)
				}
			} else if !strings.Contains(p.stdout.String(), "serving on "+p.url) {
				t.Errorf("stdout lost the start line: %q", p.stdout)
			}
		})
		t.Run(f.name+": sandbox workers", func(t *testing.T) {
			// The worker processes write to the server's stderr: in its format too.
			p := serve(t, nil, "--communities", "../communities", "--log-format", f.name,
				"--engine-dir", engineDir(t), "--sandbox-workers", "1")
			p.stop(t)
			checkRecords(t, f, p.stderr.String())
			// The worker's own record of its engine, which carries its pid.
			own := map[string]string{"json": `"msg":"python engine loaded","worker":`, "text": `msg="python engine loaded" worker=`}[f.name]
			if !strings.Contains(p.stderr.String(), own) {
				t.Errorf("no record of the worker's own (%s); stderr:\n%s", own, p.stderr)
			}
		})
	}
}

// headerTimeout is the binary's ReadHeaderTimeout: a malformed head answered within half of it
// was answered at once, not when the timeout handed it over.
const headerTimeout = 10 * time.Second

// sendRaw writes in on a new connection to addr (after first, a request whose answer it reads
// and drops), half closes it with halfClose, and returns what the server sends until it
// closes the connection, failing if nothing ends it within half the header timeout.
func sendRaw(t *testing.T, addr, first, in string, halfClose bool) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(headerTimeout / 2))
	br := bufio.NewReader(nc)
	if first != "" {
		if _, err := io.WriteString(nc, first); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if _, err := io.WriteString(nc, in); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(br)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%q: no answer within %v (the header timeout is %v); got %q", in, headerTimeout/2, headerTimeout, b)
	}
	return string(b)
}

// TestFastPathAnswersMalformedHeadsAtOnce (issue 22, item 18): a head net/http answers at once
// — HTTP/0.9's request line, a broken header line, a head cut short by a half close — gets
// the same bytes, as soon, with the fast path on as with it off, on a new connection and after
// a fast answer.
func TestFastPathAnswersMalformedHeadsAtOnce(t *testing.T) {
	on := serve(t, nil, "--communities", "../communities")
	off := serve(t, nil, "--communities", "../communities", "--fast-path", "off")
	const getNemar = "GET /nemar HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		in        string
		halfClose bool
	}{
		{"GET /nemar\r\n", false},
		{"GET /nemar HTTP/1.1\r\nHost x\r\n", false},
		{"GET nemar HTTP/1.1\r\n", false},
		{"GET /nemar HTTP/1.1\r\nHost: x\r\n", true},
		{"GET /nemar HTTP/1.1\r\nHo", true},
	} {
		for _, first := range []string{"", getNemar} {
			name := strconv.Quote(tc.in)
			if tc.halfClose {
				name += " half closed"
			}
			if first != "" {
				name += " after GET /nemar"
			}
			t.Run(name, func(t *testing.T) {
				want := sendRaw(t, strings.TrimPrefix(off.url, "http://"), first, tc.in, tc.halfClose)
				if !strings.HasPrefix(want, "HTTP/1.1 400 ") {
					t.Fatalf("net/http alone sends %q, want its 400", want)
				}
				if got := sendRaw(t, strings.TrimPrefix(on.url, "http://"), first, tc.in, tc.halfClose); got != want {
					t.Errorf("the fast path sends %q, net/http alone %q", got, want)
				}
			})
		}
	}
}
