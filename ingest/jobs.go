package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/osc-assistant/assistant/config"
)

// The jobs of POST /sync/trigger (knowledge.md §7.3): a job is the runs of one request, one per
// community × type whose data the config names, run in the background, one job at a time, and
// kept JobTTL (at most MaxJobs, the oldest dropped) in a JobStore so any replica answers GET
// /sync/jobs/{id} when the store is Redis.
const (
	JobTTL  = 24 * time.Hour
	MaxJobs = 100
	// maxJobError bounds a run's error text in a job (it comes from outside: an API's
	// message, a URL).
	maxJobError = 500
)

// triggerTypes are the types POST /sync/trigger takes, in its error text's order.
var triggerTypes = []string{TypeGitHub, TypePapers, TypeDocstrings, TypeMailman, TypeFAQ, TypeBEPs, TypeDiscourse, TypeDocs, "all"}

// allTypes is what "all" runs, in order (mailing lists before the FAQ made from them).
var allTypes = []string{TypeGitHub, TypePapers, TypeDocstrings, TypeMailman, TypeFAQ, TypeDiscourse, TypeDocs}

// InvalidSyncTypeError is a sync_type POST /sync/trigger does not take; its text is the
// reference's 400 detail.
type InvalidSyncTypeError struct{ Value string }

func (e *InvalidSyncTypeError) Error() string {
	quoted := make([]string, len(triggerTypes))
	for i, t := range triggerTypes {
		quoted[i] = "'" + t + "'"
	}
	return fmt.Sprintf("Invalid sync_type: %s. Must be one of (%s)", e.Value, strings.Join(quoted, ", "))
}

// ValidSyncType reports whether POST /sync/trigger takes t.
func ValidSyncType(t string) bool {
	for _, v := range triggerTypes {
		if t == v {
			return true
		}
	}
	return false
}

// ErrJobQueueFull is returned by Start when MaxJobs jobs are already waiting to run.
var ErrJobQueueFull = errors.New("too many sync jobs are waiting to run")

// Job is a sync job as GET /sync/jobs/{id} shows it.
type Job struct {
	ID          string  `json:"job_id"`
	Status      string  `json:"status"` // queued, running, succeeded, failed
	SyncType    string  `json:"sync_type"`
	CommunityID *string `json:"community_id"`
	Full        bool    `json:"full"`
	CreatedAt   *string `json:"created_at"`
	StartedAt   *string `json:"started_at"`
	FinishedAt  *string `json:"finished_at"`
	Message     string  `json:"message"`
	// ItemsSynced maps each type to the communities whose run of it succeeded (the
	// reference's counts); item counts are in Runs.
	ItemsSynced map[string]int `json:"items_synced"`
	Runs        []JobRun       `json:"runs"`
}

// JobRun is one community × type run of a job.
type JobRun struct {
	CommunityID string  `json:"community_id"`
	SyncType    string  `json:"sync_type"`
	Status      string  `json:"status"` // queued, running, succeeded, failed, skipped
	Items       int     `json:"items"`
	Error       *string `json:"error"`
	StartedAt   *string `json:"started_at"`
	FinishedAt  *string `json:"finished_at"`
}

// JobStore keeps job records (opaque JSON) for ttl and at most keep of them: *store.Redis, or
// MemoryJobs.
type JobStore interface {
	AddSyncJob(ctx context.Context, id string, record []byte, ttl time.Duration, keep int) error
	UpdateSyncJob(ctx context.Context, id string, record []byte, ttl time.Duration) (bool, error)
	SyncJob(ctx context.Context, id string, ttl time.Duration) ([]byte, bool, error)
}

// JobsOptions configure NewJobs.
type JobsOptions struct {
	Runner *Runner
	// Store is nil for a MemoryJobs.
	Store  JobStore
	Logger *slog.Logger
	Now    func() time.Time
}

