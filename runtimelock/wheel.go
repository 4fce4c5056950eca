package runtimelock

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// WheelSpec is the metadata of a pure-Python wheel BuildWheel writes.
type WheelSpec struct {
	Name           string // distribution name, such as "nemar-tools"
	Version        string // PEP 440 version, such as "0.1.0"
	Summary        string // one line
	RequiresPython string // such as ">=3.12"; optional
}

var (
	// PEP 508 names and a conservative subset of PEP 440 versions: enough to keep the wheel
	// file name a plain one.
	distNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	versionRE  = regexp.MustCompile(`^[0-9][0-9A-Za-z.!+]*$`)
)

// wheelEpoch is every entry's modification time: the earliest a zip can record, as in
// SOURCE_DATE_EPOCH-style reproducible builds.
var wheelEpoch = time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC)

// ReadWheelSpec reads the [project] table of srcDir/pyproject.toml: name, version,
// description (the Summary) and requires-python. Other keys are ignored: the builder has no
// dependencies or entry points to write.
func ReadWheelSpec(srcDir string) (WheelSpec, error) {
	var doc struct {
		Project struct {
			Name           string `toml:"name"`
			Version        string `toml:"version"`
			Description    string `toml:"description"`
			RequiresPython string `toml:"requires-python"`
		} `toml:"project"`
	}
	p := filepath.Join(srcDir, "pyproject.toml")
	if _, err := toml.DecodeFile(p, &doc); err != nil {
		return WheelSpec{}, fmt.Errorf("%s cannot be read: %v", p, err)
	}
	return WheelSpec{
		Name:           doc.Project.Name,
		Version:        doc.Project.Version,
		Summary:        doc.Project.Description,
		RequiresPython: doc.Project.RequiresPython,
	}, nil
}

// WheelFileName is the file name of spec's py3-none-any wheel.
func WheelFileName(spec WheelSpec) string {
	return distInfoName(spec) + "-py3-none-any.whl"
}

// distInfoName is "{name}-{version}" with the name escaped as the wheel format requires.
func distInfoName(spec WheelSpec) string {
	return strings.ReplaceAll(CanonicalName(spec.Name), "-", "_") + "-" + spec.Version
}

// BuildWheel packs the Python sources under srcDir into a py3-none-any wheel and returns its
// file name and bytes. Every top-level directory and every top-level .py file is included;
// other top-level files (pyproject.toml, a README), dot files, __pycache__ and .pyc files are
// not. Symlinks and other non-regular files are refused.
//
// The output depends only on the file contents and spec: entries are sorted, stored
// uncompressed (so a change in compress/flate between Go releases cannot change the bytes),
// dated 1980-01-01 and given mode 0644, and the dist-info files come last, RECORD at the end.
func BuildWheel(srcDir string, spec WheelSpec) (fileName string, data []byte, err error) {
	if !distNameRE.MatchString(spec.Name) {
		return "", nil, fmt.Errorf("wheel name %q is not a valid distribution name", spec.Name)
	}
	if !versionRE.MatchString(spec.Version) {
		return "", nil, fmt.Errorf("wheel version %q is not a plain version such as 0.1.0", spec.Version)
	}
	if strings.ContainsAny(spec.Summary+spec.RequiresPython, "\r\n") {
		return "", nil, errors.New("wheel summary and requires-python must be one line each")
	}
	fileName = WheelFileName(spec)
	if !IsWheelName(fileName) {
		return "", nil, fmt.Errorf("wheel file name %q is not a bare py3-none-any wheel name", fileName)
	}

	type file struct {
		name string
		data []byte
	}
	var files []file
	src := os.DirFS(srcDir)
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		base := d.Name()
		if strings.HasPrefix(base, ".") || base == "__pycache__" || strings.HasSuffix(base, ".pyc") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", filepath.Join(srcDir, filepath.FromSlash(p)))
		}
		if !strings.Contains(p, "/") && !strings.HasSuffix(p, ".py") {
			return nil // pyproject.toml, README.md, ...
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		files = append(files, file{p, b})
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("%s has no Python package or module to pack", srcDir)
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })

	distInfo := distInfoName(spec) + ".dist-info"
	var meta strings.Builder
	meta.WriteString("Metadata-Version: 2.1\n")
	meta.WriteString("Name: " + spec.Name + "\n")
	meta.WriteString("Version: " + spec.Version + "\n")
	if spec.Summary != "" {
		meta.WriteString("Summary: " + spec.Summary + "\n")
	}
	if spec.RequiresPython != "" {
		meta.WriteString("Requires-Python: " + spec.RequiresPython + "\n")
	}
	files = append(files,
		file{distInfo + "/METADATA", []byte(meta.String())},
		file{distInfo + "/WHEEL", []byte("Wheel-Version: 1.0\nGenerator: assistant build-wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n")},
	)

	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	record.WriteString(distInfo + "/RECORD,,\n")
	files = append(files, file{distInfo + "/RECORD", []byte(record.String())})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Store, Modified: wheelEpoch}
		hdr.SetMode(0o644)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return "", nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return "", nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return fileName, buf.Bytes(), nil
}

