package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// routeRedisLogs sends go-redis's log lines, process-wide, to log.
func routeRedisLogs(log *slog.Logger) { redis.SetLogger(redisLog{log}) }

// redisLog is go-redis's logger (redis.SetLogger), writing through slog: without it the client
// writes its own plain lines ("redis: 2026/01/02 … pool.go:770: connection pool: failed to
// dial …") to stderr, whatever --log-format says.
type redisLog struct{ log *slog.Logger }

// maxRedisLogBytes bounds one line of go-redis's: it may quote what the server sent.
const maxRedisLogBytes = 2 << 10

// Printf logs one line of go-redis's as a warning. The library gives its lines no level, and
// at its default level what it logs is out of the ordinary: a pool that cannot dial, a
// connection that would not close, a panic it recovered.
func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	msg = strings.TrimPrefix(msg, "redis: ")
	if len(msg) > maxRedisLogBytes {
		msg = strings.ToValidUTF8(msg[:maxRedisLogBytes], "") + "…"
	}
	l.log.LogAttrs(ctx, slog.LevelWarn, "redis client", slog.String("detail", msg))
}
