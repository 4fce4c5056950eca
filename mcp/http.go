package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects bounds the same-origin redirects followed for one request.
const maxRedirects = 5

// RedirectError is a redirect of a url server that was not followed: to another origin (scheme,
// host and port), from https to http, or one too many. The headers of headers_env go only to
// the configured origin, and a redirect elsewhere is not followed at all, with or without
// them: the url in the config names the server.
type RedirectError struct {
	// From and To are the origins; To is empty past maxRedirects.
	From, To string
}

// Error says which redirect was not followed, and why.
func (e *RedirectError) Error() string {
	switch {
	case e.To == "":
		return fmt.Sprintf("more than %d redirects; not followed", maxRedirects)
	case strings.HasPrefix(e.From, "https:") && strings.HasPrefix(e.To, "http:"):
		return fmt.Sprintf("redirect from %s to %s refused: it leaves https", e.From, e.To)
	}
	return fmt.Sprintf("redirect from %s to %s not followed: it leaves the configured origin (set url to the server's own address)", e.From, e.To)
}

// origin is scheme://host:port of u, with the scheme's default port made explicit, so that
// "https://h" and "https://h:443" are one origin.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// httpClient is the client of a url server at endpoint: it sends headers to that origin only,
// follows only redirects within it (a Python server's "/mcp" to "/mcp/" is one; a downgrade to
// http never is), and caps every answer as it is read (boundTransport).
func httpClient(endpoint string, base http.RoundTripper, headers http.Header, server string) (*http.Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, errors.New("url: not an http or https URL")
	}
	home := origin(u)
	return &http.Client{
		Transport: headerTransport{
			base:    boundTransport{base: base, server: server, limit: MaxMessageBytes},
			headers: headers, origin: home,
		},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if to := origin(r.URL); to != home {
				return &RedirectError{From: home, To: to}
			}
			if len(via) >= maxRedirects {
				return &RedirectError{From: home}
			}
			return nil
		},
	}, nil
}

// headerTransport adds the configured headers to every request to origin (and to no other);
// their values are never logged.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	origin  string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 && origin(r.URL) == h.origin {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header[k] = v
		}
	}
	return h.base.RoundTrip(r)
}
