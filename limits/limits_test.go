package limits

import (
	"strings"
	"testing"
)

// TestValuesMatchReference pins every cap to the reference's table (config.md §5), so a drift
// is caught here rather than by a widget that suddenly gets 422s.
func TestValuesMatchReference(t *testing.T) {
	tests := []struct {
		name      string
		got, want int
	}{
		{"MaxStdoutChars", int(MaxStdoutChars), 16384},
		{"MaxStderrChars", int(MaxStderrChars), 8192},
		{"MaxSummaryChars", int(MaxSummaryChars), 8192},
		{"MaxImages", MaxImages, 3},
		{"MaxImageBytes", int(MaxImageBytes), 2000000},
		{"MaxImageEdgePx", int(MaxImageEdgePx), 8192},
		{"MaxArtifacts", MaxArtifacts, 32},
		{"MaxArtifactNameChars", int(MaxArtifactNameChars), 512},
		{"MaxCallIDChars", int(MaxCallIDChars), 256},
		{"MaxToolResultLength", int(MaxToolResultLength), 65536},
		{"MaxBrowserRunsPerReply", MaxBrowserRunsPerReply, 20},
		{"PendingCallTTLSeconds", PendingCallTTLSeconds, 900},
		{"MaxDeclaredClientTools", MaxDeclaredClientTools, 8},
		{"MaxConfiguredClientTools", MaxConfiguredClientTools, 7},
		{"MaxMessageChars", int(MaxMessageChars), 10000},
		{"MaxSessionMessages", MaxSessionMessages, 300},
		{"MaxSessionIDChars", int(MaxSessionIDChars), 256},
		{"MaxPageURLChars", int(MaxPageURLChars), 2048},
		{"MaxPageTitleChars", int(MaxPageTitleChars), 500},
		{"MaxWidgetInstructionChars", int(MaxWidgetInstructionChars), 2000},
		{"MaxModelChars", int(MaxModelChars), 200},
		{"MaxPreludeChars", int(MaxPreludeChars), 4000},
		{"MaxImportBeforeSeal", MaxImportBeforeSeal, 16},
		{"MaxImportNameChars", int(MaxImportNameChars), 200},
		{"MaxSavedFiles", MaxSavedFiles, 32},
		{"MaxSavedFileBytes", int(MaxSavedFileBytes), 10 * 1024 * 1024},
		{"MaxSavedBytes", int(MaxSavedBytes), 25 * 1024 * 1024},
		{"MaxCapturedChars", int(MaxCapturedChars), 262144},
		{"FullOutputRuns", FullOutputRuns, 16},
		{"FullOutputTotalChars", int(FullOutputTotalChars), 16000000},
		{"MemoryMB.Default", Runtime.MemoryMB.Default, 1536},
		{"MemoryMB.Min", Runtime.MemoryMB.Min, 64},
		{"StdoutChars.Min", Runtime.StdoutChars.Min, 256},
		{"StderrChars.Min", Runtime.StderrChars.Min, 256},
		{"Images.Min", Runtime.Images.Min, 0},
		{"ImagePx.Default", Runtime.ImagePx.Default, 1024},
		{"ImagePx.Min", Runtime.ImagePx.Min, 16},
		{"ExecSeconds.Default", Runtime.ExecSeconds.Default, 120},
		{"ExecSeconds.Min", Runtime.ExecSeconds.Min, 1},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if got, want := strings.Join(SealedImportRoots, " "), "micropip js pyodide pyodide_js pyodide_http ctypes"; got != want {
		t.Errorf("SealedImportRoots = %s, want %s", got, want)
	}
}

// TestRuntimeBoundsWithinServerCaps checks the rule that makes community limits safe: no
// per-community maximum may exceed the cap the server enforces on results.
func TestRuntimeBoundsWithinServerCaps(t *testing.T) {
	capped := []struct {
		name string
		b    Bound
		cap  int
	}{
		{"stdout_chars", Runtime.StdoutChars, int(MaxStdoutChars)},
		{"stderr_chars", Runtime.StderrChars, int(MaxStderrChars)},
		{"images", Runtime.Images, MaxImages},
		{"image_px", Runtime.ImagePx, int(MaxImageEdgePx)},
	}
	for _, c := range capped {
		if c.b.Max == 0 || c.b.Max > c.cap {
			t.Errorf("%s: max %d, want 1..%d", c.name, c.b.Max, c.cap)
		}
		if c.b.Default < c.b.Min || c.b.Default > c.b.Max {
			t.Errorf("%s: default %d outside [%d, %d]", c.name, c.b.Default, c.b.Min, c.b.Max)
		}
	}
}
