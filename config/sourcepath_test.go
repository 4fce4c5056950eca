package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/limits"
)

// TestSourcePathSize: a source_path over the size a fetched document may have is refused at
// load (the testdata cases cover the other source_path rules; a 4 MiB file is made here).
func TestSourcePathSize(t *testing.T) {
	for _, size := range []int{int(limits.MaxDocumentBytes), int(limits.MaxDocumentBytes) + 1} {
		dir := filepath.Join(t.TempDir(), "demo")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := "id: demo\nname: Demo\ndescription: d\ndocumentation:\n  - title: Big\n    url: https://example.org/big\n    source_path: big.md\n"
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "big.md"), []byte(strings.Repeat("a", size)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), filepath.Dir(dir), Options{})
		tooBig := size > int(limits.MaxDocumentBytes)
		if (err != nil) != tooBig || (tooBig && !strings.Contains(err.Error(), "documentation[0].source_path: source_path \"big.md\" is 4194305 bytes, over the 4 MiB")) {
			t.Errorf("%d bytes: %v", size, err)
		}
	}
}

// TestPreloadBudgetNotice: loading warns when the preloads may take more than the prompt's
// budget: fetched ones count the most a document may bring, source_path ones their size.
func TestPreloadBudgetNotice(t *testing.T) {
	cases := []struct {
		name  string
		docs  string
		small bool // the source_path file is small
		want  string
	}{
		{"three fetched fit", docsYAML("a", "b", "c"), false, ""},
		{"a fourth fetched one may move", docsYAML("a", "b", "c", "d"), false, "these would then be offered on demand instead: d (https://example.org/d)"},
		{"a small guide first leaves room", "  - title: g\n    url: https://example.org/g\n    source_path: g.md\n    preload: true\n" + docsYAML("a", "b", "c"), true, ""},
		{"a large guide takes a place", "  - title: g\n    url: https://example.org/g\n    source_path: g.md\n    preload: true\n" + docsYAML("a", "b", "c"), false, "offered on demand instead: c (https://example.org/c)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "demo")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			guide := strings.Repeat("x", int(limits.MaxDocumentChars)+10)
			if tc.small {
				guide = "# Guide\n"
			}
			cfg := "id: demo\nname: Demo\ndescription: d\ndocumentation:\n" + tc.docs
			if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "g.md"), []byte(guide), 0o644); err != nil {
				t.Fatal(err)
			}
			set, err := Load(context.Background(), filepath.Dir(dir), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, n := range set.Notices {
				if strings.Contains(n.Msg, "preloaded documents may take more") {
					got = n.Msg
				}
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("notice %q, want one with %q", got, tc.want)
			}
		})
	}
}

func docsYAML(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("  - title: " + n + "\n    url: https://example.org/" + n + "\n    source_url: https://example.org/" + n + ".md\n    preload: true\n")
	}
	return b.String()
}

// TestDocsPlaceholdersNotice: a community whose own prompt leaves out both documentation
// placeholders is warned that its preloads never reach the model; the default prompt and a
// prompt with either placeholder are not.
func TestDocsPlaceholdersNotice(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		warn   bool
	}{
		{"", false},
		{"system_prompt: \"You are {name}. {page_context_section}\"\n", true},
		{"system_prompt: \"You are {name}. {preloaded_docs_section}\"\n", false},
		{"system_prompt: \"You are {name}. {available_docs_section}\"\n", false},
	} {
		dir := filepath.Join(t.TempDir(), "demo")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := "id: demo\nname: Demo\ndescription: d\n" + tc.prompt + "documentation:\n" + docsYAML("a")
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := Load(context.Background(), filepath.Dir(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		for _, n := range set.Notices {
			warned = warned || strings.Contains(n.Msg, "preloaded documents never reach the model")
		}
		if warned != tc.warn {
			t.Errorf("%q: warned %v, want %v", tc.prompt, warned, tc.warn)
		}
	}
}