// Jobs starts and keeps the jobs of POST /sync/trigger. Jobs run one at a time, in the order
// they came, in the background.
type Jobs struct {
	runner *Runner
	store  JobStore
	log    *slog.Logger
	now    func() time.Time
	queue  chan *queuedJob

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type queuedJob struct {
	job   Job
	comms []*config.Community
}

// NewJobs starts the worker that runs the jobs; Close stops it.
func NewJobs(opts JobsOptions) *Jobs {
	j := &Jobs{runner: opts.Runner, store: opts.Store, log: opts.Logger, now: opts.Now, queue: make(chan *queuedJob, MaxJobs)}
	if j.now == nil {
		j.now = time.Now
	}
	if j.store == nil {
		j.store = NewMemoryJobs(j.now)
	}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	j.wg.Add(1)
	go j.work()
	return j
}

// Close cancels the running job, drops the queued ones and waits for the worker.
func (j *Jobs) Close() {
	j.cancel()
	j.wg.Wait()
}

// Start queues a job of syncType ("" is "all") for the community communityID ("" for all of
// communities) and returns it as queued. The caller has checked that communityID names one
// of communities; an invalid syncType is an *InvalidSyncTypeError.
func (j *Jobs) Start(ctx context.Context, communities []*config.Community, syncType, communityID string, full bool) (Job, error) {
	if syncType == "" {
		syncType = "all"
	}
	if !ValidSyncType(syncType) {
		return Job{}, &InvalidSyncTypeError{Value: syncType}
	}
	types := []string{syncType}
	if syncType == "all" {
		types = allTypes
	}
	job := Job{ID: uuid.NewString(), Status: "queued", SyncType: syncType, Full: full, CreatedAt: jobTime(j.now()),
		ItemsSynced: map[string]int{}, Runs: []JobRun{}}
	var comms []*config.Community
	if communityID != "" {
		job.CommunityID = &communityID
	}
	for _, c := range communities {
		if communityID != "" && c.ID != communityID {
			continue
		}
		for _, t := range types {
			if j.runner.Has(c, t) {
				job.Runs = append(job.Runs, JobRun{CommunityID: c.ID, SyncType: t, Status: "queued"})
				comms = append(comms, c)
			}
		}
	}
	job.Message = fmt.Sprintf("Sync queued: %d runs", len(job.Runs))
	rec, err := json.Marshal(job)
	if err != nil {
		return Job{}, err
	}
	if len(j.queue) == cap(j.queue) {
		return Job{}, ErrJobQueueFull
	}
	if err := j.store.AddSyncJob(ctx, job.ID, rec, JobTTL, MaxJobs); err != nil {
		return Job{}, err
	}
	select {
	case j.queue <- &queuedJob{job: job, comms: comms}:
	default: // filled meanwhile by another request: the record says so rather than "queued"
		job.Status, job.Message, job.FinishedAt = "failed", "Sync failed: "+ErrJobQueueFull.Error(), jobTime(j.now())
		j.save(j.log, job)
		return Job{}, ErrJobQueueFull
	}
	return job, nil
}

// Get returns a kept job; ok is false when there is none (never started, expired, dropped).
func (j *Jobs) Get(ctx context.Context, id string) (Job, bool, error) {
	rec, ok, err := j.store.SyncJob(ctx, id, JobTTL)
	if err != nil || !ok {
		return Job{}, false, err
	}
	var job Job
	if err := json.Unmarshal(rec, &job); err != nil {
		return Job{}, false, fmt.Errorf("sync job %s: %w", id, err)
	}
	return job, true, nil
}

func (j *Jobs) work() {
	defer j.wg.Done()
	for {
		select {
		case <-j.ctx.Done():
			return
		case q := <-j.queue:
			j.run(q)
		}
	}
}

// run runs a job's runs in turn, saving the job after each change.
func (j *Jobs) run(q *queuedJob) {
	job := q.job
	log := j.log.With(slog.String("job_id", job.ID))
	job.Status, job.StartedAt = "running", jobTime(j.now())
	var failures []string
	for i := range job.Runs {
		r := &job.Runs[i]
		job.Message = fmt.Sprintf("Sync running: %d of %d runs done", i, len(job.Runs))
		r.Status, r.StartedAt = "running", jobTime(j.now())
		j.save(log, job)
		res, err := j.runner.Run(j.ctx, q.comms[i], r.SyncType, job.Full, nil)
		r.FinishedAt, r.Items = jobTime(j.now()), res.Items
		switch {
		case errors.Is(err, ErrRunning):
			r.Status = "skipped"
		case err != nil:
			r.Status = "failed"
			msg := clipError(err.Error(), maxJobError)
			r.Error = &msg
			failures = append(failures, r.SyncType+" for "+r.CommunityID+": "+msg)
		default:
			r.Status = "succeeded"
			job.ItemsSynced[r.SyncType]++
		}
	}
	job.FinishedAt = jobTime(j.now())
	n := 0
	for _, v := range job.ItemsSynced {
		n += v
	}
	if len(failures) > 0 {
		job.Status, job.Message = "failed", "Sync failed: "+strings.Join(failures, "; ")
	} else {
		job.Status, job.Message = "succeeded", fmt.Sprintf("Sync completed: %d items synced", n)
	}
	j.save(log, job)
	log.Info("sync job finished", slog.String("status", job.Status), slog.Int("runs", len(job.Runs)))
}

// save writes the job's record; a store that fails is logged (the job goes on, and its record
// shows the last state saved).
func (j *Jobs) save(log *slog.Logger, job Job) {
	rec, err := json.Marshal(job)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 5*time.Second)
		_, err = j.store.UpdateSyncJob(ctx, job.ID, rec, JobTTL)
		cancel()
	}
	if err != nil {
		log.Warn("saving a sync job's state failed", slog.Any("error", err))
	}
}

