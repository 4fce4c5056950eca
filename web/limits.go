package web

import (
	"slices"

	"github.com/osc-assistant/assistant/limits"
)

// Limits are the caps of package limits that the page (app.js) and the browser's runtime
// (worker.js, osa_runtime.py) apply. They reach the page as the "limits" object of its config
// JSON (the demo page's own bootstrap config and GET /{c}/demo/config.json), so neither keeps
// a copy of its own; TestNoCapsInTheScripts checks that none is left in them.
type Limits struct {
	// Caps on one ClientToolResult (the server refuses a result over one).
	StdoutChars  int `json:"stdout_chars"`
	StderrChars  int `json:"stderr_chars"`
	SummaryChars int `json:"summary_chars"`
	Images       int `json:"images"`
	ImageBytes   int `json:"image_bytes"`
	ImagePx      int `json:"image_px"`
	CallIDChars  int `json:"call_id_chars"`
	// The workspace of one run.
	SavedFiles        int `json:"saved_files"`
	SavedFileBytes    int `json:"saved_file_bytes"`
	SavedBytes        int `json:"saved_bytes"`
	ArtifactNameChars int `json:"artifact_name_chars"`
	// What the runtime captures of a stream, and the page's store of full outputs.
	CapturedChars        int `json:"captured_chars"`
	FullOutputRuns       int `json:"full_output_runs"`
	FullOutputTotalChars int `json:"full_output_total_chars"`
	// The chat loop.
	RunsPerReply int `json:"runs_per_reply"`
	PageURLChars int `json:"page_url_chars"`
	// SealedImportRoots are the modules the seal removes and refuses.
	SealedImportRoots []string `json:"sealed_import_roots"`
	// Defaults are runtime.python.limits' defaults, for a config that lacks one.
	Defaults RunDefaults `json:"defaults"`
}

// RunDefaults are the defaults of runtime.python.limits.
type RunDefaults struct {
	StdoutChars int `json:"stdout_chars"`
	StderrChars int `json:"stderr_chars"`
	Images      int `json:"images"`
	ImagePx     int `json:"image_px"`
	ExecSeconds int `json:"exec_seconds"`
}

// PageLimits returns the page's limits, from package limits.
func PageLimits() Limits {
	r := limits.Runtime
	return Limits{
		StdoutChars:          int(limits.MaxStdoutChars),
		StderrChars:          int(limits.MaxStderrChars),
		SummaryChars:         int(limits.MaxSummaryChars),
		Images:               limits.MaxImages,
		ImageBytes:           int(limits.MaxImageBytes),
		ImagePx:              int(limits.MaxImageEdgePx),
		CallIDChars:          int(limits.MaxCallIDChars),
		SavedFiles:           limits.MaxSavedFiles,
		SavedFileBytes:       int(limits.MaxSavedFileBytes),
		SavedBytes:           int(limits.MaxSavedBytes),
		ArtifactNameChars:    int(limits.MaxArtifactNameChars),
		CapturedChars:        int(limits.MaxCapturedChars),
		FullOutputRuns:       limits.FullOutputRuns,
		FullOutputTotalChars: int(limits.FullOutputTotalChars),
		RunsPerReply:         limits.MaxBrowserRunsPerReply,
		PageURLChars:         int(limits.MaxPageURLChars),
		SealedImportRoots:    slices.Clone(limits.SealedImportRoots),
		Defaults: RunDefaults{
			StdoutChars: r.StdoutChars.Default,
			StderrChars: r.StderrChars.Default,
			Images:      r.Images.Default,
			ImagePx:     r.ImagePx.Default,
			ExecSeconds: r.ExecSeconds.Default,
		},
	}
}
