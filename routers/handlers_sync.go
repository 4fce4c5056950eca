package routers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest"
	"github.com/osc-assistant/assistant/knowledge"
)

// The sync routes (knowledge.md §7.1–7.3): GET /sync/status and GET /sync/health (no auth),
// POST /sync/trigger and GET /sync/jobs/{id} (admin key), and the syncs of GET
// /health/communities (§7.4).

// SyncDeps are what the sync routes read and start. A nil Knowledge turns /sync/status and
// /sync/health off (404), a nil Jobs the trigger and the jobs.
type SyncDeps struct {
	// Knowledge reads a community's counts and sync times (*knowledge.Store).
	Knowledge SyncReader
	// Scheduler is the cron scheduler (*ingest.Scheduler); nil when syncing is switched off.
	Scheduler SyncScheduler
	// Runs is how each job's runs went in this process (*ingest.Runner).
	Runs SyncRuns
	// Jobs starts and keeps POST /sync/trigger's jobs (*ingest.Jobs).
	Jobs SyncJobs
	// Now is the clock of ages; nil is time.Now.
	Now func() time.Time
}

// SyncReader reads a community's database for the sync routes.
type SyncReader interface {
	SyncStatus(ctx context.Context, id string) (knowledge.SyncStatus, error)
}

// SyncScheduler is the scheduler's view the routes need.
type SyncScheduler interface {
	Jobs() []ingest.ScheduledJob
	Next(jobID string) (time.Time, bool)
	Running() bool
}

// SyncRuns reports a job's runs.
type SyncRuns interface {
	State(jobID string) (ingest.JobState, bool)
}

// SyncJobs starts and reads trigger jobs.
type SyncJobs interface {
	Start(ctx context.Context, communities []*config.Community, syncType, communityID string, full bool) (ingest.Job, error)
	Get(ctx context.Context, id string) (ingest.Job, bool, error)
}

// syncTypes are the types /sync/status's syncs may list, in the spec's order.
var syncTypes = []string{ingest.TypeGitHub, ingest.TypePapers, ingest.TypeDocstrings, ingest.TypeMailman, ingest.TypeBEPs,
	ingest.TypeFAQ, ingest.TypeDiscourse, ingest.TypeDocs}

var (
	errKnowledgeUnavailable = &apiError{http.StatusServiceUnavailable, "Knowledge database is temporarily unavailable."}
	errSyncQueueFull        = &apiError{http.StatusServiceUnavailable, "Too many sync jobs are waiting to run. Try again later."}
)

func (s *Server) syncNow() time.Time {
	if s.deps.Sync.Now != nil {
		return s.deps.Sync.Now()
	}
	return time.Now()
}

// syncCommunity is the community of ?community_id= (default hed), or the spec's 404.
func (s *Server) syncCommunity(c echo.Context) (*config.Community, error) {
	id := c.QueryParam("community_id")
	if id == "" {
		id = "hed"
	}
	cc, ok := s.cat.Load().byID[id]
	if !ok {
		return nil, &apiError{http.StatusNotFound, fmt.Sprintf("Community '%s' not found.", id)}
	}
	return cc.cfg, nil
}

// readSyncStatus reads the community's status, with papers' last sync taken from its keyword
// and its citing-paper rows alike (the reference writes both under papers; we name the second
// citations, §2.2), so a community with only DOIs is not shown as never synced.
func (s *Server) readSyncStatus(ctx context.Context, id string) (knowledge.SyncStatus, error) {
	st, err := s.deps.Sync.Knowledge.SyncStatus(ctx, id)
	if errors.Is(err, knowledge.ErrUnreadable) {
		return st, errKnowledgeUnavailable
	}
	if err != nil {
		return st, err
	}
	if c := st.LastSync["citations"]; c.After(st.LastSync["papers"]) {
		st.LastSync["papers"] = c
	}
	return st, nil
}

// isoTime is a time as these routes write it, or null for the zero time.
func isoTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	v := knowledge.FormatTime(t)
	return &v
}

type itemsSync struct {
	Items    int     `json:"items"`
	LastSync *string `json:"last_sync"`
}

type syncStatusBody struct {
	GitHub struct {
		TotalItems int                  `json:"total_items"`
		Issues     int                  `json:"issues"`
		PRs        int                  `json:"prs"`
		OpenItems  int                  `json:"open_items"`
		Repos      map[string]itemsSync `json:"repos"`
	} `json:"github"`
	Papers struct {
		TotalItems int                  `json:"total_items"`
		Sources    map[string]itemsSync `json:"sources"`
	} `json:"papers"`
	Scheduler struct {
		Enabled bool               `json:"enabled"`
		Running bool               `json:"running"`
		Jobs    map[string]*string `json:"jobs"`
	} `json:"scheduler"`
	Health struct {
		Healthy        bool     `json:"healthy"`
		GitHubHealthy  bool     `json:"github_healthy"`
		PapersHealthy  bool     `json:"papers_healthy"`
		GitHubAgeHours *float64 `json:"github_age_hours"`
		PapersAgeHours *float64 `json:"papers_age_hours"`
	} `json:"health"`
	Syncs     map[string]typeSync `json:"syncs"`
	Knowledge struct {
		GitHubItems         int `json:"github_items"`
		Papers              int `json:"papers"`
		Docstrings          int `json:"docstrings"`
		DiscourseTopics     int `json:"discourse_topics"`
		FAQEntries          int `json:"faq_entries"`
		MailingListMessages int `json:"mailing_list_messages"`
	} `json:"knowledge"`
}

