// Package workspace owns the layout in which a session's server-side runs are handed back to a
// reader, the reference design's workspace: each run's script, its stdout, stderr and summary,
// the files it saved, a manifest of the runs, and a Jupyter notebook (nbformat 4.5) that replays
// them; plus the reader's attached files. It renders that layout as a zip (export.zip) and the
// manifest as JSON. It knows nothing of stores or HTTP: its callers gather the runs.
package workspace
