// Package storetest holds what tests across the module need to reach the test Redis.
package storetest

import (
	"os"
	"testing"
)

// RedisAddr is the test redis-server's address (ASSISTANT_TEST_REDIS_ADDR, set by
// scripts/with_redis.sh). Without it the test is skipped, or fails under CI=true: a green CI
// run must not have skipped the Redis tests.
func RedisAddr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv("ASSISTANT_TEST_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("ASSISTANT_TEST_REDIS_ADDR is not set under CI=true; run the tests through scripts/with_redis.sh")
		}
		tb.Skip("ASSISTANT_TEST_REDIS_ADDR is not set; run the tests through scripts/with_redis.sh (make test does)")
	}
	return addr
}

// RedisURL is RedisAddr as a redis:// URL of database 0.
func RedisURL(tb testing.TB) string {
	tb.Helper()
	return "redis://" + RedisAddr(tb) + "/0"
}
