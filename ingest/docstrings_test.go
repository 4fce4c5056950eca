package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

const (
	popLoadset = "% POP_LOADSET Load an EEGLAB dataset file.\n%   EEG = pop_loadset('filename', name)\nfunction EEG = pop_loadset(varargin)\nEEG = [];\n"
	checkset   = "function [EEG, res] = eeg_checkset(EEG, varargin)\n%EEG_CHECKSET Check the consistency of a dataset.\n%   Fixes what it can.\nres = [];\nend\n\n" +
		"% Helper: the sampling rate.\nfunction r = srate(EEG)\nr = EEG.srate;\nend\n"
	runScript = "% RUN_PIPELINE Runs the whole pipeline.\n% In order.\nx = 1;\n"
)

func eeglabTrees(t *testing.T) *ingesttest.GitHubTrees {
	g := ingesttest.NewGitHubTrees(t)
	g.SetFile("sccn/eeglab", "develop", "functions/popfunc/pop_loadset.m", popLoadset)
	g.SetFile("sccn/eeglab", "develop", "functions/adminfunc/eeg_checkset.m", checkset)
	g.SetFile("sccn/eeglab", "develop", "run_pipeline.m", runScript)
	g.SetFile("sccn/eeglab", "develop", "tools/noop.m", "x = 1;\n")
	g.SetFile("sccn/eeglab", "develop", "README.md", "% not MATLAB\nfunction no\n")
	g.SetFile("sccn/eeglab", "develop", "sample_data/huge.m", "% Huge.\n"+strings.Repeat("x = 1;\n", 160000))
	return g
}

func eeglabCommunity(langs ...string) *config.Community {
	return &config.Community{ID: "eeglab", Docstrings: &config.Docstrings{Repos: []config.DocstringRepo{
		{Repo: "sccn/eeglab", Branch: "develop", Languages: langs}}}}
}

func docRows(t *testing.T, st *knowledge.Store, id string) [][]string {
	t.Helper()
	return published(t, st, id, `SELECT repo, file_path, language, symbol_name, symbol_type, docstring, COALESCE(line_number, 0), branch
		FROM docstrings ORDER BY repo, file_path, symbol_name`)
}

func TestDocstringsSyncMatlab(t *testing.T) {
	g := eeglabTrees(t)
	st := paperStore(t)
	clk := newPClock()
	d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, Token: "ghp_test", Now: clk.Now, Sleep: clk.Sleep})
	c := eeglabCommunity("matlab")
	res, err := d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 {
		t.Fatal(err, res.Failed)
	}
	want := [][]string{
		{"sccn/eeglab", "functions/adminfunc/eeg_checkset.m", "matlab", "eeg_checkset", "function", "EEG_CHECKSET Check the consistency of a dataset.\n  Fixes what it can.", "1", "develop"},
		{"sccn/eeglab", "functions/adminfunc/eeg_checkset.m", "matlab", "srate", "function", "Helper: the sampling rate.", "7", "develop"},
		{"sccn/eeglab", "functions/popfunc/pop_loadset.m", "matlab", "pop_loadset", "function", "POP_LOADSET Load an EEGLAB dataset file.\n  EEG = pop_loadset('filename', name)", "1", "develop"},
		{"sccn/eeglab", "run_pipeline.m", "matlab", "run_pipeline", "script", "RUN_PIPELINE Runs the whole pipeline.\nIn order.", "1", "develop"},
	}
	if d := cmp.Diff(want, docRows(t, st, "eeglab")); d != "" {
		t.Errorf("docstrings (-want +got):\n%s", d)
	}
	meta := published(t, st, "eeglab", `SELECT source_type, source_name, items_synced, last_sync_at FROM sync_metadata`)
	if d := cmp.Diff([][]string{{"docstrings", "sccn/eeglab:matlab", "4", "2025-06-02T02:00:00.000000+00:00"}}, meta); d != "" {
		t.Errorf("sync_metadata (-want +got):\n%s", d)
	}
	// One tree request with the API's headers and the token; the raw host gets no token and
	// only the .m files under the size cap (huge.m is over 1 MiB).
	var raw []string
	for _, r := range g.Requests() {
		switch r.Host {
		case "api":
			if r.Path != "/repos/sccn/eeglab/git/trees/develop" || r.Auth != "Bearer ghp_test" || r.Accept != "application/vnd.github+json" {
				t.Errorf("API request %+v", r)
			}
		case "raw":
			if r.Auth != "" {
				t.Errorf("raw request with %q", r.Auth)
			}
			raw = append(raw, r.Path)
		}
	}
	if g.Count("api") != 1 || len(raw) != 4 {
		t.Errorf("%d API and %d raw requests (%v), want 1 and 4", g.Count("api"), len(raw), raw)
	}
	if res.Items != 4 || res.Deleted != 0 {
		t.Errorf("result %+v", res)
	}

	// Next run: pop_loadset.m is gone, eeg_checkset.m lost its helper's help, run_pipeline.m
	// cannot be downloaded (its rows stay).
	g.RemoveFile("sccn/eeglab", "develop", "functions/popfunc/pop_loadset.m")
	g.SetFile("sccn/eeglab", "develop", "functions/adminfunc/eeg_checkset.m", strings.Replace(checkset, "% Helper: the sampling rate.\n", "", 1))
	g.FailRaw("run_pipeline.m", 500)
	res, err = d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 {
		t.Fatal(err, res.Failed)
	}
	want = [][]string{want[0], want[3]}
	if d := cmp.Diff(want, docRows(t, st, "eeglab")); d != "" {
		t.Errorf("after the change (-want +got):\n%s", d)
	}
	if res.Deleted != 2 {
		t.Errorf("deleted %d, want 2", res.Deleted)
	}

	// A truncated tree is not a complete listing: nothing is deleted.
	g.RemoveFile("sccn/eeglab", "develop", "functions/adminfunc/eeg_checkset.m")
	g.SetTruncated(true)
	if _, err := d.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, docRows(t, st, "eeglab")); d != "" {
		t.Errorf("after a truncated tree (-want +got):\n%s", d)
	}

	// The repository leaves the config: its rows go.
	c.Docstrings.Repos = nil
	res, err = d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || res.Deleted != 2 {
		t.Fatal(err, res)
	}
	if rows := docRows(t, st, "eeglab"); len(rows) != 0 {
		t.Errorf("rows of an unconfigured repo: %v", rows)
	}
}