type typeSync struct {
	LastSync *string `json:"last_sync"`
	NextRun  *string `json:"next_run"`
}

// syncStatus is GET /sync/status?community_id= (§7.1).
func (s *Server) syncStatus(c echo.Context) error {
	if s.deps.Sync.Knowledge == nil {
		return errNotFound
	}
	cfg, err := s.syncCommunity(c)
	if err != nil {
		return err
	}
	st, err := s.readSyncStatus(c.Request().Context(), cfg.ID)
	if err != nil {
		return err
	}
	var b syncStatusBody
	b.GitHub.TotalItems, b.GitHub.Issues, b.GitHub.PRs, b.GitHub.OpenItems = st.GitHubTotal, st.Issues, st.PRs, st.OpenItems
	b.GitHub.Repos = map[string]itemsSync{}
	for repo, r := range st.Repos {
		b.GitHub.Repos[repo] = itemsSync{Items: r.Items, LastSync: isoTime(r.LastSync)}
	}
	b.Papers.TotalItems = st.PapersTotal
	b.Papers.Sources = map[string]itemsSync{}
	for src, p := range st.Sources {
		b.Papers.Sources[src] = itemsSync{Items: p.Items, LastSync: isoTime(p.LastSync)}
	}
	b.Scheduler.Jobs = map[string]*string{}
	if sc := s.deps.Sync.Scheduler; sc != nil {
		b.Scheduler.Enabled, b.Scheduler.Running = true, sc.Running()
		for _, j := range sc.Jobs() {
			b.Scheduler.Jobs[j.ID] = isoTime(j.Next)
		}
	}
	h := st.Health(s.syncNow())
	b.Health.Healthy, b.Health.GitHubHealthy, b.Health.PapersHealthy = h.Healthy, h.GitHubHealthy, h.PapersHealthy
	b.Health.GitHubAgeHours, b.Health.PapersAgeHours = h.GitHubAgeHours, h.PapersAgeHours
	b.Syncs = map[string]typeSync{}
	for _, typ := range syncTypes {
		last := st.LastSync[typ]
		next := s.nextRun(ingest.JobID(typ, cfg.ID))
		if last.IsZero() && next == nil {
			continue
		}
		b.Syncs[typ] = typeSync{LastSync: isoTime(last), NextRun: next}
	}
	k := st.Knowledge
	b.Knowledge.GitHubItems, b.Knowledge.Papers, b.Knowledge.Docstrings = k.GitHubItems, k.Papers, k.Docstrings
	b.Knowledge.DiscourseTopics, b.Knowledge.FAQEntries, b.Knowledge.MailingListMessages = k.DiscourseTopics, k.FAQEntries, k.MailingListMessages
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, b)
}

// nextRun is the scheduled job's next fire, or nil when it is not scheduled here.
func (s *Server) nextRun(jobID string) *string {
	if sc := s.deps.Sync.Scheduler; sc != nil {
		if t, ok := sc.Next(jobID); ok {
			return isoTime(t)
		}
	}
	return nil
}

type syncHealthBody struct {
	Status         string   `json:"status"`
	GitHubItems    int      `json:"github_items"`
	PapersItems    int      `json:"papers_items"`
	GitHubAgeHours *float64 `json:"github_age_hours"`
	PapersAgeHours *float64 `json:"papers_age_hours"`
}

// syncHealth is GET /sync/health?community_id= (§7.2): 200 when healthy, else 503 with the
// same object as its detail.
func (s *Server) syncHealth(c echo.Context) error {
	if s.deps.Sync.Knowledge == nil {
		return errNotFound
	}
	cfg, err := s.syncCommunity(c)
	if err != nil {
		return err
	}
	st, err := s.readSyncStatus(c.Request().Context(), cfg.ID)
	if err != nil {
		return err
	}
	h := st.Health(s.syncNow())
	b := syncHealthBody{Status: "healthy", GitHubItems: st.GitHubTotal, PapersItems: st.PapersTotal,
		GitHubAgeHours: h.GitHubAgeHours, PapersAgeHours: h.PapersAgeHours}
	c.Response().Header().Set("Cache-Control", "no-store")
	if !h.Healthy {
		b.Status = "unhealthy"
		return c.JSON(http.StatusServiceUnavailable, map[string]syncHealthBody{"detail": b})
	}
	return c.JSON(http.StatusOK, b)
}

