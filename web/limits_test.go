package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/web/osa"
)

// scripts are the page's and the runtime's code, with the osa module both runtimes run.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range Names() {
		if strings.HasSuffix(n, ".js") || strings.HasSuffix(n, ".mjs") || strings.HasSuffix(n, ".py") {
			a, _ := Lookup(n)
			out[n] = string(a.Data)
		}
	}
	if len(out) != 5 || out["osa.py"] != string(osa.Module) {
		t.Fatalf("scripts: %v", slices.Sorted(maps.Keys(out)))
	}
	return out
}

// TestNoCapsInTheScripts: the page and the runtime keep no copy of a cap of package limits;
// they read them from the page's config (PageLimits). A cap's value written as a number in
// their code (16384, 2_000_000, 10 << 20, ...) is a copy that would drift.
func TestNoCapsInTheScripts(t *testing.T) {
	l := PageLimits()
	var values []int
	v := reflect.ValueOf(l)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Int && f.Int() >= 100 {
			values = append(values, int(f.Int()))
		}
	}
	d := reflect.ValueOf(l.Defaults)
	for i := range d.NumField() {
		if n := int(d.Field(i).Int()); n >= 100 {
			values = append(values, n)
		}
	}
	for name, src := range scripts(t) {
		// Numbers in code: comments and the osa module's docstring are prose (see
		// TestOsaDocstring).
		code := regexp.MustCompile(`(?m)//.*$|#.*$`).ReplaceAllString(src, "")
		if name == "osa.py" {
			code = code[strings.Index(code, `"""`+"\n\n")+3:]
		}
		for _, n := range slices.Compact(slices.Sorted(slices.Values(values))) {
			forms := []string{regexp.QuoteMeta(underscored(n)), fmt.Sprint(n)}
			if n%(1<<20) == 0 {
				forms = append(forms, fmt.Sprintf(`%d\s*<<\s*20`, n>>20), fmt.Sprintf(`%d\s*\*\s*1024\s*\*\s*1024`, n>>20))
			}
			if n%1000 == 0 {
				forms = append(forms, fmt.Sprintf(`%de%d`, n/1000, 3))
			}
			re := regexp.MustCompile(`(^|[^\w.])(` + strings.Join(forms, "|") + `)($|[^\w])`)
			if m := re.FindString(code); m != "" {
				t.Errorf("%s has the cap %d written out (%q): read it from the page config's limits", name, n, strings.TrimSpace(m))
			}
		}
		for _, root := range limits.SealedImportRoots {
			if strings.Contains(code, `"`+root+`", "`) {
				t.Errorf("%s lists the sealed import roots: read them from the page config's limits", name)
			}
		}
	}
}

func underscored(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte('_')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TestScriptsReadKnownLimits: every cap the scripts read from the page's limits (caps.x in
// JavaScript, caps["x"] in Python, def.x for limits.defaults) is one PageLimits has, so none is undefined.
func TestScriptsReadKnownLimits(t *testing.T) {
	data, err := json.Marshal(PageLimits())
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	var defaults map[string]json.RawMessage
	if err := json.Unmarshal(keys["defaults"], &defaults); err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`\bcaps(?:\.([a-z_]+)|\["([a-z_]+)"\])|\bdef\.([a-z_]+)`)
	used := map[string]bool{}
	for name, src := range scripts(t) {
		for _, m := range read.FindAllStringSubmatch(src, -1) {
			key := m[1] + m[2]
			if m[3] != "" {
				if _, ok := defaults[m[3]]; !ok {
					t.Errorf("%s reads limits.defaults.%s, which the page config lacks", name, m[3])
				}
				continue
			}
			if _, ok := keys[key]; !ok {
				t.Errorf("%s reads limits.%s, which the page config lacks", name, key)
			}
			used[key] = true
		}
	}
	for key := range keys {
		if !used[key] && key != "defaults" {
			t.Errorf("the page config's limits.%s is read by no script", key)
		}
	}
}

// TestPageLimits: the page gets limits' values.
func TestPageLimits(t *testing.T) {
	l := PageLimits()
	if l.SavedFileBytes != 10<<20 || l.SavedBytes != 25<<20 || l.SavedFiles != limits.MaxSavedFiles ||
		l.StdoutChars != int(limits.MaxStdoutChars) || l.ImageBytes != int(limits.MaxImageBytes) ||
		l.CapturedChars != int(limits.MaxCapturedChars) || l.RunsPerReply != limits.MaxBrowserRunsPerReply ||
		!slices.Equal(l.SealedImportRoots, limits.SealedImportRoots) || l.Defaults.ExecSeconds != limits.Runtime.ExecSeconds.Default {
		t.Errorf("PageLimits() = %+v", l)
	}
	l.SealedImportRoots[0] = "changed"
	if limits.SealedImportRoots[0] == "changed" {
		t.Error("PageLimits shares limits.SealedImportRoots")
	}
}

// TestOsaDocstring: what help(osa) promises is limits' workspace caps.
func TestOsaDocstring(t *testing.T) {
	want := fmt.Sprintf("Each run may save at most %d files, %d MiB each and %d MiB in all",
		limits.MaxSavedFiles, limits.MaxSavedFileBytes>>20, limits.MaxSavedBytes>>20)
	doc := strings.Join(strings.Fields(string(osa.Module[:strings.Index(string(osa.Module), `"""`+"\n\n")])), " ")
	if !strings.Contains(doc, want) {
		t.Errorf("the osa module's docstring does not say %q:\n%s", want, doc)
	}
}
