package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// benchStores runs bench against Memory and, when ASSISTANT_TEST_REDIS_ADDR is set, Redis
// (with the server's clock, as in production).
func benchStores(b *testing.B, bench func(b *testing.B, s Store)) {
	b.Run("memory", func(b *testing.B) { bench(b, NewMemory(DefaultLimits(), nil, nil)) })
	b.Run("redis", func(b *testing.B) {
		if os.Getenv("ASSISTANT_TEST_REDIS_ADDR") == "" {
			b.Skip("ASSISTANT_TEST_REDIS_ADDR is not set")
		}
		s, _ := newTestRedis(b, nil, DefaultLimits())
		bench(b, s)
	})
}

// BenchmarkClaim measures one Park plus one Claim of that call (a browser round trip's store
// work), serially and from parallel goroutines on their own sessions.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	benchStores(b, func(b *testing.B, s Store) {
		b.Run("serial", func(b *testing.B) {
			mustEnsure(b, s, "hed", "bench")
			c := call("c")
			for b.Loop() {
				if err := s.Park(ctx, "hed", "bench", c); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Claim(ctx, "hed", "bench", "c", nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel", func(b *testing.B) {
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				id := fmt.Sprint("bench", n.Add(1))
				if _, _, err := s.EnsureSession(ctx, "hed", id); err != nil {
					b.Error(err)
					return
				}
				c := call("c")
				for pb.Next() {
					if err := s.Park(ctx, "hed", id, c); err != nil {
						b.Error(err)
						return
					}
					if _, err := s.Claim(ctx, "hed", id, "c", nil, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	})
}

// BenchmarkAppend measures appending one ~200-byte message; the session is recreated every
// 300 messages (the session cap) so that memory stays bounded.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	m, err := json.Marshal(map[string]string{"role": "assistant", "content": strings.Repeat("x", 160)})
	if err != nil {
		b.Fatal(err)
	}
	benchStores(b, func(b *testing.B, s Store) {
		mustEnsure(b, s, "hed", "bench")
		i := 0
		for b.Loop() {
			if i++; i%300 == 0 {
				if err := s.DeleteSession(ctx, "hed", "bench"); err != nil {
					b.Fatal(err)
				}
				mustEnsure(b, s, "hed", "bench")
			}
			if _, err := s.Append(ctx, "hed", "bench", m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEnsureAtCap measures creating a session in the in-memory store when the community
// is at its cap of 1,000 (every new session evicts one, 50 of them locked and skipped) beside
// creating one below the cap.
func BenchmarkEnsureAtCap(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cap  int
	}{{"baseline=below-cap", 1 << 30}, {"at-cap-1000", 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			l := DefaultLimits()
			l.MaxSessionsPerCommunity = tc.cap
			m := NewMemory(l, nil, nil)
			for i := range 1000 {
				id := fmt.Sprint("s", i)
				mustEnsure(b, m, "hed", id)
				if i < 50 {
					if _, err := m.Lock(ctx, "hed", id, time.Hour); err != nil {
						b.Fatal(err)
					}
				}
			}
			i := 0
			for b.Loop() {
				i++
				if _, _, err := m.EnsureSession(ctx, "hed", fmt.Sprint("n", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
