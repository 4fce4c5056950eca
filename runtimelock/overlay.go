package runtimelock

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/osc-assistant/assistant/strictjson"
)

// Overlay is a decoded lock overlay: the packages a community adds to the stock Pyodide lock.
type Overlay struct {
	// Packages are in the order the JSON object lists them. Render sorts them by key.
	Packages []Package
}

// Package is one entry of an overlay, keyed by the canonical form of its name.
type Package struct {
	Key         string // the key under "packages"; always CanonicalName(Name) once decoded
	Name        string
	Version     string
	FileName    string // a bare py3-none-any wheel file name
	PackageType string // always "package"
	InstallDir  string // always "site"
	SHA256      string // 64 lowercase hexadecimal characters
	Imports     []string
	Depends     []string
}

// Package returns the entry stored under key.
func (o *Overlay) Package(key string) (Package, bool) {
	for _, p := range o.Packages {
		if p.Key == key {
			return p, true
		}
	}
	return Package{}, false
}

// Clone returns a deep copy of o.
func (o *Overlay) Clone() *Overlay {
	if o == nil {
		return nil
	}
	c := &Overlay{Packages: make([]Package, len(o.Packages))}
	for i, p := range o.Packages {
		p.Imports = slices.Clone(p.Imports)
		p.Depends = slices.Clone(p.Depends)
		c.Packages[i] = p
	}
	return c
}

