package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The reasons osa.fetch gives when it refuses a URL. The first four are the browser's
// (config.md §4.4, frontend/osa-egress.js); the others are the server's own, because the server
// fetches from its own network rather than from the reader's.
const (
	ReasonUnparseable    = "unparseable"
	ReasonScheme         = "scheme_not_allowed"
	ReasonCredentials    = "credentials_in_url"
	ReasonNotAllowed     = "not_in_fetch_allow"
	ReasonRedirect       = "redirect_refused"
	ReasonPrivateAddress = "private_address"
	ReasonTooLarge       = "too_large"
	ReasonMethod         = "method_not_allowed"
	ReasonTooMany        = "too_many_fetches"
)

// Defaults for a Request's zero fetch fields.
const (
	// DefaultFetchTimeout bounds one osa.fetch, connection and body included. A fetch never
	// outlives the run's own deadline either.
	DefaultFetchTimeout = 30 * time.Second
	// DefaultFetchMaxBytes caps one response body (after any Content-Encoding is undone).
	DefaultFetchMaxBytes = 10 << 20
)

// Fixed caps on what one run may send through osa.fetch.
const (
	maxFetchesPerRun   = 500
	maxFetchedPerRun   = 256 << 20 // response bytes, all fetches together
	maxFetchBodyBytes  = 10 << 20  // request body
	maxFetchHeaders    = 64
	maxFetchHeaderSize = 8 << 10 // one request header's name plus value
	maxResponseHeaders = 256 << 10
	fetchUserAgent     = "osa-assistant-sandbox/1 (server-side Python run)"
)

// fetchMethods are the methods osa.fetch may use. The browser refuses CONNECT, TRACE and
// TRACK; the server also refuses anything that is not an ordinary method.
var fetchMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// CheckURL decides whether executed code may fetch target under fetchAllow, exactly as the
// browser runtime does (config.md §4.4; checkUrl in web/static/lib.mjs, and the cases both run
// in web/testdata/fetch_allow.json): target must parse as an absolute URL, use http or
// https and carry no username or password, and some entry E must have the same origin
// (scheme, host and port) with target's path, "/" appended if missing, starting with E's path,
// "/" appended if missing. The query is ignored. Entries that do not parse as absolute http(s)
// URLs, that carry credentials, or that have a "." or ".." path segment are skipped.
//
// URLs are read the way a browser reads them (the WHATWG URL standard) where it matters for
// the decision: surrounding spaces and tabs or newlines inside are dropped, "\" is a "/",
// the scheme and host are case-insensitive, a default port is the same as none, IPv4 hosts
// in any notation browsers accept ("0x7f.1") are the same address, and "." and ".." path
// segments (also percent-encoded) are resolved before the path is compared.
//
// It returns the URL to fetch (normalised that way, without its fragment) and "", or nil and
// the reason for refusing.
func CheckURL(target string, fetchAllow []string) (*url.URL, string) {
	u, reason := parseWebURL(target)
	if reason != "" {
		return nil, reason
	}
	if u.User != nil {
		return nil, ReasonCredentials
	}
	path := withSlash(u.EscapedPath())
	for _, entry := range fetchAllow {
		if hasDotSegment(entry) {
			continue
		}
		e, reason := parseWebURL(entry)
		if reason != "" || e.User != nil || e.Scheme != u.Scheme || e.Host != u.Host {
			continue
		}
		if strings.HasPrefix(path, withSlash(e.EscapedPath())) {
			return u, ""
		}
	}
	return nil, ReasonNotAllowed
}

func withSlash(p string) string {
	if strings.HasSuffix(p, "/") {
		return p
	}
	return p + "/"
}

var (
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.\-]*:`)
	dotSegmentRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.\-]*://[^/?#]*([^?#]*)`)
)

// hasDotSegment reports whether an entry as written has a "." or ".." path segment, also
// percent-encoded, before a URL parser would silently resolve it (the browser's rule).
func hasDotSegment(raw string) bool {
	m := dotSegmentRE.FindStringSubmatch(raw)
	if m == nil {
		return false
	}
	for seg := range strings.SplitSeq(m[1], "/") {
		s := strings.ReplaceAll(strings.ToLower(seg), "%2e", ".")
		if s == "." || s == ".." {
			return true
		}
	}
	return false
}

