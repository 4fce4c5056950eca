package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLogDurationsInSeconds: both formats write a duration as float seconds, in a group too.
func TestLogDurationsInSeconds(t *testing.T) {
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"json", []string{`"duration":0.00072`, `"g":{"took":1.5}`}},
		{"text", []string{` duration=0.00072 `, " g.took=1.5\n"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var b bytes.Buffer
			log := newLogger(tc.format, &b)
			log.Info("request", slog.Duration("duration", 720*time.Microsecond), slog.Int("bytes", 3),
				slog.Group("g", slog.Duration("took", 1500*time.Millisecond)))
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%s: no %s in %s", tc.format, w, &b)
				}
			}
		})
	}
}

// TestRedisLogIsARecord: a line of go-redis's is a warning record, without the library's
// "redis: " prefix or trailing newline, and a long one is clipped.
func TestRedisLogIsARecord(t *testing.T) {
	for _, tc := range []struct {
		format string
		args   []any
		want   string
	}{
		{"redis: connection pool: failed to dial after %d attempts: %v\n", []any{5, "refused"}, "connection pool: failed to dial after 5 attempts: refused"},
		{"%s", []any{strings.Repeat("x", 3*maxRedisLogBytes)}, strings.Repeat("x", maxRedisLogBytes) + "…"},
	} {
		var b bytes.Buffer
		redisLog{newLogger("json", &b)}.Printf(context.Background(), tc.format, tc.args...)
		var r struct{ Level, Msg, Detail string }
		if err := json.Unmarshal(b.Bytes(), &r); err != nil || strings.Count(b.String(), "\n") != 1 {
			t.Fatalf("not one JSON record (%v): %s", err, &b)
		}
		if r.Level != "WARN" || r.Msg != "redis client" || r.Detail != tc.want {
			t.Errorf("record %+v, want WARN \"redis client\" with detail %.60q", r, tc.want)
		}
	}
}