// maxTriggerBytes bounds POST /sync/trigger's body (three short fields).
const maxTriggerBytes = 4 << 10

// syncTrigger is POST /sync/trigger (§7.3, admin key): the job is queued and runs in the
// background; 202 with its id and Location.
func (s *Server) syncTrigger(c echo.Context) error {
	if s.deps.Sync.Jobs == nil {
		return errNotFound
	}
	data, err := readBody(c, maxTriggerBytes)
	if err != nil {
		return err
	}
	// Every field is optional, so an empty body is {}; any other is read strictly.
	obj := map[string]any{}
	if len(data) > 0 {
		c.Request().Body = io.NopCloser(bytes.NewReader(data))
		if obj, err = readJSONObject(c, maxTriggerBytes); err != nil {
			return err
		}
	}
	v := &bodyCheck{obj: obj}
	syncType := v.optStr("sync_type", 0)
	communityID := v.optStr("community_id", 0)
	full := v.optBool("full")
	if len(v.items) > 0 {
		return &validationError{items: v.items}
	}
	typ := "all"
	if syncType != nil {
		typ = *syncType
	}
	if !ingest.ValidSyncType(typ) {
		return &apiError{http.StatusBadRequest, (&ingest.InvalidSyncTypeError{Value: typ}).Error()}
	}
	cat := s.cat.Load()
	id := ""
	if communityID != nil {
		id = *communityID
		if _, ok := cat.byID[id]; !ok {
			return &apiError{http.StatusNotFound, fmt.Sprintf("Community '%s' not found.", id)}
		}
	}
	comms := make([]*config.Community, 0, len(cat.ids))
	for _, cid := range cat.ids {
		comms = append(comms, cat.byID[cid].cfg)
	}
	job, err := s.deps.Sync.Jobs.Start(c.Request().Context(), comms, typ, id, full != nil && *full)
	if errors.Is(err, ingest.ErrJobQueueFull) {
		c.Response().Header().Set("Retry-After", "60")
		return errSyncQueueFull
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", s.deps.Settings.BasePath+"/sync/jobs/"+job.ID)
	return c.JSON(http.StatusAccepted, map[string]any{
		"success": true, "message": job.Message, "items_synced": map[string]int{}, "job_id": job.ID, "status": job.Status,
	})
}

// syncJob is GET /sync/jobs/{id} (§7.3, admin key).
func (s *Server) syncJob(c echo.Context) error {
	if s.deps.Sync.Jobs == nil {
		return errNotFound
	}
	id := c.Param("id")
	job, ok, err := s.deps.Sync.Jobs.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return &apiError{http.StatusNotFound, fmt.Sprintf("Sync job '%s' not found.", id)}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, job)
}

// typeHealth is one type of /health/communities' syncs (§7.4).
type typeHealth struct {
	LastSync            *string  `json:"last_sync"`
	AgeHours            *float64 `json:"age_hours"`
	NextRun             *string  `json:"next_run"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	LastError           *string  `json:"last_error"`
}

// addSyncHealth fills a community's sync_age_hours and syncs (§7.4): each type scheduled or
// run here, with its newest successful sync (the database's sync_metadata, or this process's
// last success if newer), next fire, consecutive failures and last error; a warning per
// failing type, and degraded from 3 failures in a row. A database that cannot be read leaves
// the times out and says so.
func (s *Server) addSyncHealth(ctx context.Context, h *communityHealth, cfg *config.Community) {
	sd := s.deps.Sync
	if sd.Knowledge == nil {
		return
	}
	now := s.syncNow()
	st, err := s.readSyncStatus(ctx, cfg.ID)
	if err != nil {
		h.Warnings = append(h.Warnings, "Knowledge database could not be read for the sync times")
	}
	var newest time.Time
	degraded := false
	for _, typ := range syncTypes {
		job := ingest.JobID(typ, cfg.ID)
		next := s.nextRun(job)
		var run ingest.JobState
		ran := false
		if sd.Runs != nil {
			run, ran = sd.Runs.State(job)
		}
		if next == nil && !ran {
			continue
		}
		last := st.LastSync[typ]
		if run.LastSuccess.After(last) {
			last = run.LastSuccess
		}
		if next != nil && last.After(newest) {
			newest = last
		}
		t := typeHealth{LastSync: isoTime(last), AgeHours: knowledge.AgeHours(now, last), NextRun: next, ConsecutiveFailures: run.ConsecutiveFailures}
		if run.LastError != "" {
			e := run.LastError
			t.LastError = &e
		}
		if n := run.ConsecutiveFailures; n > 0 {
			h.Warnings = append(h.Warnings, typ+" sync has failed "+strconv.Itoa(n)+" times in a row: "+run.LastError)
			degraded = degraded || n >= 3
		}
		h.Syncs[typ] = t
	}
	h.SyncAgeHours = knowledge.AgeHours(now, newest)
	if degraded && h.Status == "healthy" {
		h.Status = "degraded"
	}
}