// parseWebURL parses raw as an absolute http or https URL the way a browser would, and
// returns it normalised: lower-case scheme and host, canonical IP hosts, no default port,
// dot segments resolved, an empty path as "/", no fragment. User information is kept so the
// caller can refuse it. The reason is ReasonUnparseable or ReasonScheme.
func parseWebURL(raw string) (*url.URL, string) {
	// WHATWG: strip leading and trailing C0 controls and spaces; drop tabs and newlines.
	raw = strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	raw = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(raw)
	m := schemeRE.FindString(raw)
	if m == "" {
		return nil, ReasonUnparseable // no base URL to resolve a relative one against
	}
	scheme := strings.ToLower(m[:len(m)-1])
	if scheme != "http" && scheme != "https" {
		return nil, ReasonScheme
	}
	rest := raw[len(m):]
	// In http(s) URLs a "\" before the query is a "/", and any run of slashes after the
	// scheme introduces the host.
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	rest = strings.ReplaceAll(rest[:end], `\`, "/") + rest[end:]
	rest = strings.TrimLeft(rest, "/")
	u, err := url.Parse(scheme + "://" + rest)
	if err != nil || u.Opaque != "" {
		return nil, ReasonUnparseable
	}
	host, ok := canonicalHost(u.Hostname())
	if !ok {
		return nil, ReasonUnparseable
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 32)
		if err != nil || n > 65535 {
			return nil, ReasonUnparseable
		}
		port = strconv.FormatUint(n, 10)
		if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
			port = ""
		}
	} else if strings.HasSuffix(u.Host, ":") {
		port = "" // "https://h:/" is https://h/
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	p := removeDotSegments(u.EscapedPath())
	path, err := url.PathUnescape(p)
	if err != nil {
		return nil, ReasonUnparseable
	}
	user := u.User
	if pw, _ := user.Password(); user != nil && user.Username() == "" && pw == "" {
		user = nil // "https://@h/" and "https://:@h/" carry no credentials
	}
	return &url.URL{Scheme: scheme, User: user, Host: host, Path: path, RawPath: p, RawQuery: u.RawQuery}, ""
}

// canonicalHost lower-cases a host name and writes IP addresses the one way browsers do.
func canonicalHost(h string) (string, bool) {
	if strings.Contains(h, ":") { // an IPv6 literal; Hostname removed the brackets
		a, err := netip.ParseAddr(h)
		if err != nil || a.Zone() != "" || !a.Is6() {
			return "", false
		}
		return a.String(), true
	}
	if h == "" || strings.ContainsAny(h, " #%/<>?@[\\]^|") {
		return "", false
	}
	h = strings.ToLower(h)
	if endsInNumber(h) {
		a, ok := parseWebIPv4(h)
		if !ok {
			return "", false
		}
		return a.String(), true
	}
	return h, true
}

// endsInNumber is the WHATWG "ends in a number" check: a host whose last label (ignoring one
// trailing dot) is decimal digits or 0x-hex must be an IPv4 address.
func endsInNumber(h string) bool {
	labels := strings.Split(h, ".")
	if labels[len(labels)-1] == "" {
		if len(labels) == 1 {
			return false
		}
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		return strings.Trim(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return false
}

// parseWebIPv4 is the WHATWG IPv4 parser: one to four parts, each decimal, 0x-hex or
// 0-octal, the last filling the remaining bytes.
func parseWebIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(strings.TrimSuffix(h, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case p == "":
			return netip.Addr{}, false
		case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) >= 2 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" {
			nums[i] = 0
			continue
		}
		n, err := strconv.ParseUint(p, base, 64)
		if err != nil || n > 1<<32-1 {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// removeDotSegments resolves "." and ".." segments (also as %2e) in an escaped path the
// way the WHATWG path parser does: ".." never climbs above the root, and a trailing "." or
// ".." leaves a trailing slash.
func removeDotSegments(p string) string {
	if p == "" {
		return "/"
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch strings.ReplaceAll(strings.ToLower(s), "%2e", ".") {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// forbiddenHeaders are request headers osa.fetch drops, as a browser's fetch does: the
// transport sets them itself, or they would let the code speak for someone else.
var forbiddenHeaders = map[string]bool{
	"accept-charset": true, "accept-encoding": true, "access-control-request-headers": true,
	"access-control-request-method": true, "connection": true, "content-length": true,
	"cookie": true, "cookie2": true, "date": true, "dnt": true, "expect": true, "host": true,
	"keep-alive": true, "origin": true, "referer": true, "set-cookie": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true, "user-agent": true, "via": true,
	"x-forwarded-for": true, "x-forwarded-host": true, "x-forwarded-proto": true, "forwarded": true,
	"x-http-method": true, "x-http-method-override": true, "x-method-override": true,
}

func forbiddenHeader(name string) bool {
	n := strings.ToLower(name)
	return forbiddenHeaders[n] || strings.HasPrefix(n, "proxy-") || strings.HasPrefix(n, "sec-")
}

// refusal is a fetch the policy refused; Reason is one of the Reason constants.
type refusal struct {
	Reason string
	Detail string
}

func (r *refusal) Error() string { return r.Reason + ": " + r.Detail }

// blockedPrefixes are the address ranges a fetch may never reach besides the ones netip
// classifies (loopback, private, link-local, multicast, unspecified): shared address space,
// IETF protocol assignments, benchmarking, documentation, reserved and broadcast, and the
// IPv6 translation and tunnelling prefixes that embed an IPv4 address.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/32", "2001:db8::/32", "2002::/16",
		"3fff::/20", "5f00::/16", "::/96",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// addrAllowed reports whether a fetch may connect to a.
func addrAllowed(a netip.Addr, allowLoopback bool) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return allowLoopback
	}
	if !a.IsValid() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// resolveHost looks a host name up; an IP literal resolves to itself. Tests replace it so
// that no name is ever looked up on the network.
var resolveHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// egress performs fetches under the community's fetch_allow: one run's, or every run of a live
// session's interpreter (its connections are reused); what a run may fetch is counted per run,
// in the run's fetchTally.
type egress struct {
	allow         []string
	allowLoopback bool
	maxBytes      int64
	timeout       time.Duration
	client        *http.Client
	transport     *http.Transport
}

// fetchTally is what one run fetched: each run of a live session starts from zero, as each run
// in the browser does, so an earlier run's fetches never count against a later one.
type fetchTally struct {
	fetches int
	bytes   int64 // response bytes so far
}

func newEgress(allow []string, allowLoopback bool, timeout time.Duration, maxBytes int64) *egress {
	g := &egress{allow: allow, allowLoopback: allowLoopback, timeout: timeout, maxBytes: maxBytes}
	g.transport = &http.Transport{
		Proxy:                  nil, // never the host's proxy settings
		DialContext:            g.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeaders,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        10 * time.Second,
	}
	g.client = &http.Client{
		Transport: g.transport,
		// A redirect is answered as it came, so it can be refused with its reason.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return g
}

// close drops the run's idle connections.
func (g *egress) close() { g.transport.CloseIdleConnections() }

// dial resolves the host itself and connects only to addresses the policy allows, so a name
// that resolves to a private address is refused before any connection is tried. The dialer's
// Control hook checks the address again at connect time.
func (g *egress) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := resolveHost(ctx, host)
	if err != nil {
		return nil, err
	}
	var ok []netip.Addr
	for _, a := range addrs {
		if addrAllowed(a, g.allowLoopback) {
			ok = append(ok, a)
		}
	}
	if len(ok) == 0 {
		what := host + " is"
		if len(addrs) > 0 && addrs[0].String() != host {
			what = fmt.Sprintf("%s resolves to %s,", host, addrs[0].Unmap())
		}
		return nil, &refusal{ReasonPrivateAddress, what + " a private, loopback, link-local or reserved address"}
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	var errs []error
	for _, a := range ok {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (g *egress) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !addrAllowed(ap.Addr(), g.allowLoopback) {
		return &refusal{ReasonPrivateAddress, fmt.Sprintf("%s is a private, loopback, link-local or reserved address", address)}
	}
	return nil
}

// fetchRequest is what the guest asks for.
type fetchRequest struct {
	URL     string      `json:"url"`
	Method  string      `json:"method"`
	Headers [][2]string `json:"headers"`
}

// fetchResponse is what the guest gets back; the body travels beside it.
type fetchResponse struct {
	Status  int         `json:"status"`
	URL     string      `json:"url"`
	Headers [][2]string `json:"headers"`
}

// fetch performs one request for the guest, counted in the run's tally. It returns a *refusal
// when the policy says no, and another error when the request failed.
func (g *egress) fetch(ctx context.Context, tally *fetchTally, req fetchRequest, body []byte) (fetchResponse, []byte, error) {
	u, reason := CheckURL(req.URL, g.allow)
	if reason != "" {
		return fetchResponse{}, nil, &refusal{reason, g.allowedText()}
	}
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = http.MethodGet
	}
	if !fetchMethods[method] {
		return fetchResponse{}, nil, &refusal{ReasonMethod, fmt.Sprintf("the method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS", req.Method)}
	}
	if len(body) > maxFetchBodyBytes {
		return fetchResponse{}, nil, &refusal{ReasonTooLarge, fmt.Sprintf("the request body is %d bytes, over the %d-byte cap", len(body), maxFetchBodyBytes)}
	}
	if len(req.Headers) > maxFetchHeaders {
		return fetchResponse{}, nil, fmt.Errorf("%d request headers, over the cap of %d", len(req.Headers), maxFetchHeaders)
	}
	tally.fetches++
	if tally.fetches > maxFetchesPerRun || tally.bytes >= maxFetchedPerRun {
		return fetchResponse{}, nil, &refusal{ReasonTooMany, fmt.Sprintf("one run may fetch at most %d times and %d MB in all", maxFetchesPerRun, maxFetchedPerRun>>20)}
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	var rb io.Reader
	if body != nil {
		rb = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, u.String(), rb)
	if err != nil {
		return fetchResponse{}, nil, &refusal{ReasonUnparseable, err.Error()}
	}
	hr.Header.Set("User-Agent", fetchUserAgent)
	for _, kv := range req.Headers {
		name, value := kv[0], kv[1]
		if len(name)+len(value) > maxFetchHeaderSize {
			return fetchResponse{}, nil, fmt.Errorf("the request header %.40q is over %d bytes", name, maxFetchHeaderSize)
		}
		if forbiddenHeader(name) {
			continue
		}
		if !validHeaderName(name) || strings.ContainsAny(value, "\r\n\x00") {
			return fetchResponse{}, nil, fmt.Errorf("the request header %.40q is not a valid header", name)
		}
		hr.Header.Add(name, value)
	}
	resp, err := g.client.Do(hr)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return fetchResponse{}, nil, r
		}
		return fetchResponse{}, nil, g.failure(ctx, err)
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" && isRedirect(resp.StatusCode) {
		return fetchResponse{}, nil, &refusal{ReasonRedirect, fmt.Sprintf("the server answered %d with a redirect to %.200s; redirects are not followed", resp.StatusCode, loc)}
	}
	if resp.ContentLength > g.maxBytes {
		return fetchResponse{}, nil, &refusal{ReasonTooLarge, fmt.Sprintf("the body is %d bytes, over the %d-byte cap", resp.ContentLength, g.maxBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, g.maxBytes+1))
	tally.bytes += int64(len(data))
	if err != nil {
		return fetchResponse{}, nil, g.failure(ctx, err)
	}
	if int64(len(data)) > g.maxBytes {
		return fetchResponse{}, nil, &refusal{ReasonTooLarge, fmt.Sprintf("the body is over the %d-byte cap", g.maxBytes)}
	}
	out := fetchResponse{Status: resp.StatusCode, URL: u.String()}
	for name, values := range resp.Header {
		n := strings.ToLower(name)
		if n == "set-cookie" || n == "set-cookie2" {
			continue // a browser never shows these to code
		}
		out.Headers = append(out.Headers, [2]string{n, strings.Join(values, ", ")})
	}
	return out, data, nil
}

// failure words a transport error for the guest.
func (g *egress) failure(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return fmt.Errorf("no answer within %v", g.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err
}

func (g *egress) allowedText() string {
	if len(g.allow) == 0 {
		return "this runtime may fetch nothing"
	}
	return "this runtime may fetch only " + strings.Join(g.allow, ", ")
}

func isRedirect(code int) bool {
	switch code {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
