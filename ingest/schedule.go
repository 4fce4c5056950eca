package ingest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// CronClock is the scheduler's clock: the real one, or a test's.
type CronClock interface {
	Now() time.Time
	// After sends the time on the channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realCronClock struct{}

func (realCronClock) Now() time.Time                         { return time.Now() }
func (realCronClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// maxCronWait bounds one wait of the scheduler, so a wall-clock jump (a suspended machine, a
// corrected clock) delays a fire by at most this much.
const maxCronWait = time.Minute

// SchedulerOptions configure NewScheduler.
type SchedulerOptions struct {
	Runner *Runner
	// Populated reports whether a community's table of a sync type has a row (§2.2), for
	// start-up seeding; nil turns seeding off. StorePopulated(store) is the knowledge
	// store's.
	Populated func(ctx context.Context, community, syncType string) (bool, error)
	// Clock is nil for the real one.
	Clock  CronClock
	Logger *slog.Logger
}

// Scheduler runs each community's syncs from its sync.<type>.cron (knowledge.md §6.1): one job
// per community and type whose data the config names, at its times in UTC; a fire while the
// job runs is skipped (the runner logs it), fires missed while the process was down or busy
// are not replayed, and a failing job is tried again only at its next fire. Apply also seeds,
// once, in the background, the scheduled types that have no data yet. Apply it at start and
// on every reload; Close stops it.
type Scheduler struct {
	runner    *Runner
	populated func(ctx context.Context, community, syncType string) (bool, error)
	clock     CronClock
	log       *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	changed chan struct{}

	mu      sync.Mutex
	jobs    map[string]*cronJob
	started bool
	// seeding is set while a seeding pass runs; seedNext holds the communities of an Apply
	// made meanwhile, for one more pass after it.
	seeding  bool
	seedNext []*config.Community
}

type cronJob struct {
	id, typ string
	c       *config.Community
	spec    string
	sched   *cron.SpecSchedule
	next    time.Time
}

// ScheduledJob is one job of the scheduler: its id ({type}_{community}), its cron line and
// its next fire.
type ScheduledJob struct {
	ID, Community, Type, Cron string
	Next                      time.Time
}

// NewScheduler returns a scheduler that runs nothing until Apply.
func NewScheduler(opts SchedulerOptions) *Scheduler {
	s := &Scheduler{runner: opts.Runner, populated: opts.Populated, clock: opts.Clock, log: opts.Logger,
		changed: make(chan struct{}, 1), jobs: map[string]*cronJob{}}
	if s.clock == nil {
		s.clock = realCronClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// scheduleTypes are the scheduled types of a sync section, in seeding order (faq last, as it
// is never seeded); beps is accepted and not used.
func scheduleTypes(s *config.Sync) []struct {
	typ   string
	sched *config.Schedule
} {
	return []struct {
		typ   string
		sched *config.Schedule
	}{{TypeGitHub, s.GitHub}, {TypePapers, s.Papers}, {TypeDocstrings, s.Docstrings}, {TypeMailman, s.Mailman},
		{TypeDiscourse, s.Discourse}, {TypeFAQ, s.FAQ}}
}

// Apply makes the scheduler's jobs those of communities (a job whose cron line did not change
// keeps its next fire), starts the scheduler the first time, and starts a seeding pass in the
// background. It returns at once.
func (s *Scheduler) Apply(communities []*config.Community) {
	now := s.clock.Now()
	s.mu.Lock()
	jobs := map[string]*cronJob{}
	for _, c := range communities {
		if c.Sync == nil {
			continue
		}
		log := s.log.With(slog.String("community", c.ID))
		if c.Sync.BEPs != nil {
			log.Info("sync.beps is accepted but not used: the BEP sync is not part of this server")
		}
		for _, t := range scheduleTypes(c.Sync) {
			if t.sched == nil {
				continue
			}
			if _, ok := s.runner.sources[t.typ]; !ok {
				log.Warn("no source of this sync type is available here; its schedule is not run", slog.String("sync_type", t.typ))
				continue
			}
			if !s.runner.Has(c, t.typ) {
				log.Info("Community " + c.ID + " has sync schedule for " + t.typ + " but no data config, skipping")
				continue
			}
			sched, err := config.ParseCron(t.sched.Cron)
			if err != nil { // the config check uses the same parser, so only a config built by hand
				log.Error("invalid sync schedule; not run", slog.String("sync_type", t.typ), slog.String("cron", t.sched.Cron), slog.Any("error", err))
				continue
			}
			j := &cronJob{id: JobID(t.typ, c.ID), typ: t.typ, c: c, spec: t.sched.Cron, sched: sched, next: sched.Next(now)}
			if old := s.jobs[j.id]; old != nil && old.spec == j.spec {
				j.next = old.next
			}
			jobs[j.id] = j
		}
	}
	s.jobs = jobs
	if !s.started {
		s.started = true
		s.wg.Add(1)
		go s.loop()
	}
	seed := s.populated != nil
	if seed && s.seeding {
		s.seedNext, seed = communities, false
	} else if seed {
		s.seeding = true
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default: // a change is already pending; the loop reads the jobs anew
	}
	if seed {
		s.wg.Add(1)
		go s.seed(communities)
	}
}

// Jobs returns the scheduled jobs, sorted by id.
func (s *Scheduler) Jobs() []ScheduledJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ScheduledJob, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, ScheduledJob{ID: j.id, Community: j.c.ID, Type: j.typ, Cron: j.spec, Next: j.next})
	}
	slices.SortFunc(out, func(a, b ScheduledJob) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}

// Next returns a job's next fire; ok is false when no such job is scheduled.
func (s *Scheduler) Next(jobID string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[jobID]; j != nil {
		return j.next, true
	}
	return time.Time{}, false
}

// Running reports whether the scheduler was started and not closed.
func (s *Scheduler) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started && s.ctx.Err() == nil
}

// Close stops the scheduler and waits for its runs (cancelled) to end.
func (s *Scheduler) Close() {
	s.cancel()
	s.wg.Wait()
}

// loop waits for the earliest next fire, fires every job due, and starts again; an Apply
// wakes it to read the jobs anew.
func (s *Scheduler) loop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		var next time.Time
		for _, j := range s.jobs {
			if next.IsZero() || j.next.Before(next) {
				next = j.next
			}
		}
		s.mu.Unlock()
		var fire <-chan time.Time
		if !next.IsZero() {
			fire = s.clock.After(min(max(next.Sub(s.clock.Now()), 0), maxCronWait))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.changed:
		case <-fire:
			s.fireDue(s.clock.Now())
		}
	}
}

