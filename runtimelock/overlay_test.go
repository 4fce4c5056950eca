package runtimelock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	goldenfile "github.com/osc-assistant/assistant/tests/golden"
)

// golden compares got with testdata/<name>, or rewrites the file under -update (tests/golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", filepath.FromSlash(name)), got)
}

// TestDecodeGolden decodes every testdata/overlay/*.json. An accepted overlay's golden file is
// "ok" and its rendering; a refused one's lists every problem, one a line.
func TestDecodeGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/overlay/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ov, err := Decode(data)
			var got strings.Builder
			if err != nil {
				if ov != nil {
					t.Errorf("Decode returned an overlay with error %v", err)
				}
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("error %T is not a *DecodeError: %v", err, err)
				}
				for _, p := range de.Problems {
					got.WriteString(p.String() + "\n")
				}
			} else {
				got.WriteString("ok\n")
				got.Write(ov.Render())
			}
			if strings.HasPrefix(name, "ok_") != (err == nil) {
				t.Errorf("case %s: error = %v", name, err)
			}
			golden(t, "overlay/"+name+".golden", []byte(got.String()))
		})
	}
}

func TestDecodeKeepsFileOrder(t *testing.T) {
	data, err := os.ReadFile("testdata/overlay/ok_two_packages.json")
	if err != nil {
		t.Fatal(err)
	}
	ov, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range ov.Packages {
		keys = append(keys, p.Key)
	}
	if diff := cmp.Diff([]string{"zarr", "eegprep-lean"}, keys); diff != "" {
		t.Errorf("package order (-want +got):\n%s", diff)
	}
	p, ok := ov.Package("eegprep-lean")
	want := Package{
		Key: "eegprep-lean", Name: "eegprep-lean", Version: "0.1.0.dev3",
		FileName: "eegprep_lean-0.1.0.dev3-py3-none-any.whl", PackageType: "package", InstallDir: "site",
		SHA256:  "12a07ac4a3bcf42e6de069e6033a683d5b3ab77920182cec15cdc3a4f5b15331",
		Imports: []string{"eegprep_lean"}, Depends: []string{"matplotlib", "numpy", "zarr"},
	}
	if !ok {
		t.Fatal(`Package("eegprep-lean") not found`)
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	if _, ok := ov.Package("eegprep_lean"); ok {
		t.Error(`Package looks up by exact key, but found "eegprep_lean"`)
	}
}

func TestCanonicalName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"zarr", "zarr"},
		{"eegprep_lean", "eegprep-lean"},
		{"Google.CRC32C", "google-crc32c"},
		{"ruamel.yaml", "ruamel-yaml"},
		{"a-_.-b", "a-b"},
		{"__x__", "-x-"},
		{"NumPy", "numpy"},
		{"", ""},
	} {
		if got := CanonicalName(tc.in); got != tc.want {
			t.Errorf("CanonicalName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIsWheelName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"zarr-3.4.0-py3-none-any.whl", true},
		{"x-1.0-1-py3-none-any.whl", true},
		{"eegprep_lean-0.1.0.dev3-py3-none-any.whl", true},
		{"x-1.0+local-py3-none-any.whl", true},
		{"../x-1.0-py3-none-any.whl", false},
		{"wheels/x-1.0-py3-none-any.whl", false},
		{"numpy-2.2.5-cp313-cp313-pyemscripten_2025_0_wasm32.whl", false},
		{"pytz-2025.2-py2.py3-none-any.whl", false},
		{"x-1.0-py3-none-any.whl\n", false},
		{"x-1.0-py3-none-any.zip", false},
		{"-py3-none-any.whl", false},
	} {
		if got := IsWheelName(tc.name); got != tc.want {
			t.Errorf("IsWheelName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPyRepr pins pyRepr to what Python 3.13's repr() prints for each input.
func TestPyRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"zarr", `'zarr'`},
		{"it's", `"it's"`},
		{`it's "x"`, `'it\'s "x"'`},
		{`say "hi"`, `'say "hi"'`},
		{`back\slash`, `'back\\slash'`},
		{"tab\tnl\ncr\r", `'tab\tnl\ncr\r'`},
		{"\x00\x1f\x7f", `'\x00\x1f\x7f'`},
		{"café", `'café'`},
		{"\u00a0\u00ad", `'\xa0\xad'`},
		{"\u2028", `'\u2028'`},
		{"𝔸", `'𝔸'`},
		{"\U000e0001", `'\U000e0001'`},
		{"", `''`},
	} {
		if got := pyRepr(tc.in); got != tc.want {
			t.Errorf("pyRepr(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestRenderMatchesPython pins the renderer to bytes Python 3.13 produced with
// json.dumps(obj, indent=2) + "\n" for the same overlay (testdata/render_python.json).
func TestRenderMatchesPython(t *testing.T) {
	ov := &Overlay{Packages: []Package{
		{
			Key: "z-pkg", Name: "Z_pkg", Version: "2.0", FileName: "z_pkg-2.0-py3-none-any.whl",
			PackageType: "package", InstallDir: "site", SHA256: strings.Repeat("ab", 32),
			Imports: []string{}, Depends: []string{"a", "numpy"},
		},
		{
			Key: "a", Name: "a", Version: "1.0<&>", FileName: "a-1.0-py3-none-any.whl",
			PackageType: "package", InstallDir: "site", SHA256: strings.Repeat("0", 64),
			Imports: []string{"a", "é", "𝔸", "\"q\"\\", "\b\f\n\r\t\x01\x7f", "\u2028"}, Depends: nil,
		},
	}}
	want, err := os.ReadFile("testdata/render_python.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(ov.Render())); diff != "" {
		t.Errorf("Render differs from Python's json.dumps (-python +go):\n%s", diff)
	}
	empty := &Overlay{}
	if got, want := string(empty.Render()), "{\n  \"packages\": {}\n}\n"; got != want {
		t.Errorf("empty overlay renders as %q, want %q", got, want)
	}
}

func TestCloneIsDeep(t *testing.T) {
	ov := &Overlay{Packages: []Package{{Key: "a", Imports: []string{"a"}, Depends: []string{"b"}}}}
	c := ov.Clone()
	c.Packages[0].Imports[0] = "changed"
	c.Packages[0].Depends[0] = "changed"
	c.Packages[0].Key = "changed"
	if diff := cmp.Diff(&Overlay{Packages: []Package{{Key: "a", Imports: []string{"a"}, Depends: []string{"b"}}}}, ov); diff != "" {
		t.Errorf("changing a clone changed the original (-want +got):\n%s", diff)
	}
}

// TestSyntaxMessages: the strict parser's syntax errors read as the ones encoding/json's
// decoder gave before overlays were parsed by package strictjson, message and position (the
// wants are that decoder's output).
func TestSyntaxMessages(t *testing.T) {
	const at = "invalid JSON at line 1, column "
	cases := []struct{ in, want string }{
		{"", at + "1: unexpected end of input"},
		{" \n", at + "1: unexpected end of input"},
		{`{"a" x`, at + "6: invalid character 'x' after object key"},
		{`{"a":`, at + "6: unexpected end of input"},
		{`{"a":x}`, at + "6: invalid character 'x' looking for beginning of value"},
		{`{"a":tru`, at + "6: unexpected end of input"},
		{`{"a":trux}`, at + "6: invalid character 'x' in literal true (expecting 'e')"},
		{`{"a":-}`, at + "6: invalid character '}' in numeric literal"},
		{`{"a":1.x}`, at + "6: invalid character 'x' after decimal point in numeric literal"},
		{`{"a":1e+}`, at + "6: invalid character '}' in exponent of numeric literal"},
		{`{"a":01}`, at + "7: invalid character '1' after object key:value pair"},
		{`[1 2]`, at + "4: invalid character '2' after array element"},
		{`[1,]`, at + "4: invalid character ']' looking for beginning of value"},
		{`{"a":1,}`, at + "8: invalid character '}' looking for beginning of object key string"},
		{`{,}`, at + "2: invalid character ','"},
		{"{\"a\":\"b\nc\"}", at + `6: invalid character '\n' in string literal`},
		{`{"a":"x\"\\\q"}`, at + "6: invalid character 'q' in string escape code"},
		{`{"a":"\u12x4"}`, at + `6: invalid character 'x' in \u hexadecimal character escape`},
		{`{"a":"\u12`, at + "6: unexpected end of input"},
		{`{"a":"abc`, at + "6: unexpected end of input"},
		{`{}}`, at + "3: invalid character '}' looking for beginning of value"},
		{`{} {}`, at + "5: unexpected data after the top-level value"},
		{`{}x`, at + "3: invalid character 'x' looking for beginning of value"},
		{`{} "a" x`, at + "7: unexpected data after the top-level value"},
		{`{},`, at + "3: invalid character ',' looking for beginning of value"},
		{"\ufeff{}", at + "1: invalid character 'ï' looking for beginning of value"},
		{`{"a":'b'}`, at + `6: invalid character '\'' looking for beginning of value`},
		{`{"a":NaN}`, at + "6: invalid character 'N' looking for beginning of value"},
		{"{\"a\":\"\xff\"}", "the overlay is not valid UTF-8"},
	}
	for _, tc := range cases {
		_, err := Decode([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%q):\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}