func TestDocstringsTreeFailures(t *testing.T) {
	g := eeglabTrees(t)
	g.SetFile("other/repo", "main", "a.m", "% A.\nfunction a\n")
	st := paperStore(t)
	clk := newPClock()
	d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, Now: clk.Now, Sleep: clk.Sleep})
	c := &config.Community{ID: "x", Docstrings: &config.Docstrings{Repos: []config.DocstringRepo{
		{Repo: "sccn/eeglab", Branch: "no-such-branch", Languages: []string{"matlab"}},
		{Repo: "other/repo", Branch: "main", Languages: []string{"matlab"}},
	}}}
	// The rate limit is used up and resets in 10 minutes: the run waits for it (and a second).
	reset := clk.Now().Add(10 * time.Minute)
	g.Queue(ingesttest.CannedReply{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "60",
		"X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}, Body: `{"message":"API rate limit exceeded"}`})
	var waiting []time.Time
	res, err := d.Sync(context.Background(), c, RunOptions{}, func(p Progress) {
		if !p.Waiting.IsZero() {
			waiting = append(waiting, p.Waiting)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]time.Duration{10*time.Minute + time.Second}, clk.Waits()); d != "" {
		t.Errorf("waits (-want +got):\n%s", d)
	}
	if len(waiting) != 1 || !waiting[0].Equal(reset.Add(time.Second)) {
		t.Errorf("progress waiting %v, want until %v", waiting, reset.Add(time.Second))
	}
	// The missing branch fails its repo only.
	var se *HTTPStatusError
	if len(res.Failed) != 1 || res.Failed[0].Source != "sccn/eeglab" || !errors.As(res.Failed[0].Err, &se) || se.Status != 404 {
		t.Fatalf("failed = %v, want sccn/eeglab's 404", res.Failed)
	}
	if rows := docRows(t, st, "x"); len(rows) != 1 || rows[0][1] != "a.m" {
		t.Errorf("rows %v, want other/repo's a.m", rows)
	}

	// A reset more than 15 minutes away fails the repo, saying until when.
	far := clk.Now().Add(time.Hour)
	g.Queue(ingesttest.CannedReply{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset": strconv.FormatInt(far.Unix(), 10)}, Body: `{"message":"API rate limit exceeded"}`})
	c.Docstrings.Repos = c.Docstrings.Repos[1:]
	res, err = d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Err.Error() != "rate limited until "+far.UTC().Format(time.RFC3339) {
		t.Errorf("failed = %v", res.Failed)
	}
	// An empty repository (409) has nothing and fails nothing.
	g.EmptyRepo("empty/repo")
	c.Docstrings.Repos = []config.DocstringRepo{{Repo: "empty/repo", Branch: "main", Languages: []string{"matlab", "python"}}}
	res, err = d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 {
		t.Errorf("empty repo: %v %v", err, res.Failed)
	}
}

func TestDocstringsSyncPython(t *testing.T) {
	runner := pythonRunner(t)
	g := eeglabTrees(t)
	g.SetFile("sccn/eeglab", "develop", "py/eeglab/__init__.py", "\"\"\"EEGLAB in Python.\"\"\"\n")
	g.SetFile("sccn/eeglab", "develop", "py/eeglab/io.py", "\"\"\"Reading files.\"\"\"\n\n\nclass Reader:\n    \"\"\"Reads a set file.\"\"\"\n\n"+
		"    def read(self):\n        \"\"\"Read it all.\"\"\"\n\n\ndef io():\n    \"\"\"Same name as the module: the module keeps it.\"\"\"\n")
	g.SetFile("sccn/eeglab", "develop", "py/eeglab/broken.py", "def (:\n")
	st := paperStore(t)
	c := eeglabCommunity() // both languages, the default
	c.Docstrings.Repos[0].Languages = []string{"matlab", "python"}

	// Without a parser, Python fails and MATLAB does not.
	d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL})
	res, err := d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 1 || res.Failed[0].Source != "sccn/eeglab:python" {
		t.Fatalf("%v %v, want sccn/eeglab:python failed", err, res.Failed)
	}

	d = NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, Python: NewPythonExtractor(runner, nil)})
	res, err = d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 {
		t.Fatal(err, res.Failed)
	}
	got := published(t, st, "eeglab", `SELECT file_path, symbol_name, symbol_type, docstring, line_number FROM docstrings
		WHERE language = 'python' ORDER BY file_path, symbol_name`)
	want := [][]string{
		{"py/eeglab/__init__.py", "__init__", "module", "EEGLAB in Python.", "1"},
		{"py/eeglab/io.py", "Reader", "class", "Reads a set file.", "4"},
		{"py/eeglab/io.py", "io", "module", "Reading files.", "1"},
		{"py/eeglab/io.py", "read", "method", "Read it all.", "7"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("python docstrings (-want +got):\n%s", d)
	}
	meta := published(t, st, "eeglab", `SELECT source_name, items_synced FROM sync_metadata ORDER BY source_name`)
	if d := cmp.Diff([][]string{{"sccn/eeglab:matlab", "4"}, {"sccn/eeglab:python", "4"}}, meta); d != "" {
		t.Errorf("sync_metadata (-want +got):\n%s", d)
	}
}

func TestDocstringsIncremental(t *testing.T) {
	g := eeglabTrees(t)
	st := paperStore(t)
	cacheDir := t.TempDir()
	c := eeglabCommunity("matlab")
	clk := newPClock()
	newSource := func(st *knowledge.Store) *Docstrings {
		return NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, CacheDir: cacheDir, Now: clk.Now, Sleep: clk.Sleep})
	}
	d := newSource(st)
	sync := func(d *Docstrings, full bool) (api, raw int, treeStatus int) {
		t.Helper()
		g.ResetRequests()
		res, err := d.Sync(context.Background(), c, RunOptions{Full: full}, nil)
		if err != nil || len(res.Failed) != 0 {
			t.Fatal(err, res.Failed)
		}
		for _, r := range g.Requests() {
			if r.Host == "api" {
				treeStatus = r.Status
			}
		}
		return g.Count("api"), g.Count("raw"), treeStatus
	}
	meta := func() string {
		return published(t, st, "eeglab", `SELECT items_synced FROM sync_metadata WHERE source_name = 'sccn/eeglab:matlab'`)[0][0]
	}
	if api, raw, _ := sync(d, false); api != 1 || raw != 4 {
		t.Fatalf("first run: %d API and %d raw requests, want 1 and 4", api, raw)
	}
	first := docRows(t, st, "eeglab")

	// Nothing changed: one conditional tree request answered 304, no download, same rows.
	if api, raw, status := sync(d, false); api != 1 || raw != 0 || status != 304 {
		t.Errorf("unchanged: %d API (status %d) and %d raw requests, want 1 (304) and 0", api, status, raw)
	}
	if d := cmp.Diff(first, docRows(t, st, "eeglab")); d != "" {
		t.Errorf("rows after a 304 (-want +got):\n%s", d)
	}
	if m := meta(); m != "4" {
		t.Errorf("items_synced %s after a 304, want 4", m)
	}

	// One file changed: only it is downloaded again, and its new help is stored.
	g.SetFile("sccn/eeglab", "develop", "run_pipeline.m", "% RUN_PIPELINE Runs it all, now faster.\nx = 1;\n")
	if api, raw, status := sync(d, false); api != 1 || raw != 1 || status != 200 {
		t.Errorf("one change: %d API (status %d) and %d raw requests, want 1 (200) and 1", api, status, raw)
	}
	got := published(t, st, "eeglab", `SELECT docstring FROM docstrings WHERE file_path = 'run_pipeline.m'`)
	if got[0][0] != "RUN_PIPELINE Runs it all, now faster." {
		t.Errorf("changed file's docstring %q", got[0][0])
	}
	// A file that failed is tried again the next run, though its blob did not change.
	g.FailRaw("tools/noop.m", 500)
	g.SetFile("sccn/eeglab", "develop", "tools/noop.m", "y = 2;\n")
	if _, raw, _ := sync(d, false); raw != 1 {
		t.Errorf("%d raw requests, want 1: the changed file", raw)
	}
	g.FailRaw("tools/noop.m", 0)
	if _, raw, _ := sync(d, false); raw != 1 {
		t.Errorf("%d raw requests, want 1: the file that failed", raw)
	}
	if m := meta(); m != "4" {
		t.Errorf("items_synced %s, want 4", m)
	}

	// A full run downloads everything.
	if _, raw, _ := sync(d, true); raw != 4 {
		t.Errorf("full run: %d raw requests, want 4", raw)
	}
	// A database that does not agree with the cache (another data directory: no
	// sync_metadata) makes the cache useless: everything is asked for again, unconditionally.
	other := paperStore(t)
	if _, raw, status := sync(newSource(other), false); raw != 4 || status != 200 {
		t.Errorf("fresh database: %d raw requests (tree %d), want 4 (200)", raw, status)
	}
}

