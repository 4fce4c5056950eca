package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestPackagesStayInTheSandbox: the engine's native packages keep the sandbox's promises. A
// database file can only be made in the scratch directory, SQLite's memory counts toward the
// run's cap, a query that never ends is stopped by the deadline, and a decompression bomb
// handed to openpyxl ends within the run's bounds. Each case runs in a fresh instance and in a
// session's interpreter started from the engine's snapshot.
func TestPackagesStayInTheSandbox(t *testing.T) {
	e, _ := testSnapshot(t)
	cases := []struct {
		name   string
		src    string
		req    Request
		status Status
		stdout string // a substring the output must hold
	}{
		{name: "sqlite3 file outside /tmp", status: StatusOK, stdout: "refused refused refused ok", src: `
import sqlite3
out = []
for path in ["/usr/lib/python3.13/evil.db", "/evil.db", "/usr/share/zoneinfo/evil.db"]:
    try:
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE t (x)")
        db.commit()
        out.append("written")
    except sqlite3.Error:
        out.append("refused")
db = sqlite3.connect("/tmp/ok.db")
db.execute("CREATE TABLE t (x)")
db.commit()
out.append("ok")
print(" ".join(out))
`},
		{name: "sqlite3 in memory past the cap", status: StatusOOM, req: Request{MemoryBytes: 96 << 20}, src: `
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE t (b BLOB)")
for i in range(1000):
    db.execute("INSERT INTO t VALUES (randomblob(1000000))")
`},
		{name: "recursive CTE past the deadline", status: StatusTimeout, req: Request{Timeout: 2 * time.Second}, src: `
import sqlite3
sqlite3.connect(":memory:").execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c").fetchone()
`},
		{name: "zip bomb to openpyxl", stdout: "bomb True", req: Request{Timeout: 90 * time.Second, MemoryBytes: 80 << 20}, src: `
import io, zipfile
from openpyxl import Workbook, load_workbook
buf = io.BytesIO()
Workbook().save(buf)
src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for info in src.infolist():
        data = src.read(info.filename)
        if info.filename == "xl/worksheets/sheet1.xml":
            head, found, tail = data.partition(b"<sheetData />")
            assert found, data
            with z.open(info.filename, "w", force_zip64=True) as f:
                f.write(head + b"<sheetData>")
                row = b"<row>" + b"<c><v>1</v></c>" * 1000 + b"</row>"
                for _ in range(3000):  # 3 million cells: 45 MB of XML, some 100 KB compressed
                    f.write(row)
                f.write(b"</sheetData>" + tail)
        else:
            z.writestr(info, data)
print("bomb", len(out.getvalue()) < 1 << 20, flush=True)
wb = load_workbook(io.BytesIO(out.getvalue()), read_only=False)
print("loaded", wb.active.max_row)
`},
	}
	runners := map[string]func(context.Context, Request) (Result, error){
		"fresh": e.Run,
		"snapshot": func(ctx context.Context, req Request) (Result, error) {
			s := e.NewSession()
			defer s.Close()
			res, err := s.Run(ctx, req)
			if err == nil && !s.startedFromSnapshot() {
				t.Error("the session's interpreter did not start from the snapshot")
			}
			return res, err
		},
	}
	for _, tc := range cases {
		for how, run := range runners {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				req := tc.req
				req.Source = tc.src
				res, err := run(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s in %v, memory peak %d MiB, %s", res.Status, res.Elapsed.Round(time.Millisecond), res.MemoryPeak>>20, res.Exception)
				switch {
				case tc.status == "": // bounded: it must end within the run's limits, by memory or time
					if res.Status == StatusOK && strings.Contains(res.Stdout, "loaded") {
						t.Errorf("the bomb loaded whole: %s", res.Stdout)
					}
					if res.Status != StatusOOM && res.Status != StatusTimeout {
						t.Errorf("status %s, want oom or timeout\n%s", res.Status, res.Stderr)
					}
					if res.MemoryPeak > req.MemoryBytes {
						t.Errorf("memory peak %d over the cap %d", res.MemoryPeak, req.MemoryBytes)
					}
				case res.Status != tc.status:
					t.Errorf("status %s, want %s\nstdout %s\nstderr %s", res.Status, tc.status, res.Stdout, res.Stderr)
				}
				if tc.stdout != "" && !strings.Contains(res.Stdout, tc.stdout) {
					t.Errorf("stdout %q, want %q\nstderr %s", res.Stdout, tc.stdout, res.Stderr)
				}
			})
		}
	}
	// The engine is still fine afterwards.
	if res, err := e.Run(context.Background(), Request{Source: "import sqlite3; print(sqlite3.sqlite_version)"}); err != nil || res.Status != StatusOK || !strings.HasPrefix(res.Stdout, "3.46") {
		t.Errorf("after the battery: %v %+v", err, res)
	}
}
