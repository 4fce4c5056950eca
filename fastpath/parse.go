package fastpath

import (
	"bytes"
	"unsafe"
)

// Request is the head of a request the fast path understood: a GET or HEAD with no body.
//
// Its strings point into the connection's read buffer: they are valid only until Answer
// returns, and an Answer that keeps one must copy it (strings.Clone).
type Request struct {
	Method string // "GET" or "HEAD"
	Path   string // the target up to any '?': no '%', so it is the decoded path too
	Query  string // after the '?', without it; "" when absent

	// The headers the answers depend on, "" when absent; each was sent at most once.
	AcceptEncoding string
	IfNoneMatch    string
	Origin         string
	RequestID      string // X-Request-ID

	// Close is true when the client sent Connection: close.
	Close bool
}

// Head reports whether the request is a HEAD.
func (r *Request) Head() bool { return r.Method == "HEAD" }

// verdict is what parse made of the buffered bytes.
type verdict int

const (
	// incomplete: no end of head yet, and nothing refused so far.
	incomplete verdict = iota
	// complete: a request the fast path serves if Answer agrees.
	complete
	// refuse: something the fast path leaves to net/http.
	refuse
)

const (
	maxTarget = 2048
	maxHeader = 1024 // one header line's value
)

var endOfHead = []byte("\r\n\r\n")

// parse reads a request head from b, the bytes buffered so far. It returns complete with the
// head's length in bytes, incomplete when more bytes are needed, or refuse. On complete,
// r's strings point into b.
func parse(b []byte, r *Request) (verdict, int) {
	end := bytes.Index(b, endOfHead)
	if end < 0 {
		// A bare LF ends lines for net/http; this parser would wait for a CRLF forever. Any
		// method but GET and HEAD is net/http's at once, not after its head has arrived, and
		// so is a whole line this parser refuses (HTTP/0.9's "GET /x", a broken header):
		// net/http answers some of them at once, and waiting for the rest of the head would
		// hold the answer back until the header timeout.
		if bareLF(b) || !methodPrefix(b) || !linesSoFar(b) {
			return refuse, 0
		}
		return incomplete, 0
	}
	n := end + len(endOfHead)
	head := b[:end+2] // every line with its CRLF
	if bareLF(head) {
		return refuse, 0
	}
	*r = Request{}
	line, rest := cutLine(head)
	if !requestLine(line, r) {
		return refuse, 0
	}
	hosts := 0
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		name, value, ok := headerLine(line)
		if !ok || !r.header(name, value, &hosts) {
			return refuse, 0
		}
	}
	if hosts != 1 {
		return refuse, 0
	}
	return complete, n
}

// linesSoFar reports whether the whole lines at the start of b, a head still incomplete, are
// ones parse would take: the request line, then header lines.
func linesSoFar(b []byte) bool {
	end := bytes.LastIndex(b, []byte("\r\n"))
	if end < 0 {
		return true
	}
	var r Request
	line, rest := cutLine(b[:end+2])
	if !requestLine(line, &r) {
		return false
	}
	hosts := 0
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		name, value, ok := headerLine(line)
		if !ok || !r.header(name, value, &hosts) {
			return false
		}
	}
	return true
}

// header takes one header line into r, counting Host lines in hosts; false refuses the request.
func (r *Request) header(name, value []byte, hosts *int) bool {
	var slot *string
	switch {
	case equalFold(name, "host"):
		*hosts++
		return validHost(value)
	case equalFold(name, "accept-encoding"):
		slot = &r.AcceptEncoding
	case equalFold(name, "if-none-match"):
		slot = &r.IfNoneMatch
	case equalFold(name, "origin"):
		slot = &r.Origin
	case equalFold(name, "x-request-id"):
		slot = &r.RequestID
	case equalFold(name, "connection"):
		switch {
		case equalFold(value, "close"):
			if r.Close {
				return false
			}
			r.Close = true
			return true
		case equalFold(value, "keep-alive"):
			return true
		}
		return false // upgrade, several tokens, …: net/http's call
	case equalFold(name, "content-length"), equalFold(name, "transfer-encoding"),
		equalFold(name, "expect"), equalFold(name, "upgrade"), equalFold(name, "trailer"),
		equalFold(name, "range"), equalFold(name, "if-range"), equalFold(name, "http2-settings"):
		return false
	default:
		return true
	}
	if *slot != "" || len(value) == 0 {
		// Sent twice (or empty, which net/http keeps apart from absent): net/http's call.
		return false
	}
	*slot = str(value)
	return true
}

// methodPrefix reports whether b could begin "GET " or "HEAD ".
func methodPrefix(b []byte) bool {
	for _, m := range []string{"GET ", "HEAD "} {
		n := min(len(b), len(m))
		if string(b[:n]) == m[:n] {
			return true
		}
	}
	return false
}

// cutLine splits b after its first CRLF; b holds whole lines.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.Index(b, []byte("\r\n"))
	return b[:i], b[i+2:]
}

// bareLF reports whether b holds a LF not preceded by CR, or a CR not followed by LF (except a
// CR that is b's last byte, whose LF may not have arrived).
func bareLF(b []byte) bool {
	for i, c := range b {
		switch c {
		case '\n':
			if i == 0 || b[i-1] != '\r' {
				return true
			}
		case '\r':
			if i+1 < len(b) && b[i+1] != '\n' {
				return true
			}
		}
	}
	return false
}

// requestLine reads "GET /path?query HTTP/1.1".
func requestLine(line []byte, r *Request) bool {
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		r.Method, line = "GET", line[4:]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		r.Method, line = "HEAD", line[5:]
	default:
		return false
	}
	target, ok := bytes.CutSuffix(line, []byte(" HTTP/1.1"))
	if !ok || len(target) == 0 || len(target) > maxTarget || target[0] != '/' {
		return false
	}
	path, query, hasQuery := bytes.Cut(target, []byte("?"))
	for _, c := range path {
		if !pathByte(c) {
			return false
		}
	}
	for _, c := range query {
		if !pathByte(c) && c != '?' {
			return false
		}
	}
	r.Path = str(path)
	if hasQuery {
		r.Query = str(query)
	}
	return true
}

// pathByte reports whether c may appear in a path as the fast path reads it: unreserved,
// sub-delims, ':', '@' and '/' (RFC 3986 pchar without percent-encoding, which is left to
// net/http so that the decoded path is the raw one).
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/':
		return true
	}
	return false
}

// headerLine reads "Name: value" with optional white space around the value; the name is a
// token and the value visible ASCII, spaces and tabs (no obs-text, no folding).
func headerLine(line []byte) (name, value []byte, ok bool) {
	name, value, ok = bytes.Cut(line, []byte(":"))
	if !ok || len(name) == 0 {
		return nil, nil, false
	}
	for _, c := range name {
		if !tokenByte(c) {
			return nil, nil, false
		}
	}
	if len(value) > maxHeader {
		return nil, nil, false
	}
	for _, c := range value {
		if !(c == ' ' || c == '\t' || 0x21 <= c && c <= 0x7e) {
			return nil, nil, false
		}
	}
	return name, bytes.Trim(value, " \t"), true
}

// tokenByte reports whether c is a tchar (RFC 9110 §5.6.2).
func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// validHost is a conservative Host: a name or address and an optional port, which
// net/http accepts too.
func validHost(v []byte) bool {
	if len(v) == 0 || len(v) > 255 {
		return false
	}
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// equalFold compares an ASCII header name or token with a lower-case literal.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// str views b as a string without copying; b must not change while the string is in use
// (the read buffer is not touched until Answer has returned and the answer is written).
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
