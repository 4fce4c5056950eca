package workspace

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// UploadTypes are the kinds of file a reader may attach, by extension.
var UploadTypes = []string{"csv", "tsv", "txt", "json", "xlsx", "parquet"}

// MaxUploadNameChars caps an attached file's name.
const MaxUploadNameChars = 128

var uploadNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// UploadError is why an attached file was refused, in words for the reader.
type UploadError struct {
	Name, Reason string
}

func (e *UploadError) Error() string { return fmt.Sprintf("file %q: %s", e.Name, e.Reason) }

// CheckUpload checks one attached file against the upload rules and returns its type (its
// extension, lower case): the name is [A-Za-z0-9._-]+, at most 128 characters, does not start
// with '.' (nor is it "." or ".."), is no Windows device name (CheckName), and has an extension
// among allowed; and the bytes are what the extension says: xlsx is a zip holding
// [Content_Types].xml, csv/tsv/txt/json are UTF-8 text (json also parses), parquet has its magic
// at both ends. It never trusts the name beyond that. That two names of one session differ in
// more than case is the caller's to check (SameName).
func CheckUpload(name string, data []byte, allowed []string) (string, error) {
	refuse := func(format string, a ...any) (string, error) {
		shown := name
		if utf8.RuneCountInString(shown) > MaxUploadNameChars {
			shown = string([]rune(shown)[:MaxUploadNameChars]) + "…"
		}
		return "", &UploadError{Name: shown, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case name == "" || name == "." || name == "..":
		return refuse("a file name may not be empty, . or ..")
	case utf8.RuneCountInString(name) > MaxUploadNameChars:
		return refuse("a file name may have at most %d characters", MaxUploadNameChars)
	case !uploadNameRE.MatchString(name):
		return refuse("a file name may only hold letters, digits, '.', '_' and '-'")
	case strings.HasPrefix(name, "."):
		// Hidden on Unix, and dropped or refused by some unzip tools.
		return refuse("a file name may not start with '.'")
	case windowsDevice(name):
		return refuse("%s is a device name on Windows, so an unpacked export could not hold the file; rename it", strings.ToUpper(deviceStem(name)))
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if !slices.Contains(allowed, ext) {
		return refuse("only %s files may be attached here", strings.Join(allowed, ", "))
	}
	switch ext {
	case "csv", "tsv", "txt":
		if !utf8.Valid(data) {
			return refuse("a .%s file must be UTF-8 text", ext)
		}
	case "json":
		if !utf8.Valid(data) || !json.Valid(data) {
			return refuse("a .json file must be valid JSON in UTF-8")
		}
	case "xlsx":
		z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return refuse("a .xlsx file must be an Office Open XML workbook (a zip), and this is not a zip")
		}
		if !slices.ContainsFunc(z.File, func(f *zip.File) bool { return f.Name == "[Content_Types].xml" }) {
			return refuse("a .xlsx file must be an Office Open XML workbook, and this zip has no [Content_Types].xml")
		}
	case "parquet":
		if len(data) < 12 || !bytes.HasPrefix(data, []byte("PAR1")) || !bytes.HasSuffix(data, []byte("PAR1")) {
			return refuse("a .parquet file must start and end with the PAR1 magic")
		}
	}
	return ext, nil
}

// windowsDevices are the names Windows keeps for devices, whatever the extension: "CON.csv" or
// "nul.tar.json" opens the device, not a file, so an export unpacked there would lose it.
var windowsDevices = []string{"CON", "PRN", "AUX", "NUL",
	"COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
	"LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"}

// deviceStem is the part of a name Windows compares with its device names: up to the first dot.
func deviceStem(name string) string {
	stem, _, _ := strings.Cut(name, ".")
	return stem
}

func windowsDevice(name string) bool {
	stem := deviceStem(name)
	return slices.ContainsFunc(windowsDevices, func(d string) bool { return strings.EqualFold(d, stem) })
}

// SameName reports whether two attached files' names would be one file once unpacked on a
// file system that ignores case (Windows, macOS): names are ASCII, so that is ASCII case.
func SameName(a, b string) bool { return strings.EqualFold(a, b) }
