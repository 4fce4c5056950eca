package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

// TestCheckURL mirrors config.md §4.4 and the browser's checkUrl (web/static/lib.mjs).
func TestCheckURL(t *testing.T) {
	nemar := []string{"https://zarr.nemar.org/"}
	tests := []struct {
		target string
		allow  []string
		want   string // the URL fetched, or "!reason"
	}{
		// An origin with or without a trailing slash grants the whole origin.
		{"https://zarr.nemar.org/ds004504/zarr/index.json", []string{"https://zarr.nemar.org"}, "https://zarr.nemar.org/ds004504/zarr/index.json"},
		{"https://zarr.nemar.org/ds004504/zarr/index.json", nemar, "https://zarr.nemar.org/ds004504/zarr/index.json"},
		{"https://zarr.nemar.org", nemar, "https://zarr.nemar.org/"},
		{"https://zarr.nemar.org/", []string{"https://zarr.nemar.org"}, "https://zarr.nemar.org/"},
		// A path grants itself and what is below it, at a segment boundary.
		{"https://h/data", []string{"https://h/data"}, "https://h/data"},
		{"https://h/data/", []string{"https://h/data"}, "https://h/data/"},
		{"https://h/data/x/y.json", []string{"https://h/data"}, "https://h/data/x/y.json"},
		{"https://h/data/x", []string{"https://h/data/"}, "https://h/data/x"},
		{"https://h/data", []string{"https://h/data/"}, "https://h/data"},
		{"https://h/database", []string{"https://h/data"}, "!not_in_fetch_allow"},
		{"https://h/dat", []string{"https://h/data"}, "!not_in_fetch_allow"},
		{"https://h/", []string{"https://h/data"}, "!not_in_fetch_allow"},
		// The query is ignored when matching and kept when fetching; the fragment is dropped.
		{"https://h/data?x=/../secret", []string{"https://h/data"}, "https://h/data?x=/../secret"},
		{"https://h/data/a#frag", []string{"https://h/data?q=1"}, "https://h/data/a"},
		{"https://h/other?data", []string{"https://h/data"}, "!not_in_fetch_allow"},
		// Same origin: scheme, host and port.
		{"http://zarr.nemar.org/x", nemar, "!not_in_fetch_allow"},
		{"https://zarr.nemar.org:8443/x", nemar, "!not_in_fetch_allow"},
		{"https://zarr.nemar.org:443/x", nemar, "https://zarr.nemar.org/x"},
		{"https://zarr.nemar.org./x", nemar, "!not_in_fetch_allow"},
		{"https://evil.zarr.nemar.org/x", nemar, "!not_in_fetch_allow"},
		{"https://zarr.nemar.org.evil.com/x", nemar, "!not_in_fetch_allow"},
		{"HTTPS://ZARR.Nemar.ORG/x", nemar, "https://zarr.nemar.org/x"},
		{"http://h:80/a", []string{"http://h/"}, "http://h/a"},
		{"http://h:8080/a", []string{"http://h:8080"}, "http://h:8080/a"},
		{"http://h:8080/a", []string{"http://h"}, "!not_in_fetch_allow"},
		// Dot segments are resolved before matching, as a browser does, also when escaped.
		{"https://h/data/../secret", []string{"https://h/data"}, "!not_in_fetch_allow"},
		{"https://h/data/%2e%2e/secret", []string{"https://h/data"}, "!not_in_fetch_allow"},
		{"https://h/data/.%2E/secret", []string{"https://h/data"}, "!not_in_fetch_allow"},
		{"https://h/data/x/../y", []string{"https://h/data"}, "https://h/data/y"},
		{"https://h/data/./y", []string{"https://h/data"}, "https://h/data/y"},
		{"https://h/data/x/..", []string{"https://h/data"}, "https://h/data/"},
		{"https://h/../../data/y", []string{"https://h/data"}, "https://h/data/y"},
		{`https://h/data\..\secret`, []string{"https://h/data"}, "!not_in_fetch_allow"},
		{`https:\\h\data\y`, []string{"https://h/data"}, "https://h/data/y"},
		{"https:h/data/y", []string{"https://h/data"}, "https://h/data/y"},
		{" https://h/data/y\n", []string{"https://h/data"}, "https://h/data/y"},
		{"https://h/da\tta/y", []string{"https://h/data"}, "https://h/data/y"},
		// An encoded slash is not a segment boundary.
		{"https://h/data%2Fx", []string{"https://h/data"}, "!not_in_fetch_allow"},
		// IP hosts in the notations browsers accept are one address.
		{"http://0x7f.1:8080/a", []string{"http://127.0.0.1:8080/"}, "http://127.0.0.1:8080/a"},
		{"http://2130706433/a", []string{"http://127.0.0.1"}, "http://127.0.0.1/a"},
		{"http://[0:0::1]/a", []string{"http://[::1]/"}, "http://[::1]/a"},
		{"http://1.2.3.256/a", []string{"http://1.2.3.256/"}, "!unparseable"},
		// Refusals and their reasons.
		{"", nemar, "!unparseable"},
		{"/relative/path", nemar, "!unparseable"},
		{"zarr.nemar.org/x", nemar, "!unparseable"},
		{"https://", nemar, "!unparseable"},
		{"https://h:99999/", []string{"https://h/"}, "!unparseable"},
		{"ftp://zarr.nemar.org/x", nemar, "!scheme_not_allowed"},
		{"file:///etc/passwd", []string{"file:///etc/"}, "!scheme_not_allowed"},
		{"javascript:alert(1)", nemar, "!scheme_not_allowed"},
		{"data:text/plain,hi", nemar, "!scheme_not_allowed"},
		{"https://user:pw@zarr.nemar.org/x", nemar, "!credentials_in_url"},
		{"https://user@zarr.nemar.org/x", nemar, "!credentials_in_url"},
		{"https://:pw@zarr.nemar.org/x", nemar, "!credentials_in_url"},
		{"https://@zarr.nemar.org/x", nemar, "https://zarr.nemar.org/x"},
		{"https://zarr.nemar.org/x", nil, "!not_in_fetch_allow"},
		// Entries that cannot grant anything are skipped, never errors.
		{"https://h/data/x", []string{"", "not a url", "/data", "ftp://h/data", "https://u:p@h/data", "https://h/data/../", "https://h/data"}, "https://h/data/x"},
		{"https://h/x", []string{"https://h/data/.."}, "!not_in_fetch_allow"},
		{"https://h/data/x", []string{"https://h/%2E/data"}, "!not_in_fetch_allow"},
		{"https://h/x", []string{"https://h/./"}, "!not_in_fetch_allow"},
	}
	for _, tc := range tests {
		u, reason := CheckURL(tc.target, tc.allow)
		got := "!" + reason
		if reason == "" {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("CheckURL(%q, %q) = %q, want %q", tc.target, tc.allow, got, tc.want)
		}
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

	resp, body, err := g.fetch(ctx, fetchRequest{URL: srv.URL + "/data/hello.txt"}, nil)
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

	_, body, err = g.fetch(ctx, fetchRequest{URL: srv.URL + "/data/echo", Method: "post",
		Headers: [][2]string{{"X-Custom", "1"}, {"Cookie", "a=b"}, {"Host", "evil"}, {"Authorization", "Bearer t"}}}, []byte("payload"))
	if err != nil || string(body) != `POST 1 host=false|cookie="" auth="Bearer t" ua="`+fetchUserAgent+`"|payload` {
		t.Errorf("POST with headers: %q %v", body, err)
	}
	if _, body, err = g.fetch(ctx, fetchRequest{URL: "http://local.test:" + port + "/data/hello.txt"}, nil); err != nil || !strings.HasPrefix(string(body), "hello") {
		t.Errorf("a name that resolves to loopback, loopback allowed: %q %v", body, err)
	}
	if _, body, err = g.fetch(ctx, fetchRequest{URL: "http://mixed.test:" + port + "/data/hello.txt"}, nil); err != nil || !strings.HasPrefix(string(body), "hello") {
		t.Errorf("a name with a private and a loopback address: %q %v", body, err)
	}
	resp, _, err = g.fetch(ctx, fetchRequest{URL: srv.URL + "/data/missing"}, nil)
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
		_, _, err := g.fetch(ctx, fetchRequest{URL: tc.url, Method: tc.method}, nil)
		var r *refusal
		if !errors.As(err, &r) || r.Reason != tc.reason {
			t.Errorf("fetch %s %s: err = %v, want refusal %s", tc.method, tc.url, err, tc.reason)
		}
	}
	_, _, err = g.fetch(ctx, fetchRequest{URL: "http://private.test/x"}, nil)
	if err == nil || err.Error() != "private_address: private.test resolves to 10.1.2.3, a private, loopback, link-local or reserved address" {
		t.Errorf("the refusal does not say where the name leads: %v", err)
	}

	// Without AllowLoopback the test server itself is out of reach, named or not.
	strict := newEgress(allow, false, 2*time.Second, 1000)
	defer strict.close()
	for _, u := range []string{srv.URL + "/data/hello.txt", "http://local.test:" + port + "/data/hello.txt"} {
		_, _, err := strict.fetch(ctx, fetchRequest{URL: u}, nil)
		var r *refusal
		if !errors.As(err, &r) || r.Reason != ReasonPrivateAddress {
			t.Errorf("loopback not allowed, fetch %s: err = %v, want private_address", u, err)
		}
	}

	// A slow server is cut off at the fetch timeout; an ended run ends the fetch at once.
	quick := newEgress(allow, true, 300*time.Millisecond, 1000)
	defer quick.close()
	start := time.Now()
	_, _, err = quick.fetch(ctx, fetchRequest{URL: srv.URL + "/data/slow"}, nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within") || time.Since(start) > 3*time.Second {
		t.Errorf("slow fetch: err = %v after %v", err, time.Since(start))
	}
	ended, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, _, err = g.fetch(ended, fetchRequest{URL: srv.URL + "/data/slow"}, nil); err == nil || time.Since(start) > 2*time.Second {
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

func TestArtifactNameProblem(t *testing.T) {
	for _, ok := range []string{"a", "out.csv", "figures/plot-1.png", "a/b/c_d.e.f", ".hidden", "x..y"} {
		if p := ArtifactNameProblem(ok); p != "" {
			t.Errorf("ArtifactNameProblem(%q) = %q, want none", ok, p)
		}
	}
	for _, bad := range []string{"", "/abs", "../x", "a/../b", "./a", "a/./b", "a//b", "a/", "a b", `a\b`, "naïve.txt", "a:b", "x\x00", strings.Repeat("a", 513)} {
		if p := ArtifactNameProblem(bad); p == "" {
			t.Errorf("ArtifactNameProblem(%q) = none, want a problem", bad)
		}
	}
}

func TestWorkspaceCaps(t *testing.T) {
	var w workspace
	if r := w.save("a", make([]byte, MaxSavedFileBytes+1)); r == nil || r.Reason != ReasonTooLarge {
		t.Errorf("over 10 MB: %v", r)
	}
	for i := range MaxSavedFiles {
		if r := w.save(fmt.Sprintf("f%d", i), []byte("x")); r != nil {
			t.Fatalf("file %d: %v", i, r)
		}
	}
	if r := w.save("one-more", nil); r == nil || r.Reason != ReasonTooManyFiles {
		t.Errorf("33rd file: %v", r)
	}
	if r := w.save("f0", []byte("replaced")); r != nil || string(w.files["f0"]) != "replaced" {
		t.Errorf("replacing a file: %v", r)
	}
	w = workspace{}
	for i := range 2 {
		if r := w.save(fmt.Sprintf("big%d", i), make([]byte, 10<<20)); r != nil {
			t.Fatalf("big file %d: %v", i, r)
		}
	}
	if r := w.save("big2", make([]byte, 6<<20)); r == nil || r.Reason != ReasonWorkspaceFull {
		t.Errorf("past 25 MB: %v", r)
	}
	if r := w.save("big1", make([]byte, 4<<20)); r != nil || w.total != 14<<20 {
		t.Errorf("shrinking a file: %v, total %d", r, w.total)
	}
}
