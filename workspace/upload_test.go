package workspace

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func zipWith(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, n := range names {
		w, err := z.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("<x/>"))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCheckUpload(t *testing.T) {
	xlsx := zipWith(t, "[Content_Types].xml", "xl/workbook.xml")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	cases := []struct {
		name, file string
		data       []byte
		allowed    []string
		want       string // the type, or "" for a refusal
		reason     string // part of the refusal
	}{
		{"csv", "scores.csv", []byte("a,b\n1,2\n"), UploadTypes, "csv", ""},
		{"upper-case extension", "DATA.TSV", []byte("a\tb\n"), UploadTypes, "tsv", ""},
		{"json", "meta.json", []byte(`{"a": [1, 2]}`), UploadTypes, "json", ""},
		{"xlsx", "book.xlsx", xlsx, UploadTypes, "xlsx", ""},
		{"parquet", "t.parquet", []byte("PAR1....data....PAR1"), UploadTypes, "parquet", ""},
		{"renamed png", "book.xlsx", png, UploadTypes, "", "not a zip"},
		{"zip without content types", "book.xlsx", zipWith(t, "a.txt"), UploadTypes, "", "[Content_Types].xml"},
		{"invalid utf-8 csv", "x.csv", []byte("a,\xff\n"), UploadTypes, "", "UTF-8"},
		{"bad json", "x.json", []byte(`{"a":`), UploadTypes, "", "valid JSON"},
		{"parquet without end magic", "t.parquet", []byte("PAR1............"), UploadTypes, "", "PAR1"},
		{"traversal", "../x.csv", []byte("a"), UploadTypes, "", "letters, digits"},
		{"slash", "a/x.csv", []byte("a"), UploadTypes, "", "letters, digits"},
		{"dot", ".", nil, UploadTypes, "", "empty, . or .."},
		{"dotdot", "..", nil, UploadTypes, "", "empty, . or .."},
		{"empty", "", nil, UploadTypes, "", "empty"},
		{"long", strings.Repeat("a", 125) + ".csv", []byte("a"), UploadTypes, "", "at most 128"},
		{"space", "my file.csv", []byte("a"), UploadTypes, "", "letters, digits"},
		{"not allowed here", "t.parquet", []byte("PAR1....PAR1"), []string{"csv"}, "", "only csv files"},
		{"no extension", "README", []byte("a"), UploadTypes, "", "only csv"},
		// Names an unpacked export could not hold (issue 22, item 16).
		{"a device name", "CON.csv", []byte("a"), UploadTypes, "", "CON is a device name on Windows"},
		{"a device name in lower case", "nul.csv", []byte("a"), UploadTypes, "", "NUL is a device name on Windows"},
		{"a device name before two dots", "aux.tar.json", []byte("1"), UploadTypes, "", "AUX is a device name"},
		{"a numbered port", "Com7.tsv", []byte("a"), UploadTypes, "", "COM7 is a device name"},
		{"a printer port", "LPT1.txt", []byte("a"), UploadTypes, "", "LPT1 is a device name"},
		{"a name that only starts like a device", "CONFIG.csv", []byte("a"), UploadTypes, "csv", ""},
		{"a device name after the stem", "data.con.csv", []byte("a"), UploadTypes, "csv", ""},
		{"a leading dot", ".hidden.csv", []byte("a"), UploadTypes, "", "may not start with '.'"},
		{"only an extension", ".csv", []byte("a"), UploadTypes, "", "may not start with '.'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckUpload(tc.file, tc.data, tc.allowed)
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Errorf("CheckUpload = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var ue *UploadError
			if !errors.As(err, &ue) || !strings.Contains(ue.Reason, tc.reason) {
				t.Errorf("CheckUpload = %q, %v; want a refusal about %q", got, err, tc.reason)
			}
			if err != nil && len(err.Error()) > 400 {
				t.Errorf("the refusal is %d bytes long", len(err.Error()))
			}
		})
	}
}

// FuzzCheckUpload: no name or content panics, an accepted name is a plain file name (no dot
// first, no device name), and an error message stays short whatever the name.
func FuzzCheckUpload(f *testing.F) {
	f.Add("a.csv", []byte("x"))
	f.Add("b.xlsx", []byte("PK\x03\x04"))
	f.Add("../../etc/passwd.txt", []byte(""))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		typ, err := CheckUpload(name, data, UploadTypes)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("a %d-byte error for a %d-byte name", len(err.Error()), len(name))
			}
			return
		}
		if strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") || windowsDevice(name) || typ == "" {
			t.Fatalf("accepted %q as %q", name, typ)
		}
	})
}

func TestSameName(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"a.csv", "a.csv", true}, {"Data.CSV", "data.csv", true}, {"a.csv", "b.csv", false}, {"a.csv", "a.tsv", false},
	} {
		if got := SameName(tc.a, tc.b); got != tc.want {
			t.Errorf("SameName(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
