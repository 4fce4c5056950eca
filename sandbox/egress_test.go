package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// No test in this package looks a name up on the network: names resolve from testHosts, and
// any other name fails. Every server a test talks to listens on 127.0.0.1.
func init() {
	resolveHost = func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, err := netip.ParseAddr(host); err == nil {
			return []netip.Addr{a}, nil
		}
		if a, ok := testHosts[host]; ok {
			return a, nil
		}
		return nil, fmt.Errorf("the test resolver knows no %q", host)
	}
}

var testHosts = map[string][]netip.Addr{
	"private.test":  {netip.MustParseAddr("10.1.2.3")},
	"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	"cgnat.test":    {netip.MustParseAddr("100.64.0.7")},
	"mapped.test":   {netip.MustParseAddr("::ffff:192.168.1.1")},
	"local.test":    {netip.MustParseAddr("127.0.0.1")},
	// A private address first: only the loopback one may be dialled.
	"mixed.test": {netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("127.0.0.1")},
}

// TestCheckURL runs the fetch_allow rule's vectors (web/testdata/fetch_allow.json), which the
// browser's checkUrl (web/static/lib.mjs) runs too, so both runtimes decide alike.
func TestCheckURL(t *testing.T) {
	var v struct {
		Cases []struct {
			Allow  []string `json:"allow"`
			Target string   `json:"target"`
			Want   string   `json:"want"` // the URL fetched, or "!reason"
		} `json:"cases"`
	}
	readVectors(t, "fetch_allow.json", &v)
	if len(v.Cases) < 50 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, tc := range v.Cases {
		u, reason := CheckURL(tc.Target, tc.Allow)
		got := "!" + reason
		if reason == "" {
			got = u.String()
		}
		if got != tc.Want {
			t.Errorf("CheckURL(%q, %q) = %q, want %q", tc.Target, tc.Allow, got, tc.Want)
		}
	}
}

// readVectors decodes one of the test vector files both runtimes' tests read (web/testdata).
func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "web", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestAddrAllowed(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
		want     bool
	}{
		{"93.184.216.34", false, true},
		{"2606:2800:220:1:248:1893:25c8:1946", false, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, true},
		{"127.9.9.9", false, false},
		{"::1", false, false},
		{"::1", true, true},
		{"10.0.0.1", true, false},
		{"172.16.5.4", true, false},
		{"192.168.1.1", true, false},
		{"169.254.169.254", true, false},
		{"100.64.0.1", false, false},
		{"0.0.0.0", true, false},
		{"::", true, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"fc00::1", false, false},
		{"fe80::1", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"::ffff:127.0.0.1", true, true},
		{"64:ff9b::a00:1", false, false},
		{"2002:a00:1::", false, false},
		{"198.18.0.1", false, false},
	} {
		if got := addrAllowed(netip.MustParseAddr(tc.addr), tc.loopback); got != tc.want {
			t.Errorf("addrAllowed(%s, loopback=%v) = %v, want %v", tc.addr, tc.loopback, got, tc.want)
		}
	}
}

// testServer serves the paths the fetch tests use, on 127.0.0.1 only.
func testServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/data/hello.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "secret"})
		fmt.Fprintf(w, "hello from %s %s", r.Method, r.URL.Path)
	})
	mux.HandleFunc("/data/echo", func(w http.ResponseWriter, r *http.Request) {
		b := new(strings.Builder)
		_, _ = fmt.Fprintf(b, "%s %s host=%v|", r.Method, r.Header.Get("X-Custom"), r.Host == "evil")
		_, _ = fmt.Fprintf(b, "cookie=%q auth=%q ua=%q|", r.Header.Get("Cookie"), r.Header.Get("Authorization"), r.UserAgent())
		buf := make([]byte, 100)
		n, _ := r.Body.Read(buf)
		b.Write(buf[:n])
		_, _ = w.Write([]byte(b.String()))
	})
	mux.HandleFunc("/data/missing", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", http.StatusNotFound) })
	mux.HandleFunc("/data/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/data/hello.txt", http.StatusFound)
	})
	mux.HandleFunc("/data/big", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
	})
	mux.HandleFunc("/data/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 50 {
			_, _ = w.Write([]byte(strings.Repeat("y", 100)))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/data/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) { t.Errorf("/secret was fetched") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", srv.URL)
	}
	return srv
}