// wheelInfo is what the generator reads from a wheel.
type wheelInfo struct {
	name, version string
	imports       []string
}

// readWheel reads METADATA's Name and Version and the top-level import names of a wheel, as
// config.md §7.5 describes. Messages are the generator's, naming the wheel by fileName.
func readWheel(fileName string, data []byte) (wheelInfo, string) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return wheelInfo{}, fmt.Sprintf("%s is not a readable wheel: %v", fileName, err)
	}
	var metas []*zip.File
	for _, f := range zr.File {
		if strings.Count(f.Name, "/") == 1 && strings.HasSuffix(f.Name, ".dist-info/METADATA") {
			metas = append(metas, f)
		}
	}
	if len(metas) != 1 {
		return wheelInfo{}, fmt.Sprintf("%s: expected one .dist-info/METADATA, found %d", fileName, len(metas))
	}
	rc, err := metas[0].Open()
	if err != nil {
		return wheelInfo{}, fmt.Sprintf("%s is not a readable wheel: %v", fileName, err)
	}
	meta, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return wheelInfo{}, fmt.Sprintf("%s is not a readable wheel: %v", fileName, err)
	}
	if !utf8.Valid(meta) {
		return wheelInfo{}, fmt.Sprintf("%s: METADATA is not UTF-8", fileName)
	}
	headers := parseHeaders(string(meta))
	info := wheelInfo{name: headers["name"], version: headers["version"]}
	if info.name == "" || info.version == "" {
		return wheelInfo{}, fmt.Sprintf("%s: METADATA has no Name or no Version", fileName)
	}
	imports := map[string]bool{}
	for _, f := range zr.File {
		top, _, inDir := strings.Cut(f.Name, "/")
		switch {
		case top == "", strings.HasSuffix(top, ".dist-info"), strings.HasSuffix(top, ".data"):
		case inDir:
			imports[top] = true
		case strings.HasSuffix(top, ".py") && top != ".py":
			imports[strings.TrimSuffix(top, ".py")] = true
		}
	}
	info.imports = make([]string, 0, len(imports))
	for m := range imports {
		info.imports = append(info.imports, m)
	}
	slices.Sort(info.imports)
	return info, ""
}

// parseHeaders reads the RFC 822 header block of a METADATA file as Python's email parser
// does for the fields we need: names compared case-insensitively, the first occurrence
// winning, continuation lines folded in, the block ending at the first blank or non-header
// line.
func parseHeaders(s string) map[string]string {
	out := map[string]string{}
	last := ""
	for line := range strings.Lines(s) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last != "" {
				out[last] += " " + strings.TrimSpace(line)
			}
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			break
		}
		key := strings.ToLower(name)
		if _, seen := out[key]; seen {
			last = ""
			continue
		}
		out[key] = strings.TrimSpace(value)
		last = key
	}
	return out
}