// Problem is one thing wrong with an input, at a path inside it.
type Problem struct {
	// Path locates the problem, like packages["zarr"].sha256 in an overlay or preload[2]
	// relative to runtime.python. It is empty for a problem with the whole input.
	Path string
	Msg  string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// DecodeError lists every problem Decode found, in document order.
type DecodeError struct {
	Problems []Problem
}

func (e *DecodeError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// The messages below are OSA's (config.md §7.1), so tests and people who know OSA read the
// same words; the pydantic ones ("Field required", ...) are what OSA's users see there.
const (
	msgRequired    = "Field required"
	msgExtra       = "Extra inputs are not permitted"
	msgNotObject   = "Input should be a valid dictionary"
	msgNotString   = "Input should be a valid string"
	msgNotList     = "Input should be a valid list"
	msgDuplicate   = "duplicate key; a JSON object must not repeat a key"
	msgBadSHA256   = "sha256 must be 64 lowercase hexadecimal characters"
	msgEmpty       = "a lock overlay with no packages adds nothing; remove the lockfile key"
	msgSameFile    = "two packages name the same wheel file"
	fmtBadFileName = "file_name %s is not a bare py3-none-any wheel name; the browser can only install pure-Python wheels, and a path is not a name"
	fmtBadKey      = "package key %s is not the canonical form of its name %s (%s), which is how Pyodide looks it up"
)

var (
	wheelNameRE = regexp.MustCompile(`^[A-Za-z0-9_.+-]+-py3-none-any\.whl$`)
	sha256RE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	separatorRE = regexp.MustCompile(`[-_.]+`)
	identRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// entryFields are an entry's keys in the order config.md §7.1 lists them, which is also the
// order Render writes them in.
var entryFields = []string{"name", "version", "file_name", "package_type", "install_dir", "sha256", "imports", "depends"}

// CanonicalName is the PEP 503 normal form of a package name: lower case, with every run of
// "-", "_" and "." replaced by one "-". Pyodide keys its lock by it.
func CanonicalName(name string) string {
	return strings.ToLower(separatorRE.ReplaceAllString(name, "-"))
}

// IsWheelName reports whether name is a bare py3-none-any wheel file name, the only kind an
// overlay may list.
func IsWheelName(name string) bool {
	return wheelNameRE.MatchString(name)
}

// Decode parses an overlay strictly, with package strictjson: never with encoding/json's struct
// decoding, which matches keys case-insensitively and lets a repeated key overwrite the first.
// On failure it returns a *DecodeError listing every problem.
func Decode(data []byte) (*Overlay, error) {
	root, err := strictjson.Parse(data, overlayLimits)
	if err != nil {
		msg := err.Error()
		if se := (*strictjson.SyntaxError)(nil); errors.As(err, &se) {
			msg = syntaxProblem(data, se)
		}
		return nil, &DecodeError{Problems: []Problem{{Msg: msg}}}
	}
	var d decoder
	ov := d.overlay(root)
	if len(d.problems) > 0 {
		return nil, &DecodeError{Problems: d.problems}
	}
	return ov, nil
}

// jsonValue is one parsed JSON value of an overlay.
type jsonValue = strictjson.Value

type decoder struct {
	problems []Problem
}

func (d *decoder) add(path, msg string) {
	d.problems = append(d.problems, Problem{Path: path, Msg: msg})
}

func (d *decoder) overlay(v *jsonValue) *Overlay {
	if v.Kind != strictjson.Object {
		d.add("", msgNotObject)
		return nil
	}
	var ov *Overlay
	found := false
	for _, m := range d.members(v, topPath) {
		if m.Key != "packages" {
			d.add(topPath(m.Key), msgExtra)
			continue
		}
		found = true
		ov = d.packages(m.Value)
	}
	if !found {
		d.add("packages", msgRequired)
	}
	return ov
}

func (d *decoder) packages(v *jsonValue) *Overlay {
	if v.Kind != strictjson.Object {
		d.add("packages", msgNotObject)
		return nil
	}
	ov := &Overlay{Packages: []Package{}}
	ok := true
	for _, m := range d.members(v, entryPath) {
		p, good := d.entry(m.Value, entryPath(m.Key), m.Key)
		if good {
			ov.Packages = append(ov.Packages, p)
		}
		ok = ok && good
	}
	if len(v.Members) == 0 {
		d.add("packages", msgEmpty)
	}
	// Two entries naming one wheel file: only entries that decoded cleanly can be compared.
	seen := map[string]bool{}
	for _, p := range ov.Packages {
		if seen[p.FileName] {
			d.add(entryPath(p.Key)+".file_name", msgSameFile)
		}
		seen[p.FileName] = true
	}
	if !ok {
		return nil
	}
	return ov
}

// members returns an object's members and reports repeated keys, keeping the first; path
// names a member by its key.
func (d *decoder) members(v *jsonValue, path func(key string) string) []strictjson.Member {
	out := make([]strictjson.Member, 0, len(v.Members))
	for _, m := range v.Members {
		if m.Dup {
			d.add(path(m.Key), msgDuplicate)
			continue
		}
		out = append(out, m)
	}
	return out
}

func (d *decoder) entry(v *jsonValue, path, key string) (Package, bool) {
	before := len(d.problems)
	p := Package{Key: key}
	if v.Kind != strictjson.Object {
		d.add(path, msgNotObject)
		return p, false
	}
	present := map[string]bool{}
	nameOK := false
	field := func(key string) string { return childPath(path, key) }
	for _, m := range d.members(v, field) {
		fp := path + "." + m.Key
		if !slices.Contains(entryFields, m.Key) {
			d.add(field(m.Key), msgExtra)
			continue
		}
		present[m.Key] = true
		switch m.Key {
		case "name":
			p.Name, nameOK = d.str(m.Value, fp)
		case "version":
			p.Version, _ = d.str(m.Value, fp)
		case "file_name":
			if s, ok := d.str(m.Value, fp); ok {
				p.FileName = s
				if !IsWheelName(s) {
					d.add(fp, fmt.Sprintf(fmtBadFileName, pyRepr(s)))
				}
			}
		case "package_type":
			p.PackageType = d.literal(m.Value, fp, "package")
		case "install_dir":
			p.InstallDir = d.literal(m.Value, fp, "site")
		case "sha256":
			if s, ok := d.str(m.Value, fp); ok {
				p.SHA256 = s
				if !sha256RE.MatchString(s) {
					d.add(fp, msgBadSHA256)
				}
			}
		case "imports":
			p.Imports = d.strList(m.Value, fp)
		case "depends":
			p.Depends = d.strList(m.Value, fp)
		}
	}
	for _, f := range entryFields {
		if !present[f] {
			d.add(path+"."+f, msgRequired)
		}
	}
	if nameOK {
		if c := CanonicalName(p.Name); c != key {
			d.add(path, fmt.Sprintf(fmtBadKey, pyRepr(key), pyRepr(p.Name), pyRepr(c)))
		}
	}
	return p, len(d.problems) == before
}

func (d *decoder) str(v *jsonValue, path string) (string, bool) {
	if v.Kind != strictjson.String {
		d.add(path, msgNotString)
		return "", false
	}
	return v.Str, true
}

func (d *decoder) literal(v *jsonValue, path, want string) string {
	s, ok := d.str(v, path)
	if ok && s != want {
		d.add(path, "Input should be "+pyRepr(want))
	}
	return s
}

func (d *decoder) strList(v *jsonValue, path string) []string {
	if v.Kind != strictjson.Array {
		d.add(path, msgNotList)
		return nil
	}
	out := make([]string, 0, len(v.Items))
	for i, item := range v.Items {
		if s, ok := d.str(item, path+"["+strconv.Itoa(i)+"]"); ok {
			out = append(out, s)
		}
	}
	return out
}

func topPath(key string) string { return childPath("", key) }

func entryPath(key string) string {
	return "packages[" + strconv.Quote(key) + "]"
}

// childPath names a member of the object at path: as .key when key is an identifier, else
// as ["key"], so odd keys stay readable and unambiguous.
func childPath(path, key string) string {
	if identRE.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// overlayLimits bound an overlay's nesting: the top-level object and maxDepth levels of arrays
// and objects below it (an overlay needs four), so a hostile file cannot recurse the parser
// into a stack overflow.
var overlayLimits = strictjson.Limits{MaxDepth: maxDepth + 1}

const maxDepth = 64

// syntaxProblem words a JSON syntax error of an overlay as encoding/json's decoder did before
// overlays were parsed by package strictjson, for the people and tests that read the old
// messages: "invalid JSON at line 2, column 21: invalid character ',' looking for beginning of
// object key string".
func syntaxProblem(data []byte, e *strictjson.SyntaxError) string {
	if e.Code == strictjson.InvalidUTF8 {
		return "the overlay is not valid UTF-8"
	}
	off, msg := problem(data, e)
	line, col := strictjson.LineCol(data, off)
	return fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, msg)
}

// problem is the offset and the message of syntaxProblem.
func problem(data []byte, e *strictjson.SyntaxError) (int, string) {
	const eof = "unexpected end of input"
	off := e.Offset
	if off >= len(data) {
		// The decoder stopped after the last token it read, before any trailing white space.
		return len(bytes.TrimRight(data, " \t\r\n")), eof
	}
	invalid := func(i int, context string) string { return "invalid character " + quoteChar(data, i) + context }
	switch e.Code {
	case strictjson.ExpectingValue:
		return off, valueProblem(data, off)
	case strictjson.ExpectingKey:
		if before := bytes.TrimRight(data[:off], " \t\r\n"); before[len(before)-1] == '{' {
			return off, invalid(off, "") // the decoder gave no context right after "{"
		}
		return off, invalid(off, " looking for beginning of object key string")
	case strictjson.ExpectingColon:
		return off, invalid(off, " after object key")
	case strictjson.ExpectingObjectComma:
		return off, invalid(off, " after object key:value pair")
	case strictjson.ExpectingArrayComma:
		return off, invalid(off, " after array element")
	case strictjson.ControlCharacter:
		return stringStart(data, off), invalid(off, " in string literal")
	case strictjson.InvalidEscape:
		return stringStart(data, off), invalid(off+1, " in string escape code")
	case strictjson.InvalidUnicodeEscape:
		i := off + 2 // the first of the four characters that are not all hexadecimal digits
		for i < len(data) && i < off+6 && strings.IndexByte("0123456789abcdefABCDEF", data[i]) >= 0 {
			i++
		}
		if i >= len(data) {
			return stringStart(data, off), eof
		}
		return stringStart(data, off), invalid(i, " in \\u hexadecimal character escape")
	case strictjson.UnterminatedString:
		return off, eof // at the opening quote, where the decoder stopped
	case strictjson.TooDeep:
		return off, fmt.Sprintf("nested more than %d levels deep", maxDepth)
	case strictjson.ExtraData:
		// The decoder read one more token and complained about it, or about the data after it.
		const extra = "unexpected data after the top-level value"
		switch data[off] {
		case '{', '[':
			return off + 1, extra
		case '}', ']', ',', ':':
			return off, invalid(off, " looking for beginning of value")
		}
		rest := data[off:]
		var se *strictjson.SyntaxError
		switch _, err := strictjson.Parse(rest, overlayLimits); {
		case !errors.As(err, &se):
			return off + len(bytes.TrimRight(rest, " \t\r\n")), extra
		case se.Code == strictjson.ExtraData:
			return off + len(bytes.TrimRight(rest[:se.Offset], " \t\r\n")), extra
		default:
			at, msg := problem(rest, se)
			return off + at, msg
		}
	}
	return off, e.Code.Msg()
}

// stringStart is the offset of the opening quote of the string that holds the byte at off, where
// the decoder placed a problem inside a string: the last quote before off that no backslash
// escapes (the string up to off is well formed).
func stringStart(data []byte, off int) int {
	for i := off - 1; i >= 0; i-- {
		if data[i] != '"' {
			continue
		}
		n := 0
		for n < i && data[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i
		}
	}
	return off
}

// valueProblem words a malformed value at off, which strictjson reports as ExpectingValue,
// as encoding/json's scanner did: a literal or a number names the character that breaks it,
// or, cut short by the end of the input, is "unexpected end of input" at its start.
func valueProblem(data []byte, off int) string {
	if off >= len(data) {
		return ""
	}
	bad := func(i int, where string) string {
		if i >= len(data) {
			return "unexpected end of input"
		}
		return "invalid character " + quoteChar(data, i) + " " + where
	}
	for _, lit := range []string{"true", "false", "null"} {
		if data[off] != lit[0] {
			continue
		}
		for i := 1; i < len(lit); i++ {
			if off+i >= len(data) || data[off+i] != lit[i] {
				return bad(off+i, "in literal "+lit+" (expecting "+quoteChar([]byte(lit), i)+")")
			}
		}
	}
	// A number fails only where a digit must follow "-", "." or the exponent's "e" and sign.
	isDigit := func(i int) bool { return i < len(data) && data[i] >= '0' && data[i] <= '9' }
	i := off
	if data[i] == '-' {
		if i++; !isDigit(i) {
			return bad(i, "in numeric literal")
		}
	}
	if !isDigit(i) {
		return "invalid character " + quoteChar(data, off) + " looking for beginning of value"
	}
	for isDigit(i) {
		i++
	}
	if i < len(data) && data[i] == '.' {
		if i++; !isDigit(i) {
			return bad(i, "after decimal point in numeric literal")
		}
		for isDigit(i) {
			i++
		}
	}
	if i++; i < len(data) && (data[i] == '+' || data[i] == '-') {
		i++
	}
	return bad(i, "in exponent of numeric literal")
}

// quoteChar is the byte at data[off] quoted as encoding/json's errors quote it.
func quoteChar(data []byte, off int) string {
	if off >= len(data) {
		return "''"
	}
	switch c := data[off]; c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	default:
		s := strconv.Quote(string(rune(c)))
		return "'" + s[1:len(s)-1] + "'"
	}
}
