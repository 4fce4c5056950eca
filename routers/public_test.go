package routers

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/osc-assistant/assistant/config"
)

// uploadsCommunity is a community with a python client tool and the given runtime.python.uploads
// lines (indented under uploads:), or no uploads block when lines is "".
func uploadsCommunity(id, lines string) string {
	y := "id: " + id + "\nname: " + id + "\ndescription: d\n" +
		"extensions:\n  client_tools:\n    - name: execute_code\n      runtime: python\n      description: Runs Python.\n" +
		"runtime:\n  python:\n    pyodide_version: \"0.29.5\"\n"
	if lines != "" {
		y += "    uploads:\n" + lines
	}
	return y
}

// TestPublicConfigUploads: GET /{c} reports runtime.python.uploads with every key, defaults
// filled, so a widget can decide on a file picker from the config alone.
func TestPublicConfigUploads(t *testing.T) {
	dir := t.TempDir()
	configs := map[string]string{
		"absent":  uploadsCommunity("absent", ""),
		"enabled": uploadsCommunity("enabled", "      enabled: true\n"),
		"custom":  uploadsCommunity("custom", "      enabled: true\n      max_file_mb: 5\n      max_session_mb: 20\n      max_files: 3\n      types: [parquet, csv]\n"),
	}
	for id, y := range configs {
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id, "config.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := config.Load(context.Background(), dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo"}, Getenv: func(string) string { return "" }, Communities: set})
	if err != nil {
		t.Fatal(err)
	}
	defaults := []string{"csv", "tsv", "txt", "json", "xlsx"}
	for _, tc := range []struct {
		id   string
		want map[string]any
	}{
		{"absent", map[string]any{"enabled": false, "max_file_mb": 25.0, "max_session_mb": 100.0, "max_files": 16.0, "types": defaults}},
		{"enabled", map[string]any{"enabled": true, "max_file_mb": 25.0, "max_session_mb": 100.0, "max_files": 16.0, "types": defaults}},
		{"custom", map[string]any{"enabled": true, "max_file_mb": 5.0, "max_session_mb": 20.0, "max_files": 3.0, "types": []string{"parquet", "csv"}}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			rec := get(t, s, "/"+tc.id)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var body struct {
				Runtime struct {
					Python struct {
						Uploads map[string]json.RawMessage `json:"uploads"`
					} `json:"python"`
				} `json:"runtime"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			got := body.Runtime.Python.Uploads
			if len(got) != len(tc.want) {
				t.Errorf("uploads has keys %v, want exactly %v", keysOf(got), keysOf(tc.want))
			}
			for k, want := range tc.want {
				raw, ok := got[k]
				if !ok {
					t.Errorf("uploads.%s missing", k)
					continue
				}
				// Decode into the want's own type, so a list stays a list and a number a number.
				v := reflect.New(reflect.TypeOf(want))
				if err := json.Unmarshal(raw, v.Interface()); err != nil {
					t.Errorf("uploads.%s = %s: %v", k, raw, err)
					continue
				}
				if !reflect.DeepEqual(v.Elem().Interface(), want) {
					t.Errorf("uploads.%s = %s, want %v", k, raw, want)
				}
			}
		})
	}
}

// TestShippedCommunitiesUploadsOff: every shipped community that has runtime.python keeps
// uploads at the default, off.
func TestShippedCommunitiesUploadsOff(t *testing.T) {
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range set.Communities {
		if c.Runtime == nil || c.Runtime.Python == nil {
			continue
		}
		n++
		if c.Runtime.Python.Uploads.Enabled {
			t.Errorf("%s: runtime.python.uploads.enabled is true; shipped communities keep uploads off", c.ID)
		}
	}
	if n == 0 {
		t.Fatal("no shipped community has runtime.python")
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