// jobTime is a time as the routes show it: ISO 8601 UTC with microseconds and +00:00.
func jobTime(t time.Time) *string {
	s := t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
	return &s
}

// MemoryJobs is the JobStore of a single process.
type MemoryJobs struct {
	now   func() time.Time
	mu    sync.Mutex
	jobs  map[string]memoryJob
	order []string // ids, oldest first
}

type memoryJob struct {
	rec     []byte
	created time.Time
}

// NewMemoryJobs returns an empty store on the clock now (nil: time.Now).
func NewMemoryJobs(now func() time.Time) *MemoryJobs {
	if now == nil {
		now = time.Now
	}
	return &MemoryJobs{now: now, jobs: map[string]memoryJob{}}
}

// AddSyncJob implements JobStore.
func (m *MemoryJobs) AddSyncJob(_ context.Context, id string, record []byte, ttl time.Duration, keep int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if _, ok := m.jobs[id]; !ok {
		m.order = append(m.order, id)
	}
	m.jobs[id] = memoryJob{rec: append([]byte(nil), record...), created: now}
	// Drop the expired and those past the bound, oldest first.
	for len(m.order) > 0 {
		old := m.jobs[m.order[0]]
		if len(m.order) <= keep && now.Sub(old.created) < ttl {
			break
		}
		delete(m.jobs, m.order[0])
		m.order = m.order[1:]
	}
	return nil
}

// UpdateSyncJob implements JobStore.
func (m *MemoryJobs) UpdateSyncJob(_ context.Context, id string, record []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok || m.now().Sub(j.created) >= ttl {
		return false, nil
	}
	j.rec = append([]byte(nil), record...)
	m.jobs[id] = j
	return true, nil
}

// SyncJob implements JobStore.
func (m *MemoryJobs) SyncJob(_ context.Context, id string, ttl time.Duration) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok || m.now().Sub(j.created) >= ttl {
		return nil, false, nil
	}
	return append([]byte(nil), j.rec...), true, nil
}

// clipError cuts s to n characters, marking the cut.
func clipError(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
