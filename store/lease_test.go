package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRedisLease: one holder at a time; only the holder's token renews or releases; an expired
// lease can be taken by another; the key is the prefix + name with the TTL asked.
func TestRedisLease(t *testing.T) {
	ctx := context.Background()
	s, raw := newTestRedis(t, nil, testLimits())
	const name = "sync:hed:github"

	tok, ok, err := s.AcquireLease(ctx, name, 10*time.Minute)
	if err != nil || !ok || tok == "" {
		t.Fatalf("first AcquireLease = %q, %v, %v; want a token", tok, ok, err)
	}
	if got := raw.Get(ctx, s.prefix+name).Val(); got != tok {
		t.Errorf("key %s holds %q, want the token %q", s.prefix+name, got, tok)
	}
	if ttl := raw.PTTL(ctx, s.prefix+name).Val(); ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("lease TTL %v, want about 10 minutes", ttl)
	}
	if tok2, ok, err := s.AcquireLease(ctx, name, 10*time.Minute); err != nil || ok || tok2 != "" {
		t.Errorf("second AcquireLease while held = %q, %v, %v; want not taken", tok2, ok, err)
	}
	// Another name is another lease.
	if _, ok, err := s.AcquireLease(ctx, "sync:hed:papers", time.Minute); err != nil || !ok {
		t.Errorf("AcquireLease of another name = %v, %v; want taken", ok, err)
	}

	// A stranger's token neither renews nor releases it.
	if held, err := s.RenewLease(ctx, name, "not-the-token", time.Hour); err != nil || held {
		t.Errorf("RenewLease with a wrong token = %v, %v; want not held", held, err)
	}
	if rel, err := s.ReleaseLease(ctx, name, "not-the-token"); err != nil || rel {
		t.Errorf("ReleaseLease with a wrong token = %v, %v; want not released", rel, err)
	}
	if ttl := raw.PTTL(ctx, s.prefix+name).Val(); ttl > 10*time.Minute {
		t.Errorf("a wrong token extended the lease to %v", ttl)
	}

	// The holder renews it.
	if held, err := s.RenewLease(ctx, name, tok, 20*time.Minute); err != nil || !held {
		t.Errorf("RenewLease = %v, %v; want held", held, err)
	}
	if ttl := raw.PTTL(ctx, s.prefix+name).Val(); ttl <= 19*time.Minute {
		t.Errorf("renewed TTL %v, want about 20 minutes", ttl)
	}
	// Released, it can be taken again, and the old token no longer counts.
	if rel, err := s.ReleaseLease(ctx, name, tok); err != nil || !rel {
		t.Errorf("ReleaseLease = %v, %v; want released", rel, err)
	}
	tok3, ok, err := s.AcquireLease(ctx, name, 50*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("AcquireLease after release = %v, %v", ok, err)
	}
	if held, _ := s.RenewLease(ctx, name, tok, time.Minute); held {
		t.Error("the released token renewed the new holder's lease")
	}
	// Expired (by the server's TTL), another takes it, and the first holder's renew says so.
	deadline := time.Now().Add(5 * time.Second)
	for raw.Exists(ctx, s.prefix+name).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the 50 ms lease did not expire")
		}
		time.Sleep(10 * time.Millisecond) // polling the server, not synchronising goroutines
	}
	if _, ok, err := s.AcquireLease(ctx, name, time.Minute); err != nil || !ok {
		t.Errorf("AcquireLease after expiry = %v, %v; want taken", ok, err)
	}
	if held, _ := s.RenewLease(ctx, name, tok3, time.Minute); held {
		t.Error("an expired holder renewed the lease another replica took")
	}
	if _, _, err := s.AcquireLease(ctx, name, 0); err == nil {
		t.Error("AcquireLease with a zero TTL: want an error")
	}
}

// TestRedisSyncJobs: a job is readable by id, updated in place, bounded in number (the
// oldest dropped, never brought back by an update) and in age.
func TestRedisSyncJobs(t *testing.T) {
	ctx := context.Background()
	c := newClock(testStart)
	s, raw := newTestRedis(t, c.Now, testLimits())
	const ttl, keep = 24 * time.Hour, 3

	if _, ok, err := s.SyncJob(ctx, "nope", ttl); err != nil || ok {
		t.Fatalf("SyncJob of an unknown id = %v, %v; want not found", ok, err)
	}
	for i := range 4 {
		if err := s.AddSyncJob(ctx, fmt.Sprintf("job-%d", i), []byte(fmt.Sprintf(`{"n":%d}`, i)), ttl, keep); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
	// job-0 was dropped for job-3.
	if _, ok, _ := s.SyncJob(ctx, "job-0", ttl); ok {
		t.Error("job-0 still kept past the bound of 3")
	}
	if ok, err := s.UpdateSyncJob(ctx, "job-0", []byte(`{"n":"again"}`), ttl); err != nil || ok {
		t.Errorf("UpdateSyncJob of a dropped job = %v, %v; want gone", ok, err)
	}
	if _, ok, _ := s.SyncJob(ctx, "job-0", ttl); ok {
		t.Error("an update brought a dropped job back")
	}
	rec, ok, err := s.SyncJob(ctx, "job-1", ttl)
	if err != nil || !ok || string(rec) != `{"n":1}` {
		t.Errorf("SyncJob(job-1) = %s, %v, %v", rec, ok, err)
	}
	if ok, err := s.UpdateSyncJob(ctx, "job-1", []byte(`{"n":"one"}`), ttl); err != nil || !ok {
		t.Errorf("UpdateSyncJob(job-1) = %v, %v", ok, err)
	}
	if rec, _, _ := s.SyncJob(ctx, "job-1", ttl); string(rec) != `{"n":"one"}` {
		t.Errorf("after the update job-1 = %s", rec)
	}
	// Every key expires; the number of job keys is the bound.
	keys, err := scanKeys(ctx, raw, s.prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != keep+1 {
		t.Errorf("keys %v: want %d jobs and the index", keys, keep)
	}
	for _, k := range keys {
		if ttl := raw.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %s has no TTL (%v)", k, ttl)
		}
	}
	// A day later (by the store's clock) they are gone.
	c.Advance(ttl)
	if _, ok, _ := s.SyncJob(ctx, "job-3", ttl); ok {
		t.Error("job-3 still kept a day after it was added")
	}
	if ok, _ := s.UpdateSyncJob(ctx, "job-3", []byte(`{}`), ttl); ok {
		t.Error("an expired job was updated")
	}
}
