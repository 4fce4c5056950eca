package sandbox

import (
	"context"
	"strings"
	"testing"
)

// TestRunSeesAttachedFiles: a run reads the reader's attached files at /data, cannot change
// them, and sees nothing there without them; a name that is not a plain file name is refused.
func TestRunSeesAttachedFiles(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	src := `import csv, os
print(sorted(os.listdir("/data")))
with open("/data/scores.csv", newline="") as f:
    rows = list(csv.DictReader(f))
print(sum(int(r["score"]) for r in rows), rows[0]["subject"])
for attempt in (lambda: open("/data/scores.csv", "a"), lambda: open("/data/new.txt", "w"), lambda: os.remove("/data/notes.txt")):
    try:
        attempt()
        print("changed")
    except OSError as e:
        print("refused", type(e).__name__)
`
	res, err := e.Run(ctx, Request{Source: src, Data: map[string][]byte{"scores.csv": []byte("subject,score\ns01,3\ns02,4\n"), "notes.txt": []byte("hi")}})
	if err != nil || res.Status != StatusOK {
		t.Fatalf("%v %+v", err, res)
	}
	want := "['notes.txt', 'scores.csv']\n7 s01\n"
	if !strings.HasPrefix(res.Stdout, want) || strings.Contains(res.Stdout, "changed") || strings.Count(res.Stdout, "refused") != 3 {
		t.Errorf("stdout:\n%s\nwant it to start with:\n%s and refuse every change", res.Stdout, want)
	}
	res, err = e.Run(ctx, Request{Source: "import os\nprint(os.path.exists('/data'))"})
	if err != nil || res.Stdout != "False\n" {
		t.Errorf("without files: %v %q", err, res.Stdout)
	}
	for _, bad := range []string{"../x.csv", "a/b.csv", "..", ".", "", strings.Repeat("a", 129)} {
		if _, err := e.Run(ctx, Request{Source: "pass", Data: map[string][]byte{bad: []byte("x")}}); err == nil {
			t.Errorf("file name %q was accepted", bad)
		}
	}
}
