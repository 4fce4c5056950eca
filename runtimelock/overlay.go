package runtimelock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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

// Decode parses an overlay strictly. It never relies on encoding/json's struct decoding, which
// matches keys case-insensitively and lets a repeated key overwrite the first. On failure it
// returns a *DecodeError listing every problem.
func Decode(data []byte) (*Overlay, error) {
	if !utf8.Valid(data) {
		return nil, &DecodeError{Problems: []Problem{{Msg: "the overlay is not valid UTF-8"}}}
	}
	root, err := parseJSON(data)
	if err != nil {
		return nil, &DecodeError{Problems: []Problem{{Msg: err.Error()}}}
	}
	var d decoder
	ov := d.overlay(root)
	if len(d.problems) > 0 {
		return nil, &DecodeError{Problems: d.problems}
	}
	return ov, nil
}

type decoder struct {
	problems []Problem
}

func (d *decoder) add(path, msg string) {
	d.problems = append(d.problems, Problem{Path: path, Msg: msg})
}

func (d *decoder) overlay(v *jsonValue) *Overlay {
	if v.kind != kindObject {
		d.add("", msgNotObject)
		return nil
	}
	var ov *Overlay
	found := false
	for _, m := range d.members(v, topPath) {
		if m.key != "packages" {
			d.add(topPath(m.key), msgExtra)
			continue
		}
		found = true
		ov = d.packages(m.val)
	}
	if !found {
		d.add("packages", msgRequired)
	}
	return ov
}

func (d *decoder) packages(v *jsonValue) *Overlay {
	if v.kind != kindObject {
		d.add("packages", msgNotObject)
		return nil
	}
	ov := &Overlay{Packages: []Package{}}
	ok := true
	for _, m := range d.members(v, entryPath) {
		p, good := d.entry(m.val, entryPath(m.key), m.key)
		if good {
			ov.Packages = append(ov.Packages, p)
		}
		ok = ok && good
	}
	if len(v.members) == 0 {
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
func (d *decoder) members(v *jsonValue, path func(key string) string) []jsonMember {
	seen := make(map[string]bool, len(v.members))
	out := make([]jsonMember, 0, len(v.members))
	for _, m := range v.members {
		if seen[m.key] {
			d.add(path(m.key), msgDuplicate)
			continue
		}
		seen[m.key] = true
		out = append(out, m)
	}
	return out
}

func (d *decoder) entry(v *jsonValue, path, key string) (Package, bool) {
	before := len(d.problems)
	p := Package{Key: key}
	if v.kind != kindObject {
		d.add(path, msgNotObject)
		return p, false
	}
	present := map[string]bool{}
	nameOK := false
	field := func(key string) string { return childPath(path, key) }
	for _, m := range d.members(v, field) {
		fp := path + "." + m.key
		if !slices.Contains(entryFields, m.key) {
			d.add(field(m.key), msgExtra)
			continue
		}
		present[m.key] = true
		switch m.key {
		case "name":
			p.Name, nameOK = d.str(m.val, fp)
		case "version":
			p.Version, _ = d.str(m.val, fp)
		case "file_name":
			if s, ok := d.str(m.val, fp); ok {
				p.FileName = s
				if !IsWheelName(s) {
					d.add(fp, fmt.Sprintf(fmtBadFileName, pyRepr(s)))
				}
			}
		case "package_type":
			p.PackageType = d.literal(m.val, fp, "package")
		case "install_dir":
			p.InstallDir = d.literal(m.val, fp, "site")
		case "sha256":
			if s, ok := d.str(m.val, fp); ok {
				p.SHA256 = s
				if !sha256RE.MatchString(s) {
					d.add(fp, msgBadSHA256)
				}
			}
		case "imports":
			p.Imports = d.strList(m.val, fp)
		case "depends":
			p.Depends = d.strList(m.val, fp)
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
	if v.kind != kindString {
		d.add(path, msgNotString)
		return "", false
	}
	return v.str, true
}

func (d *decoder) literal(v *jsonValue, path, want string) string {
	s, ok := d.str(v, path)
	if ok && s != want {
		d.add(path, "Input should be "+pyRepr(want))
	}
	return s
}

func (d *decoder) strList(v *jsonValue, path string) []string {
	if v.kind != kindArray {
		d.add(path, msgNotList)
		return nil
	}
	out := make([]string, 0, len(v.items))
	for i, item := range v.items {
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

// A small ordered JSON tree. encoding/json's token stream gives us the syntax checking and
// string unescaping; we keep object members as a list so order and duplicates survive.

type jsonKind int

const (
	kindNull jsonKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

type jsonValue struct {
	kind    jsonKind
	str     string // string value, or the literal text of a number
	items   []*jsonValue
	members []jsonMember
}

type jsonMember struct {
	key string
	val *jsonValue
}

func parseJSON(data []byte) (*jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err == nil {
		// One value and nothing after it: json.Decoder would happily read a second one.
		if _, err = dec.Token(); err == io.EOF {
			return v, nil
		}
		if err == nil {
			err = errors.New("unexpected data after the top-level value")
		}
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = errors.New("unexpected end of input")
	}
	line, col := lineCol(data, dec.InputOffset())
	return nil, fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, err)
}

// maxDepth bounds nesting, so a hostile file cannot recurse the parser into a stack overflow;
// an overlay needs four levels.
const maxDepth = 64

func parseValue(dec *json.Decoder, depth int) (*jsonValue, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jsonValue{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				val, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.members = append(v.members, jsonMember{key: key, val: val})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		case '[':
			v := &jsonValue{kind: kindArray}
			for dec.More() {
				item, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.items = append(v.items, item)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		}
		return nil, fmt.Errorf("unexpected %q", rune(t))
	case string:
		return &jsonValue{kind: kindString, str: t}, nil
	case json.Number:
		return &jsonValue{kind: kindNumber, str: string(t)}, nil
	case bool:
		return &jsonValue{kind: kindBool}, nil
	case nil:
		return &jsonValue{kind: kindNull}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func lineCol(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}