// fireDue starts every job due at now, each in its own goroutine, and moves each to its next
// fire after now: whatever fires were missed are not replayed.
func (s *Scheduler) fireDue(now time.Time) {
	s.mu.Lock()
	var due []*cronJob
	for _, j := range s.jobs {
		if !j.next.After(now) {
			due = append(due, j)
			j.next = j.sched.Next(now)
		}
	}
	s.mu.Unlock()
	for _, j := range due {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			// The runner logs the outcome (a skip, a failure, the consecutive count).
			_, _ = s.runner.Run(s.ctx, j.c, j.typ, false, nil)
		}()
	}
}

// seed runs, one at a time, each scheduled type of each community that has no data yet,
// except faq (it costs LLM calls and needs the mailing lists first), in the order github,
// papers, docstrings, mailman, discourse; then a pass for the communities of an Apply made
// meanwhile, if any.
func (s *Scheduler) seed(communities []*config.Community) {
	defer s.wg.Done()
	for {
		for _, c := range communities {
			if c.Sync == nil {
				continue
			}
			for _, t := range scheduleTypes(c.Sync) {
				if s.ctx.Err() != nil {
					return
				}
				if t.sched == nil || t.typ == TypeFAQ || !s.scheduled(JobID(t.typ, c.ID)) {
					continue
				}
				ok, err := s.populated(s.ctx, c.ID, t.typ)
				if err != nil {
					s.log.Warn("start-up seeding: could not tell whether the data is there; not seeding it",
						slog.String("community", c.ID), slog.String("sync_type", t.typ), slog.Any("error", err))
					continue
				}
				if ok {
					continue
				}
				s.log.Info("start-up seeding", slog.String("community", c.ID), slog.String("sync_type", t.typ))
				_, _ = s.runner.Run(s.ctx, c, t.typ, false, nil)
			}
		}
		s.mu.Lock()
		communities, s.seedNext = s.seedNext, nil
		if communities == nil {
			s.seeding = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

func (s *Scheduler) scheduled(jobID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[jobID] != nil
}

// StorePopulated is SchedulerOptions.Populated for the knowledge store: whether the working
// copy's table of the type has a row (a missing file or table is empty).
func StorePopulated(st *knowledge.Store) func(ctx context.Context, community, syncType string) (bool, error) {
	return func(ctx context.Context, community, syncType string) (bool, error) {
		var ok bool
		err := st.Update(ctx, community, func(ctx context.Context, tx *knowledge.Tx) error {
			var err error
			ok, err = tx.Populated(syncType)
			return err
		})
		return ok, err
	}
}
