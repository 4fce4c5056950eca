package ingest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
)

// awaitJob polls the job store (another goroutine runs the job) until the job has finished.
func awaitJob(t *testing.T, j *Jobs, id string) Job {
	t.Helper()
	var job Job
	runWaitFor(t, "job "+id, func() bool {
		var ok bool
		var err error
		job, ok, err = j.Get(context.Background(), id)
		if err != nil || !ok {
			t.Fatalf("Get(%s) = %v, %v", id, ok, err)
		}
		return job.Status == "succeeded" || job.Status == "failed"
	})
	return job
}

func TestJobsRunInTheBackground(t *testing.T) {
	st, dir := newRunStore(t)
	gh := &runSource{typ: TypeGitHub, has: func(c *config.Community) bool { return c.GitHub != nil }}
	gh.sync = issueWriter(st.Store, "org/x", 2)
	papers := &runSource{typ: TypePapers, has: func(c *config.Community) bool { return c.Citations != nil },
		sync: func(context.Context, *config.Community, RunOptions) (Result, error) {
			return Result{Items: 1}, errors.New("HTTP 500 from api.openalex.org")
		}}
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: gh, TypePapers: papers}, Store: st, Leases: &FileLeaser{Dir: dir}})
	j := NewJobs(JobsOptions{Runner: r})
	defer j.Close()
	hed := runCommunity("hed")
	hed.Citations = &config.Citations{Queries: []string{"HED"}}
	comms := []*config.Community{hed, runCommunity("bids"), {ID: "empty"}}

	job, err := j.Start(context.Background(), comms, "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "queued" || job.SyncType != "all" || job.CommunityID != nil || !job.Full || job.Message != "Sync queued: 3 runs" || len(job.Runs) != 3 {
		t.Errorf("queued job %+v", job)
	}
	done := awaitJob(t, j, job.ID)
	var runs []string
	for _, run := range done.Runs {
		e := ""
		if run.Error != nil {
			e = " " + *run.Error
		}
		runs = append(runs, fmt.Sprintf("%s %s %s %d%s", run.CommunityID, run.SyncType, run.Status, run.Items, e))
		if run.StartedAt == nil || run.FinishedAt == nil {
			t.Errorf("run %+v lacks its times", run)
		}
	}
	want := []string{"hed github succeeded 2", "hed papers failed 1 HTTP 500 from api.openalex.org", "bids github succeeded 2"}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("runs %q, want %q", runs, want)
	}
	if done.Status != "failed" || done.Message != "Sync failed: papers for hed: HTTP 500 from api.openalex.org" ||
		fmt.Sprint(done.ItemsSynced) != "map[github:2]" || done.StartedAt == nil || done.FinishedAt == nil {
		t.Errorf("finished job %+v", done)
	}

	// One community, one type: succeeded, the reference's message.
	job, err = j.Start(context.Background(), comms, TypeGitHub, "bids", false)
	if err != nil {
		t.Fatal(err)
	}
	done = awaitJob(t, j, job.ID)
	if done.Status != "succeeded" || done.Message != "Sync completed: 1 items synced" || *done.CommunityID != "bids" || len(done.Runs) != 1 {
		t.Errorf("bids github job %+v", done)
	}
	if _, ok, _ := j.Get(context.Background(), "no-such-job"); ok {
		t.Error("an unknown job id was found")
	}
}

// TestJobsSkipARunningJob: a run whose job is running (here the scheduler's run) is skipped,
// and the job still succeeds.
func TestJobsSkipARunningJob(t *testing.T) {
	st, dir := newRunStore(t)
	entered, release := make(chan struct{}), make(chan struct{})
	gh := &runSource{typ: TypeGitHub, sync: func(context.Context, *config.Community, RunOptions) (Result, error) {
		entered <- struct{}{}
		<-release
		return Result{}, nil
	}}
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: gh}, Store: st, Leases: &FileLeaser{Dir: dir}})
	j := NewJobs(JobsOptions{Runner: r})
	defer j.Close()
	c := runCommunity("hed")
	go r.Run(context.Background(), c, TypeGitHub, false, nil)
	<-entered
	job, err := j.Start(context.Background(), []*config.Community{c}, TypeGitHub, "", false)
	if err != nil {
		t.Fatal(err)
	}
	done := awaitJob(t, j, job.ID)
	close(release)
	if done.Status != "succeeded" || len(done.Runs) != 1 || done.Runs[0].Status != "skipped" || done.Message != "Sync completed: 0 items synced" {
		t.Errorf("job %+v", done)
	}
}