// TestEgressFetch checks the host side of osa.fetch without the engine.
func TestEgressFetch(t *testing.T) {
	srv := testServer(t)
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	allow := []string{srv.URL + "/data", "http://local.test:" + port + "/data/", "http://mixed.test:" + port + "/data/",
		"http://10.0.0.1/", "http://private.test/", "http://metadata.test/", "http://cgnat.test/", "http://mapped.test/"}
	g := newEgress(allow, true, 2*time.Second, 1000)
	defer g.close()
	ctx := context.Background()

	resp, body, err := g.fetch(ctx, &fetchTally{}, fetchRequest{URL: srv.URL + "/data/hello.txt"}, nil)
	if err != nil || resp.Status != 200 || string(body) != "hello from GET /data/hello.txt" {
		t.Fatalf("allowed fetch: %+v %q %v", resp, body, err)
	}
	for _, h := range resp.Headers {
		if h[0] == "set-cookie" {
			t.Errorf("Set-Cookie reached the guest: %q", h)
		}
	}
	if !slicesContains(resp.Headers, [2]string{"x-test", "yes"}) {
		t.Errorf("headers %q lack x-test", resp.Headers)
	}

	_, body, err = g.fetch(ctx, &fetchTally{}, fetchRequest{URL: srv.URL + "/data/echo", Method: "post",
		Headers: [][2]string{{"X-Custom", "1"}, {"Cookie", "a=b"}, {"Host", "evil"}, {"Authorization", "Bearer t"}}}, []byte("payload"))
	if err != nil || string(body) != `POST 1 host=false|cookie="" auth="Bearer t" ua="`+fetchUserAgent+`"|payload` {
		t.Errorf("POST with headers: %q %v", body, err)
	}
	if _, body, err = g.fetch(ctx, &fetchTally{}, fetchRequest{URL: "http://local.test:" + port + "/data/hello.txt"}, nil); err != nil || !strings.HasPrefix(string(body), "hello") {
		t.Errorf("a name that resolves to loopback, loopback allowed: %q %v", body, err)
	}
	if _, body, err = g.fetch(ctx, &fetchTally{}, fetchRequest{URL: "http://mixed.test:" + port + "/data/hello.txt"}, nil); err != nil || !strings.HasPrefix(string(body), "hello") {
		t.Errorf("a name with a private and a loopback address: %q %v", body, err)
	}
	resp, _, err = g.fetch(ctx, &fetchTally{}, fetchRequest{URL: srv.URL + "/data/missing"}, nil)
	if err != nil || resp.Status != 404 {
		t.Errorf("404: %+v %v", resp, err)
	}

	refused := []struct{ url, method, reason string }{
		{srv.URL + "/secret", "", ReasonNotAllowed},
		{srv.URL + "/data/../secret", "", ReasonNotAllowed},
		{"https://example.com/", "", ReasonNotAllowed},
		{"file:///etc/passwd", "", ReasonScheme},
		{"http://u:p@127.0.0.1:" + port + "/data/x", "", ReasonCredentials},
		{srv.URL + "/data/redirect", "", ReasonRedirect},
		{srv.URL + "/data/big", "", ReasonTooLarge},
		{srv.URL + "/data/big-chunked", "", ReasonTooLarge},
		{srv.URL + "/data/hello.txt", "CONNECT", ReasonMethod},
		{srv.URL + "/data/hello.txt", "TRACE", ReasonMethod},
		{"http://10.0.0.1/x", "", ReasonPrivateAddress},
		{"http://private.test/x", "", ReasonPrivateAddress},
		{"http://metadata.test/latest/meta-data/", "", ReasonPrivateAddress},
		{"http://cgnat.test/", "", ReasonPrivateAddress},
		{"http://mapped.test/", "", ReasonPrivateAddress},
	}
	for _, tc := range refused {
		_, _, err := g.fetch(ctx, &fetchTally{}, fetchRequest{URL: tc.url, Method: tc.method}, nil)
		var r *refusal
		if !errors.As(err, &r) || r.Reason != tc.reason {
			t.Errorf("fetch %s %s: err = %v, want refusal %s", tc.method, tc.url, err, tc.reason)
		}
	}
	_, _, err = g.fetch(ctx, &fetchTally{}, fetchRequest{URL: "http://private.test/x"}, nil)
	if err == nil || err.Error() != "private_address: private.test resolves to 10.1.2.3, a private, loopback, link-local or reserved address" {
		t.Errorf("the refusal does not say where the name leads: %v", err)
	}

	// Without AllowLoopback the test server itself is out of reach, named or not.
	strict := newEgress(allow, false, 2*time.Second, 1000)
	defer strict.close()
	for _, u := range []string{srv.URL + "/data/hello.txt", "http://local.test:" + port + "/data/hello.txt"} {
		_, _, err := strict.fetch(ctx, &fetchTally{}, fetchRequest{URL: u}, nil)
		var r *refusal
		if !errors.As(err, &r) || r.Reason != ReasonPrivateAddress {
			t.Errorf("loopback not allowed, fetch %s: err = %v, want private_address", u, err)
		}
	}

	// A slow server is cut off at the fetch timeout; an ended run ends the fetch at once.
	quick := newEgress(allow, true, 300*time.Millisecond, 1000)
	defer quick.close()
	start := time.Now()
	_, _, err = quick.fetch(ctx, &fetchTally{}, fetchRequest{URL: srv.URL + "/data/slow"}, nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within") || time.Since(start) > 3*time.Second {
		t.Errorf("slow fetch: err = %v after %v", err, time.Since(start))
	}
	ended, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, _, err = g.fetch(ended, &fetchTally{}, fetchRequest{URL: srv.URL + "/data/slow"}, nil); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("fetch past the run's deadline: err = %v after %v", err, time.Since(start))
	}
}