// A 200 tree answer that is not a tree ({} or an error message) must fail the repository: read
// as an empty, complete tree it would delete every symbol of the repository.
func TestDocstringsTreeThatIsNotATree(t *testing.T) {
	for _, body := range []string{
		`{}`,
		`{"message":"Server Error"}`,
		`{"message":"Not Found","documentation_url":"https://docs.github.com/rest/git/trees#get-a-tree","status":"404"}`,
		`{"sha":"9fb037999f264ba9a7fc6274d15fa3ae2ab98312","tree":null,"truncated":false}`,
		`{"tree":[],"truncated":false}`,
	} {
		for _, full := range []bool{false, true} {
			t.Run(body+fmt.Sprint(full), func(t *testing.T) {
				g := eeglabTrees(t)
				st := paperStore(t)
				clk := newPClock()
				d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, CacheDir: t.TempDir(), Now: clk.Now, Sleep: clk.Sleep})
				c := eeglabCommunity("matlab")
				if _, err := d.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
					t.Fatal(err)
				}
				before := docRows(t, st, "eeglab")
				g.Queue(ingesttest.CannedReply{Status: 200, Body: body})
				res, err := d.Sync(context.Background(), c, RunOptions{Full: full}, nil)
				if err != nil || len(res.Failed) != 1 || res.Failed[0].Source != "sccn/eeglab" || res.Deleted != 0 {
					t.Errorf("err %v, result %+v; want the repository failed and nothing deleted", err, res)
				}
				if d := cmp.Diff(before, docRows(t, st, "eeglab")); d != "" || len(before) != 4 {
					t.Errorf("rows (-before +after):\n%s", d)
				}
			})
		}
	}
}

