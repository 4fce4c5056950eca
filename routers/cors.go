package routers

import (
	"net/url"
	"regexp"
	"strings"
)

// originSet holds allowed browser origins: exact ones, and patterns with one leading "*."
// label that matches exactly one DNS label (api.md §9).
type originSet struct {
	exact    map[string]bool
	wildcard []wildcardOrigin
}

type wildcardOrigin struct {
	scheme string // "https://"
	suffix string // ".example.org" or ".example.org:8443"
}

var dnsLabelRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

func newOriginSet(origins []string) *originSet {
	s := &originSet{exact: map[string]bool{}}
	s.add(origins)
	return s
}

func (s *originSet) add(origins []string) {
	for _, o := range origins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if scheme, rest, ok := strings.Cut(o, "://*."); ok {
			s.wildcard = append(s.wildcard, wildcardOrigin{scheme: scheme + "://", suffix: "." + strings.ToLower(rest)})
			continue
		}
		if o != "" {
			s.exact[strings.ToLower(o)] = true
		}
	}
}

// allows reports whether a request's Origin header names an allowed origin.
func (s *originSet) allows(origin string) bool {
	if origin == "" || len(origin) > 255 {
		return false
	}
	o := strings.ToLower(origin)
	if s.exact[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return false
	}
	for _, w := range s.wildcard {
		rest, ok := strings.CutPrefix(o, w.scheme)
		if !ok {
			continue
		}
		label, ok := strings.CutSuffix(rest, w.suffix)
		if ok && dnsLabelRE.MatchString(label) {
			return true
		}
	}
	return false
}
