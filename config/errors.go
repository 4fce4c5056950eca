package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// maxErrorsPerFile caps how many errors one file reports, so a file of garbage does not bury the
// errors of the others.
const maxErrorsPerFile = 50

// An Error is one problem in one community file, located by line and column (1-based) and by
// a field path in the YAML (keys joined with ".", sequence indexes as [i], map keys as [key]).
type Error struct {
	File   string
	Line   int
	Column int
	Path   string
	Msg    string
	// FailsClosed marks a problem the server survives by serving the community with its client
	// tools off (a lock overlay that does not verify). assistant validate counts it all the same.
	FailsClosed bool
}

func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, max(e.Column, 1))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found, in file, line, column order. It is the error that Load
// returns; callers use errors.As to get at the entries.
type ErrorList []Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sorted returns the list ordered by file, position, path and message, with at most
// maxErrorsPerFile entries per file (the last entry then says how many were left out).
func (l ErrorList) sorted() ErrorList {
	out := slices.Clone(l)
	slices.SortStableFunc(out, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	out = slices.CompactFunc(out, func(a, b Error) bool { return a == b })
	var capped ErrorList
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && out[j].File == out[i].File {
			j++
		}
		if n := j - i; n > maxErrorsPerFile {
			capped = append(capped, out[i:i+maxErrorsPerFile]...)
			capped = append(capped, Error{File: out[i].File, Msg: fmt.Sprintf("… and %d more", n-maxErrorsPerFile)})
		} else {
			capped = append(capped, out[i:j]...)
		}
		i = j
	}
	return capped
}

// Fatal returns the errors that must stop a server: every one that does not merely fail its
// community closed.
func (l ErrorList) Fatal() ErrorList {
	var out ErrorList
	for _, e := range l {
		if !e.FailsClosed {
			out = append(out, e)
		}
	}
	return out
}

// errOrNil turns an empty list into a nil error, so callers can test err != nil.
func (l ErrorList) errOrNil() error {
	if len(l) == 0 {
		return nil
	}
	return l.sorted()
}
