package routers

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// RateLimits are the per client IP and community limits on the chat routes (api.md §9); 0
// turns one off.
type RateLimits struct {
	ChatPerMinute   int
	ChatPerHour     int
	ResumePerMinute int
	ResumePerHour   int
}

// DefaultRateLimits are the reference's numbers for a deployment.
func DefaultRateLimits(develop bool) RateLimits {
	if develop {
		return RateLimits{ChatPerMinute: 60, ChatPerHour: 100, ResumePerMinute: 60, ResumePerHour: 500}
	}
	return RateLimits{ChatPerMinute: 10, ChatPerHour: 20, ResumePerMinute: 10, ResumePerHour: 100}
}

// Limiter counts events in fixed windows; store.Store implements it, in memory or in Redis.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error)
}

type rateLimited struct {
	details    string
	retryAfter int
}

func (e *rateLimited) Error() string { return "rate limited: " + e.details }

// rateLimit limits one route per client IP and community. When the limiter fails (Redis down)
// the request is refused with 503 rather than let through unmetered.
func (s *Server) rateLimit(name string, perMinute, perHour int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if s.deps.Limiter == nil {
				return next(c)
			}
			// Only a known community is counted: an arbitrary path segment must not become a
			// key in the limiter's store.
			if _, ok := s.community(c); !ok {
				return errNotFound
			}
			ip := c.RealIP()
			for _, w := range []struct {
				limit   int
				window  time.Duration
				details string
			}{
				{perMinute, time.Minute, "Too many requests per minute"},
				{perHour, time.Hour, "Too many requests per hour"},
			} {
				if w.limit <= 0 {
					continue
				}
				key := name + ":" + c.Param("c") + ":" + ip + ":" + w.window.String()
				ok, retry, err := s.deps.Limiter.Allow(c.Request().Context(), key, w.limit, w.window)
				if err != nil {
					s.log.Error("rate limiter failed", slog.Any("error", err))
					return &apiError{http.StatusServiceUnavailable, "The service is temporarily unavailable. Try again shortly."}
				}
				if !ok {
					details := w.details
					if name == "resume" && w.window == time.Hour {
						details = "Too many resume requests per hour"
					}
					return &rateLimited{details: details, retryAfter: int(math.Ceil(retry.Seconds()))}
				}
			}
			return next(c)
		}
	}
}

// ipExtractor decides where the client IP comes from: the connection, or X-Forwarded-For only
// when the connection comes from one of the trusted proxies.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
