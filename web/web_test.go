package web

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestAssets(t *testing.T) {
	want := []string{"app.js", "lib.mjs", "osa.py", "osa_runtime.py", "style.css", "worker.js"}
	if got := Names(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		a, ok := Lookup(n)
		if !ok || len(a.Data) == 0 || a.ContentType == "" || !strings.HasPrefix(a.ETag, `"`) {
			t.Errorf("Lookup(%q) = %+v, %v", n, a, ok)
		}
	}
	for _, n := range []string{"index.html", "static/app.js", "", "doc.go", "../web.go"} {
		if _, ok := Lookup(n); ok {
			t.Errorf("Lookup(%q) found an asset", n)
		}
	}
}

// The page's config is data: a hostile value cannot end the script element or run.
func TestRenderEscapes(t *testing.T) {
	var buf bytes.Buffer
	hostile := `</script><script>alert(1)</script>`
	if err := Render(&buf, Page{Title: hostile, Config: map[string]string{"community": hostile}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<script>alert") {
		t.Fatalf("unescaped:\n%s", out)
	}
	m := regexp.MustCompile(`<script id="demo-config" type="application/json">(.*?)</script>`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no config element:\n%s", out)
	}
	var cfg map[string]string
	if err := json.Unmarshal([]byte(m[1]), &cfg); err != nil || cfg["community"] != hostile {
		t.Errorf("config %q: %v %v", m[1], cfg, err)
	}
}

// Every script the page loads is an asset, so the page's CSP script-src 'self' covers it.
func TestPageLoadsOnlyAssets(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, Page{Title: "t", Config: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(buf.String(), -1) {
		if m[1] == "data:," {
			continue
		}
		if _, ok := Lookup(m[1]); !ok {
			t.Errorf("the page loads %q, which is not an asset", m[1])
		}
	}
	if strings.Contains(buf.String(), "style=") || strings.Contains(buf.String(), "onclick") {
		t.Error("inline style or handler: the CSP forbids them")
	}
}

// The page handles exactly the events the server sends (api.md §5; the EventName methods of
// chat/events.go), and no other.
func TestAppHandlesTheServersEvents(t *testing.T) {
	a, _ := Lookup("app.js")
	src := string(a.Data)
	start := strings.Index(src, "function handleEvent(")
	end := strings.Index(src[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("app.js has no handleEvent")
	}
	var got []string
	for _, m := range regexp.MustCompile(`case "([a-z_]+)":`).FindAllStringSubmatch(src[start:start+end], -1) {
		got = append(got, m[1])
	}
	sort.Strings(got)
	want := []string{"citation", "content", "done", "error", "session", "tool_call", "tool_end", "tool_request", "tool_start", "warning"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("handleEvent handles %v, want %v", got, want)
	}
}
