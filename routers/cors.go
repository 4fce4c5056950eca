package routers

import (
	"net/url"
	"strings"
)

// originSet holds allowed browser origins: exact ones, and patterns with one leading "*."
// label that matches exactly one DNS label (api.md §9). It is built once per catalog and only
// read afterwards. Both kinds live in maps, so checking an origin costs the same whether the
// set came from one community or from a thousand, and a pattern listed twice is held once.
type originSet struct {
	// exact holds lowercased origins.
	exact map[string]struct{}
	// wildcard holds each pattern without its "*" label: the scheme as written, "://" and the
	// lowercased rest from the first dot (".example.org" or ".example.org:8443").
	wildcard map[string]struct{}
}

func newOriginSet(origins []string) *originSet {
	s := &originSet{exact: map[string]struct{}{}, wildcard: map[string]struct{}{}}
	s.add(origins)
	return s
}

func (s *originSet) add(origins []string) {
	for _, o := range origins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if scheme, rest, ok := strings.Cut(o, "://*."); ok {
			s.wildcard[scheme+"://."+strings.ToLower(rest)] = struct{}{}
			continue
		}
		if o != "" {
			s.exact[strings.ToLower(o)] = struct{}{}
		}
	}
}

// maxOrigin is the longest Origin header that is looked at.
const maxOrigin = 255

// allows reports whether a request's Origin header names an allowed origin.
func (s *originSet) allows(origin string) bool {
	if origin == "" || len(origin) > maxOrigin {
		return false
	}
	o := strings.ToLower(origin)
	if _, ok := s.exact[o]; ok {
		return true
	}
	return s.matchesWildcard(o) && plainOrigin(o)
}

// matchesWildcard reports whether o is a pattern's scheme and "://", then one DNS label, then
// the pattern's rest. The label holds no dot, so it ends at the first dot after a "://", and
// the key to look up is o without it. An origin has one "://" (a second would make a path),
// but every one is tried, as a pattern's scheme is taken as written.
func (s *originSet) matchesWildcard(o string) bool {
	if len(s.wildcard) == 0 {
		return false
	}
	var buf [2 * maxOrigin]byte
	for i := 0; ; {
		j := strings.Index(o[i:], "://")
		if j < 0 {
			return false
		}
		start := i + j + len("://")
		dot := strings.IndexByte(o[start:], '.')
		if dot < 0 {
			return false // no later "://" has a dot after it either
		}
		if isDNSLabel(o[start : start+dot]) {
			key := append(append(buf[:0], o[:start]...), o[start+dot:]...)
			if _, ok := s.wildcard[string(key)]; ok { // the conversion does not allocate
				return true
			}
		}
		i = start
	}
}

// plainOrigin reports whether o is an origin and nothing more: no path, query or user.
func plainOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && u.Path == "" && u.RawQuery == "" && u.User == nil
}

// isDNSLabel reports whether l is one DNS label: 1 to 63 letters, digits and hyphens, neither
// first nor last a hyphen.
func isDNSLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
