package main

import (
	"log/slog"
)

// logOptions are the options of every handler the command builds (the server's, the
// sandbox workers'): one format for every record, whoever writes it.
var logOptions = &slog.HandlerOptions{ReplaceAttr: durationSeconds}

// durationSeconds writes a duration as float seconds ("duration":0.00072), as Caddy and
// Prometheus do, rather than slog's own forms: integer nanoseconds in JSON, "720µs" in text.
// Seconds read the same in both formats and sum and compare without parsing units.
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.Float64Value(a.Value.Duration().Seconds())
	}
	return a
}
