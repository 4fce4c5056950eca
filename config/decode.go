package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The shape phase walks the yaml.Node tree into typed structs itself instead of calling
// yaml.v3's Decode: Decode reports type errors with a line but no column and no field path,
// silently empties a list given null, and loses KnownFields inside custom unmarshalers
// (go-style §2.4). Walking the tree gives every problem a position and a path, and lets the
// rules follow the reference's (pydantic lax mode) exactly.

// maxNodes bounds how many nodes one file may expand to, so an alias bomb cannot exhaust memory.
const maxNodes = 200_000

// pos is a 1-based line and column in a YAML file.
type pos struct{ line, col int }

// nodeDecoder is implemented by leaf types that decode themselves from a node (for example the
// one-value-or-per-deployment-map type). They report problems through d.fail and keep going.
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string)
}

// defaulter is implemented by structs whose fields have non-zero defaults. The walker calls it
// before decoding the struct's keys, so an absent key keeps its default.
type defaulter interface {
	setDefaults()
}

// decoder walks one file's node tree. It collects problems instead of stopping, and records
// the position of every path it visits for the later phases.
type decoder struct {
	file   string
	lines  []string
	errs   ErrorList
	index  map[string]pos
	blocks map[string]block
	nodes  int
}

// block is where a literal block scalar (key: |) starts: its indicator's line and the
// indentation of its content, so a line inside it can be mapped back to the file.
type block struct{ line, indent int }

func newDecoder(file string, data []byte) *decoder {
	return &decoder{file: file, lines: strings.Split(string(data), "\n"), index: map[string]pos{}, blocks: map[string]block{}}
}

func (d *decoder) failAt(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, Error{File: d.file, Line: n.Line, Column: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// at records where path is and returns the node with aliases followed.
func (d *decoder) enter(n *yaml.Node, path string) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if _, ok := d.index[path]; !ok {
		d.index[path] = pos{n.Line, n.Column}
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names a node for a message without ever dumping a large value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		v := n.Value
		if r := []rune(v); len(r) > 60 {
			v = string(r[:57]) + "..."
		}
		return strconv.Quote(v)
	}
	return "nothing"
}

// fieldInfo is what the walker needs to know of one struct field.
type fieldInfo struct {
	name     string
	index    int
	required bool
	strict   bool // integers only: refuse "2", 2.0 and true, as the reference's strict fields do
}

func fieldsOf(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fi := fieldInfo{name: name, index: i}
		for opt := range strings.SplitSeq(f.Tag.Get("cfg"), ",") {
			switch opt {
			case "required":
				fi.required = true
			case "strict":
				fi.strict = true
			}
		}
		out = append(out, fi)
	}
	return out
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decode fills v from n. v must be settable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, strict bool) {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.failAt(n, path, "the file expands to more than %d values; aliases may not be used to build large documents", maxNodes)
		}
		return
	}
	n = d.enter(n, path)
	if v.CanAddr() {
		if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
			nd.decodeNode(d, n, path)
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			v.SetZero()
			return
		}
		nv := reflect.New(v.Type().Elem())
		d.decode(n, nv.Elem(), path, strict)
		v.Set(nv)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.failAt(n, path, "must be a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), strict)
		}
		v.Set(s)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.String:
		s, ok := scalarString(n)
		if !ok {
			d.failAt(n, path, "must be a string, got %s%s", describe(n), quoteHint(n))
			return
		}
		v.SetString(s)
		if n.Style&yaml.LiteralStyle != 0 && n.Line < len(d.lines) {
			first := d.lines[n.Line] // the line after the indicator (lines is 0-based)
			d.blocks[path] = block{line: n.Line, indent: len(first) - len(strings.TrimLeft(first, " "))}
		}
	case reflect.Bool:
		b, ok := scalarBool(n)
		if !ok {
			d.failAt(n, path, "must be true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		i, ok := scalarInt(n, strict)
		if !ok {
			d.failAt(n, path, "must be a whole number, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, ok := scalarFloat(n)
		if !ok {
			d.failAt(n, path, "must be a number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		panic(fmt.Sprintf("config: no decoder for %s", v.Type()))
	}
}

// quoteHint helps with the commonest YAML trap: a version or id that YAML reads as a number.
func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!bool" || n.Tag == "!!timestamp") {
		return " (quote it to make it a string)"
	}
	return ""
}

func (d *decoder) mappingPairs(n *yaml.Node, path string, each func(key string, k, val *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		for k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.failAt(k, path, "keys must be plain strings, got %s", describe(k))
			continue
		}
		if k.Tag == "!!merge" {
			d.failAt(k, path, "merge keys (<<) are not supported; write the keys out")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.failAt(k, joinPath(path, k.Value), "mapping key %q already defined at line %d", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		each(k.Value, k, val)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "must be a mapping, got %s", describe(n))
		return
	}
	if df, ok := v.Addr().Interface().(defaulter); ok {
		df.setDefaults()
	}
	fields := fieldsOf(v.Type())
	byName := make(map[string]fieldInfo, len(fields))
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		byName[f.name] = f
		names = append(names, f.name)
	}
	present := map[string]bool{}
	d.mappingPairs(n, path, func(key string, k, val *yaml.Node) {
		f, ok := byName[key]
		p := joinPath(path, key)
		if !ok {
			msg := fmt.Sprintf("unknown field %q", key)
			if s := closest(key, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			d.failAt(k, p, "%s", msg)
			return
		}
		present[key] = true
		// A field whose value is a collection is located by its key, so messages about the
		// whole block point at its name.
		d.index[p] = pos{k.Line, k.Column}
		d.decode(val, v.Field(f.index), p, f.strict)
	})
	for _, f := range fields {
		if f.required && !present[f.name] {
			d.failAt(n, joinPath(path, f.name), "required field is missing")
		}
	}
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "must be a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	d.mappingPairs(n, path, func(key string, k, val *yaml.Node) {
		p := fmt.Sprintf("%s[%s]", path, key)
		d.index[p] = pos{k.Line, k.Column}
		ev := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, ev, p, false)
		m.SetMapIndex(reflect.ValueOf(key), ev)
	})
	v.Set(m)
}

// scalarString accepts only YAML strings: like the reference, a number is never turned into a
// string (id: 123 and version: 1.10 are errors, so "1.10" never silently becomes "1.1").
func scalarString(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return "", false
	}
	return n.Value, true
}

// scalarBool accepts what pydantic's lax mode accepts: true/false, 1/0, and the strings yes, no,
// on, off, true, false, 1, 0 in any case.
func scalarBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return false, false
	}
	switch strings.ToLower(n.Value) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// scalarInt accepts an integer, an integral float (2.0) or a string of either; strict fields
// accept only a YAML integer.
func scalarInt(n *yaml.Node, strict bool) (int64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	if n.Tag == "!!int" {
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		return i, err == nil
	}
	if strict || (n.Tag != "!!float" && n.Tag != "!!str") {
		return 0, false
	}
	if i, err := strconv.ParseInt(strings.TrimSpace(n.Value), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func scalarFloat(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!str") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(n.Value), "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// closest returns the candidate nearest to s by edit distance, if it is near enough to be a
// plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	switch n := len(s); {
	case n > 8:
		limit = 3
	case n > 4:
		limit = 2
	}
	if bestD <= limit {
		return best
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions, deletions, substitutions
// and swaps of neighbours ("titel" is one step from "title") each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func reflectValue(ptr any) reflect.Value { return reflect.ValueOf(ptr).Elem() }
