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
// extension, lower case): the name is [A-Za-z0-9._-]+, at most 128 characters, not "." or "..",
// with an extension among allowed; and the bytes are what the extension says: xlsx is a zip
// holding [Content_Types].xml, csv/tsv/txt/json are UTF-8 text (json also parses), parquet has
// its magic at both ends. It never trusts the name beyond that.
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
