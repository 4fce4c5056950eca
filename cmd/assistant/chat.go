package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/routers"
	"github.com/osc-assistant/assistant/store"
)

// defaultPrices are public list prices in USD per million tokens, used to price platform-paid
// replies against community budgets when no --prices file is given.
var defaultPrices = map[string]chat.Price{
	"anthropic/claude-haiku-4-5":  {InputPerMTok: 1, OutputPerMTok: 5},
	"anthropic/claude-sonnet-4-5": {InputPerMTok: 3, OutputPerMTok: 15},
	"anthropic/claude-opus-4-1":   {InputPerMTok: 15, OutputPerMTok: 75},
	"openai/gpt-4o-mini":          {InputPerMTok: 0.15, OutputPerMTok: 0.6},
}

func loadPrices(path string) (map[string]chat.Price, error) {
	if path == "" {
		return maps.Clone(defaultPrices), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %v", err)
	}
	var p map[string]chat.Price
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("prices %s: %v", path, err)
	}
	return p, nil
}

func parseRateLimits(s string, dep config.Deployment) (routers.RateLimits, error) {
	rl := routers.DefaultRateLimits(dep == config.Develop)
	if strings.TrimSpace(s) == "" {
		return rl, nil
	}
	fields := map[string]*int{"chat_minute": &rl.ChatPerMinute, "chat_hour": &rl.ChatPerHour, "resume_minute": &rl.ResumePerMinute, "resume_hour": &rl.ResumePerHour}
	for item := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(v)
		p := fields[k]
		if !ok || err != nil || n < 0 || p == nil {
			return rl, fmt.Errorf("rate limits: %q is not name=count with a name among chat_minute, chat_hour, resume_minute, resume_hour", item)
		}
		*p = n
	}
	return rl, nil
}

func parseCIDRs(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		_, n, err := net.ParseCIDR(item)
		if err != nil {
			return nil, fmt.Errorf("trusted proxies: %v", err)
		}
		out = append(out, n)
	}
	return out, nil
}

// openStore is Redis when a URL is set, else memory. artifactMB is the budget of kept run
// files: for this process in memory, for each community in Redis.
func openStore(ctx context.Context, url, prefix string, artifactMB int, now func() time.Time, log *slog.Logger) (store.Store, error) {
	lim := store.DefaultLimits()
	lim.ArtifactBytes = int64(artifactMB) << 20
	if url == "" {
		return store.NewMemory(lim, now, log), nil
	}
	st, err := store.NewRedis(ctx, store.RedisOptions{URL: url, Prefix: prefix, Limits: lim, Now: now, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("redis: %v", err)
	}
	log.Info("sessions are kept in Redis")
	return st, nil
}