// A repository dropped from the config loses its rows, but its sync_metadata rows and cache
// file stay: named again, the cache must not be trusted (its tree would answer 304 and every
// file count as stored), or the repository comes back with no rows.
func TestDocstringsRepoDroppedAndNamedAgain(t *testing.T) {
	g := eeglabTrees(t)
	st := paperStore(t)
	clk := newPClock()
	d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, CacheDir: t.TempDir(), Now: clk.Now, Sleep: clk.Sleep})
	c := eeglabCommunity("matlab")
	if _, err := d.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	first := docRows(t, st, "eeglab")
	repos := c.Docstrings.Repos
	c.Docstrings.Repos = nil
	if res, err := d.Sync(context.Background(), c, RunOptions{}, nil); err != nil || res.Deleted != 4 {
		t.Fatalf("dropped: %+v, %v; want its 4 rows deleted", res, err)
	}
	c.Docstrings.Repos = repos
	g.ResetRequests()
	res, err := d.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 || res.Items != 4 {
		t.Errorf("named again: %+v, %v; want its 4 symbols stored again", res, err)
	}
	if d := cmp.Diff(first, docRows(t, st, "eeglab")); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	for _, r := range g.Requests() {
		if r.Host == "api" && r.Status != 200 {
			t.Errorf("tree answered %d, want an unconditional 200", r.Status)
		}
	}
	if n := g.Count("raw"); n != 4 {
		t.Errorf("%d raw downloads, want all 4 files", n)
	}
	// The cache written by that run is good again: the next run is a 304 and no download.
	g.ResetRequests()
	if _, err := d.Sync(context.Background(), c, RunOptions{}, nil); err != nil || g.Count("raw") != 0 {
		t.Errorf("after: %v, %d raw downloads, want none", err, g.Count("raw"))
	}
}