func TestJobsRefuse(t *testing.T) {
	st, dir := newRunStore(t)
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub}}, Store: st, Leases: &FileLeaser{Dir: dir}})
	j := NewJobs(JobsOptions{Runner: r})
	defer j.Close()
	_, err := j.Start(context.Background(), nil, "bep", "", false)
	var ie *InvalidSyncTypeError
	want := "Invalid sync_type: bep. Must be one of ('github', 'papers', 'docstrings', 'mailman', 'faq', 'beps', 'discourse', 'docs', 'all')"
	if !errors.As(err, &ie) || err.Error() != want {
		t.Errorf("Start(bep) = %v, want %q", err, want)
	}
	// beps is taken, and runs nothing here.
	job, err := j.Start(context.Background(), []*config.Community{runCommunity("hed")}, TypeBEPs, "", false)
	if err != nil || len(job.Runs) != 0 || job.Message != "Sync queued: 0 runs" {
		t.Errorf("Start(beps) = %+v, %v", job, err)
	}
}

// TestJobsQueueBound: jobs wait for the one running, at most MaxJobs of them; past that Start
// refuses at once.
func TestJobsQueueBound(t *testing.T) {
	st, dir := newRunStore(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	gh := &runSource{typ: TypeGitHub, sync: func(context.Context, *config.Community, RunOptions) (Result, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return Result{}, nil
	}}
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: gh}, Store: st, Leases: &FileLeaser{Dir: dir}})
	j := NewJobs(JobsOptions{Runner: r})
	defer j.Close()
	comms := []*config.Community{runCommunity("hed")}
	if _, err := j.Start(context.Background(), comms, TypeGitHub, "", false); err != nil {
		t.Fatal(err)
	}
	<-entered // the worker holds the first job
	for i := range MaxJobs {
		if _, err := j.Start(context.Background(), comms, TypeGitHub, "", false); err != nil {
			t.Fatalf("queued job %d: %v", i, err)
		}
	}
	if _, err := j.Start(context.Background(), comms, TypeGitHub, "", false); !errors.Is(err, ErrJobQueueFull) {
		t.Errorf("job %d: %v, want ErrJobQueueFull", MaxJobs+2, err)
	}
	close(release)
}

func TestMemoryJobsBounds(t *testing.T) {
	now := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)
	m := NewMemoryJobs(func() time.Time { return now })
	ctx := context.Background()
	for i := range MaxJobs + 1 {
		if err := m.AddSyncJob(ctx, fmt.Sprint(i), []byte(fmt.Sprint(i)), JobTTL, MaxJobs); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	if _, ok, _ := m.SyncJob(ctx, "0", JobTTL); ok {
		t.Error("the oldest job is kept past the bound")
	}
	if ok, _ := m.UpdateSyncJob(ctx, "0", []byte("x"), JobTTL); ok {
		t.Error("a dropped job was updated")
	}
	if rec, ok, _ := m.SyncJob(ctx, "1", JobTTL); !ok || string(rec) != "1" {
		t.Errorf("job 1 = %q, %v", rec, ok)
	}
	if ok, _ := m.UpdateSyncJob(ctx, "1", []byte("one"), JobTTL); !ok {
		t.Error("UpdateSyncJob of a kept job failed")
	}
	if rec, _, _ := m.SyncJob(ctx, "1", JobTTL); string(rec) != "one" {
		t.Errorf("after the update job 1 = %q", rec)
	}
	// Job 1 was added at 00:01; a day after, it is gone, job 100 (added at 01:40) is not.
	now = time.Date(2025, 6, 3, 0, 1, 0, 0, time.UTC)
	if _, ok, _ := m.SyncJob(ctx, "1", JobTTL); ok {
		t.Error("job 1 is kept a day after it was added")
	}
	if _, ok, _ := m.SyncJob(ctx, "100", JobTTL); !ok {
		t.Error("job 100 is gone before its day")
	}
}

// TestJobsAcrossReplicas: with the jobs in Redis, a job started on one replica is answered by
// another, finished.
func TestJobsAcrossReplicas(t *testing.T) {
	rs, _, _ := newLeaseRedis(t)
	st, _ := newRunStore(t)
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub}}, Store: st, Leases: &RedisLeaser{Store: rs}})
	a := NewJobs(JobsOptions{Runner: r, Store: rs})
	defer a.Close()
	st2, _ := newRunStore(t)
	r2, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub}}, Store: st2, Leases: &RedisLeaser{Store: rs}})
	b := NewJobs(JobsOptions{Runner: r2, Store: rs})
	defer b.Close()
	job, err := a.Start(context.Background(), []*config.Community{runCommunity("hed")}, TypeGitHub, "", false)
	if err != nil {
		t.Fatal(err)
	}
	done := awaitJob(t, b, job.ID)
	if done.Status != "succeeded" || len(done.Runs) != 1 || done.Runs[0].Status != "succeeded" {
		t.Errorf("job read on the other replica: %+v", done)
	}
}