func slicesContains(hs [][2]string, want [2]string) bool {
	for _, h := range hs {
		if h == want {
			return true
		}
	}
	return false
}

// TestWorkspaceVectors runs the workspace vectors (web/testdata/workspace.json), which the
// browser's Workspace (web/static/lib.mjs) runs too: the name rule with its words, and the caps.
func TestWorkspaceVectors(t *testing.T) {
	var v struct {
		Caps struct {
			Files     int   `json:"saved_files"`
			FileBytes int   `json:"saved_file_bytes"`
			RunBytes  int64 `json:"saved_bytes"`
			NameChars int   `json:"artifact_name_chars"`
		} `json:"caps"`
		Names []struct {
			Name    string `json:"name"`
			Times   int    `json:"times"`
			Problem string `json:"problem"`
		} `json:"names"`
		Saves []struct {
			Why   string `json:"why"`
			Steps []struct {
				Name  string `json:"name"`
				Bytes int    `json:"bytes"`
				Want  string `json:"want"`
			} `json:"steps"`
		} `json:"saves"`
	}
	readVectors(t, "workspace.json", &v)
	if v.Caps.Files != MaxSavedFiles || v.Caps.FileBytes != MaxSavedFileBytes || v.Caps.RunBytes != MaxSavedBytes || v.Caps.NameChars != maxSaveNameChars {
		t.Errorf("the vectors' caps %+v are not limits' (%d, %d, %d, %d)", v.Caps, MaxSavedFiles, MaxSavedFileBytes, MaxSavedBytes, maxSaveNameChars)
	}
	for _, tc := range v.Names {
		name := tc.Name
		if tc.Times > 0 {
			name = strings.Repeat(name, tc.Times)
		}
		if p := ArtifactNameProblem(name); p != tc.Problem {
			t.Errorf("ArtifactNameProblem(%.40q) = %q, want %q", name, p, tc.Problem)
		}
	}
	for _, seq := range v.Saves {
		var w workspace
		for i, st := range seq.Steps {
			got := ""
			if r := w.save(st.Name, make([]byte, st.Bytes)); r != nil {
				got = r.Reason
			}
			if got != st.Want {
				t.Errorf("%s: step %d, save(%q, %d bytes) = %q, want %q", seq.Why, i, st.Name, st.Bytes, got, st.Want)
			}
		}
	}
}
