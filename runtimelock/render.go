package runtimelock

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Render writes o the way OSA's generator does: Python's json.dumps(obj, indent=2) (so
// ensure_ascii) followed by one "\n". Packages are sorted by key and each entry's fields are
// in config.md §7.1 order, so equal overlays render to equal bytes.
//
// encoding/json is not used because it escapes <, > and & and writes non-ASCII as UTF-8,
// and both would make the bytes differ from what OSA's tools produce and check.
func (o *Overlay) Render() []byte {
	var b strings.Builder
	pkgs := slices.Clone(o.Packages)
	slices.SortStableFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Key, b.Key) })

	b.WriteString("{\n  \"packages\": ")
	if len(pkgs) == 0 {
		b.WriteString("{}")
	} else {
		b.WriteString("{\n")
		for i, p := range pkgs {
			b.WriteString("    ")
			writePyString(&b, p.Key)
			b.WriteString(": {\n")
			fields := []struct {
				name string
				val  any
			}{
				{"name", p.Name}, {"version", p.Version}, {"file_name", p.FileName},
				{"package_type", p.PackageType}, {"install_dir", p.InstallDir},
				{"sha256", p.SHA256}, {"imports", p.Imports}, {"depends", p.Depends},
			}
			for j, f := range fields {
				b.WriteString("      ")
				writePyString(&b, f.name)
				b.WriteString(": ")
				switch v := f.val.(type) {
				case string:
					writePyString(&b, v)
				case []string:
					writeList(&b, v, "      ")
				}
				if j < len(fields)-1 {
					b.WriteByte(',')
				}
				b.WriteByte('\n')
			}
			b.WriteString("    }")
			if i < len(pkgs)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("  }")
	}
	b.WriteString("\n}\n")
	return []byte(b.String())
}

func writeList(b *strings.Builder, items []string, indent string) {
	if len(items) == 0 {
		b.WriteString("[]")
		return
	}
	b.WriteString("[\n")
	for i, s := range items {
		b.WriteString(indent + "  ")
		writePyString(b, s)
		if i < len(items)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(indent + "]")
}

// writePyString writes s as Python's json module does with ensure_ascii=True: everything
// outside printable ASCII is escaped, astral characters as a UTF-16 surrogate pair, and
// <, >, & are left alone.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= ' ' && r <= '~':
				b.WriteRune(r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				fmt.Fprintf(b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
}

// pyRepr quotes s the way Python's repr() does, because OSA's messages quote values with
// {value!r} and ours keep that look: single quotes unless s holds a single quote and no
// double quote, with backslash escapes for the quote, backslash and control characters.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for i, w := 0, 0; i < len(s); i += w {
		r, width := utf8.DecodeRuneInString(s[i:])
		w = width
		switch {
		case r == utf8.RuneError && width == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// pyList renders names as Python prints a list of strings, e.g. ['numpy', 'scipy'].
func pyList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = pyRepr(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
