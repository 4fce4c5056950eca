package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/limits"
)

// Errors callers inspect with errors.Is.
var (
	// ErrNotFound: no such session, or it expired.
	ErrNotFound = errors.New("session not found or expired")
	// ErrNoParkedCall: no parked call with that id (none, another one, expired, or already
	// claimed).
	ErrNoParkedCall = errors.New("no outstanding browser call with that id")
	// ErrBusy: another turn of the session holds its lock.
	ErrBusy = errors.New("session is busy with another turn")
	// ErrAlreadyParked: Park found another call parked; it must be closed first.
	ErrAlreadyParked = errors.New("another call is already parked for this session")
	// ErrFull: the in-memory store holds as many sessions of the community as it may and none
	// of them can be evicted (every one is in the middle of a turn).
	ErrFull = errors.New("too many sessions are active; try again shortly")
	// ErrTooManyFiles: attaching the files would take the session past its file count.
	ErrTooManyFiles = errors.New("the session would hold more files than it may")
	// ErrSessionFilesFull: attaching the files would take the session past its bytes.
	ErrSessionFilesFull = errors.New("the session's files would exceed its size limit")
	// ErrUnavailable: the store could not answer (Redis is down, stalled or refused the
	// command); errors.Is finds it in every such error, beside its cause. The request fails and
	// can be tried again shortly.
	ErrUnavailable = errors.New("the session store is unavailable")
	// ErrArtifactBudget: a run's files do not fit in the artifact budget even after the
	// oldest kept files were evicted; nothing of the run was kept. For attached files: they do
	// not fit in the community's share of it.
	ErrArtifactBudget = errors.New("the server's storage for run files is full")
	// ErrClientFilesFull: attaching the files would take what one client keeps in the
	// community past FileLimits.MaxClientBytes.
	ErrClientFilesFull = errors.New("the client's files would exceed what one client may keep")
	// ErrNameClash: a file's name differs only in case from one the session holds (or from
	// another in the same call): unpacked on a file system that ignores case, one would
	// overwrite the other.
	ErrNameClash = errors.New("a file's name differs only in case from another of the session")
)

// Session is a session's metadata.
type Session struct {
	ID           string    `json:"session_id"`
	Community    string    `json:"community_id"`
	MessageCount int       `json:"message_count"`
	CreatedAt    time.Time `json:"created_at"`
	LastActive   time.Time `json:"last_active"`
}

// ParkedCall is a browser tool call waiting for its result (api.md §6.2).
type ParkedCall struct {
	CallID             string          `json:"call_id"`
	Tool               string          `json:"tool"`
	Args               json.RawMessage `json:"args"`
	RequiresPermission bool            `json:"requires_permission"`
	// RunsBefore is how many browser results this reply already returned; MCPCallsBefore how
	// many knowledge-tool calls it made, so the reply's budgets span its resumes.
	RunsBefore     int       `json:"runs_before"`
	MCPCallsBefore int       `json:"mcp_calls_before,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// Carry is opaque data the caller keeps with the call until it is claimed or abandoned
	// (the chat keeps the batch's other tool results and the reply's citations here).
	Carry json.RawMessage `json:"carry,omitempty"`
}

// Limits are the store's bounds and lifetimes. A zero or negative field takes its DefaultLimits
// value.
type Limits struct {
	// SessionTTL is how long a session lives after its last activity (24 h).
	SessionTTL time.Duration
	// ParkedTTL is how long a parked call waits for its result (900 s).
	ParkedTTL time.Duration
	// MaxSessionsPerCommunity bounds the in-memory store (1,000): a new session evicts one that
	// is not mid-turn (see Memory). Redis relies on TTLs instead.
	MaxSessionsPerCommunity int
	// ArtifactBytes bounds the bytes of kept run files (256 MB): for the whole process in
	// memory, for each community in Redis.
	ArtifactBytes int64
}

// DefaultLimits are the reference's numbers.
func DefaultLimits() Limits {
	return Limits{SessionTTL: 24 * time.Hour, ParkedTTL: limits.PendingCallTTLSeconds * time.Second,
		MaxSessionsPerCommunity: 1000, ArtifactBytes: DefaultArtifactBytes}
}

// MaxArtifactRuns is how many server-side runs' files one session keeps.
const MaxArtifactRuns = 4

// DefaultArtifactBytes is the default budget of kept run files.
const DefaultArtifactBytes = 256 << 20

// Store is the state shared by every replica. Every method is safe for concurrent use. Times
// come from the store's clock (injectable in both implementations, for tests) and are kept to
// the millisecond, in UTC.
//
// Errors other than the sentinels above mean the store could not answer (for Redis: it is down,
// slow or refused the command). Nothing is assumed then: the caller fails the request, and a
// failed Allow must be treated as a refusal.
type Store interface {
	// Session returns a session's metadata, or ErrNotFound.
	Session(ctx context.Context, community, id string) (Session, error)
	// EnsureSession returns the session, creating it (with that id) when it does not exist or
	// expired; created says which. It does not count as activity (Append does).
	EnsureSession(ctx context.Context, community, id string) (s Session, created bool, err error)
	// Append adds messages to the session's history and refreshes its TTL. It returns the new
	// message count. ErrNotFound if the session does not exist. Each message must be valid
	// JSON; the store does not cap the count (the caller enforces 300).
	Append(ctx context.Context, community, id string, msgs ...json.RawMessage) (int, error)
	// History returns the session's messages in order.
	History(ctx context.Context, community, id string) ([]json.RawMessage, error)
	// DeleteSession removes a session, its history and its parked call; deleting a missing
	// session is not an error. The turn lock is left to its holder (or its TTL).
	DeleteSession(ctx context.Context, community, id string) error

	// Park appends msgs (the assistant message that made the call) and records the session's
	// one parked call, in one step, so a history never ends in a tool call that is neither
	// parked nor answered. It sets the call's CreatedAt to the store's clock (the age Claim
	// judges). Args are kept compacted, nil when empty or null. ErrNotFound if the session does
	// not exist; ErrAlreadyParked if another call is parked (close it first, with Abandon).
	Park(ctx context.Context, community, id string, call ParkedCall, msgs ...json.RawMessage) error
	// Parked returns the parked call, if any, without removing it.
	Parked(ctx context.Context, community, id string) (ParkedCall, bool, error)
	// Claim removes the parked call if its id is callID and appends, in the same step, answer
	// when the call is younger than ParkedTTL, or late when it is not (then it returns the
	// call and ErrNoParkedCall). Of two concurrent claims at most one succeeds. When nothing
	// with that id is parked it appends nothing and returns ErrNoParkedCall; a call with
	// another id stays parked, so the next Abandon can still close it.
	Claim(ctx context.Context, community, id, callID string, answer, late json.RawMessage) (ParkedCall, error)
	// Abandon removes the parked call if its id is callID, whatever its age, and appends
	// closing in the same step; it reports whether it did.
	Abandon(ctx context.Context, community, id, callID string, closing json.RawMessage) (bool, error)

	// Lock takes the session's turn lock for at most ttl; ErrBusy if it is held. The session
	// need not exist. The lock belongs to a random token: only its taker releases it, a retry
	// of the same take (after a lost reply) is not mistaken for another turn, and a take whose
	// outcome is unknown (an error) is released in the background. The returned func releases
	// it (only if still held by this taker) and may be called more than once.
	Lock(ctx context.Context, community, id string, ttl time.Duration) (unlock func(), err error)

	// Allow counts one event against key in a fixed window (aligned to the unix epoch; each
	// window length counts separately) and reports whether it is within limit; when it is
	// not, retryAfter says when the window ends (to the millisecond: round it up for a
	// Retry-After header). On error ok is false.
	Allow(ctx context.Context, key string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error)
	// AddCost adds usd (finite, not negative) to the community's totals for the current UTC
	// day and month and returns the new totals.
	AddCost(ctx context.Context, community string, usd float64) (day, month float64, err error)
	// Costs returns the community's totals for the current UTC day and month.
	Costs(ctx context.Context, community string) (day, month float64, err error)

	// PutArtifacts keeps the files one server-side run saved (path → bytes) with the session,
	// for as long as the session lives, and only for its newest MaxArtifactRuns runs (older
	// runs' files are dropped), so a session holds at most that many runs' worth (25 MB each).
	// The store also keeps all kept files under a byte budget (Limits.ArtifactBytes: server
	// wide in memory, per community in Redis), evicting the oldest runs' files first; a run
	// whose files alone exceed it is refused with ErrArtifactBudget and nothing of it is kept.
	// ErrNotFound if the session does not exist.
	PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error
	// Artifact returns one kept file, or ErrNotFound.
	Artifact(ctx context.Context, community, id, callID, path string) ([]byte, error)
	// ViewArtifact is Artifact without the copy: the bytes may be the store's own and must
	// only be read (an export streams them as they are).
	ViewArtifact(ctx context.Context, community, id, callID, path string) ([]byte, error)
	// ArtifactPaths lists the paths of one run's kept files, sorted, without reading them: none
	// when the run's files are not (or no longer) kept. ErrNotFound if the session does not
	// exist.
	ArtifactPaths(ctx context.Context, community, id, callID string) ([]string, error)

	// PutFiles attaches reader files to the session, all or nothing: a file with the name of
	// one already attached replaces it, and one whose name differs from another only in case is
	// refused (ErrNameClash). The session may then hold at most lim.MaxFiles files and
	// lim.MaxSessionBytes bytes (else ErrTooManyFiles or ErrSessionFilesFull), lim.Client may
	// keep at most lim.MaxClientBytes in the community (else ErrClientFilesFull), and the files
	// count toward the artifact budget with the kept run files: room is made by evicting the
	// oldest runs' files (never another reader's upload), and an upload that still does not fit
	// the community's share of the budget is refused with ErrArtifactBudget. It returns the
	// session's files after the change, by name. ErrNotFound if the session does not exist.
	// Names and types are the caller's to check; the store only keeps them. The store may keep
	// each file's Data as it is (see NewFile).
	//
	// An error means nothing was kept, now or later. When the store cannot tell whether the
	// files were kept (Redis stalled past its timeouts), it finds out before it answers; when
	// it cannot find out in time (Redis unreachable past the write's window, about 11 s: a
	// partition), it answers an error and goes on finding out in the background, and if the
	// write had run it undoes it as soon as Redis answers (the files it added go, those it
	// replaced come back, unless a later write changed them). The one limit: the undo needs the
	// write's record, which Redis keeps 120 s, and this process; a write whose Redis stays
	// unreachable longer, or whose process ends first, stays as it ran (logged as an error).
	PutFiles(ctx context.Context, community, id string, files []NewFile, lim FileLimits) ([]SessionFile, error)
	// Files lists the session's attached files by name; ErrNotFound if the session does not
	// exist.
	Files(ctx context.Context, community, id string) ([]SessionFile, error)
	// File returns one attached file and its bytes, or ErrNotFound.
	File(ctx context.Context, community, id, name string) (SessionFile, []byte, error)
	// ViewFile is File's bytes without the copy: they may be the store's own and must only be
	// read (an export streams them as they are).
	ViewFile(ctx context.Context, community, id, name string) ([]byte, error)
	// DeleteFile removes one attached file and reports whether it was there. Like PutFiles, it
	// answers an error only when the file is still there (or, after a partition, is put back).
	DeleteFile(ctx context.Context, community, id, name string) (bool, error)

	// PutRun records one server-side run of the session, for its manifest and its export. It
	// sets the record's Ordinal (1 + the session's runs so far, counting those no longer kept)
	// and Time (the store's clock), clips its texts (see ClipRun) and returns it as kept. Only
	// the newest MaxRunRecords records are kept; they live and go with the session. It does not
	// count as activity. ErrNotFound if the session does not exist.
	PutRun(ctx context.Context, community, id string, rec RunRecord) (RunRecord, error)
	// Runs returns the session's kept run records, oldest first; ErrNotFound if the session
	// does not exist.
	Runs(ctx context.Context, community, id string) ([]RunRecord, error)

	// Close releases connections.
	Close() error
}

// NewFile is a reader file to attach: its checked name and type, and its bytes. The store may
// keep Data itself rather than a copy (the in-memory store does), so the caller must not change
// it afterwards, and it should not share its array with other data, which would stay alive
// with it.
type NewFile struct {
	Name, Type string
	Data       []byte
}

// SessionFile describes one attached file.
type SessionFile struct {
	Name    string    `json:"name"`
	Bytes   int64     `json:"bytes"`
	SHA256  string    `json:"sha256"`
	Type    string    `json:"type"`
	AddedAt time.Time `json:"added_at"`
}

// RunRecord is one server-side run of a session, kept for its manifest and export.
type RunRecord struct {
	Ordinal     int       `json:"ordinal"` // set by PutRun: 1 + the session's runs so far
	CallID      string    `json:"call_id"`
	Status      string    `json:"status"`
	Description string    `json:"description"`
	Code        string    `json:"code"`
	Stdout      string    `json:"stdout"`
	Stderr      string    `json:"stderr"`
	Summary     string    `json:"summary"`
	Files       []string  `json:"files"`     // the paths kept with PutArtifacts under CallID
	Time        time.Time `json:"timestamp"` // set by PutRun from the store's clock
}

// MaxRunRecords is how many run records one session keeps: the newest. A session holds at most
// limits.MaxSessionMessages messages and every run takes two, so this covers most sessions
// whole; with the caps of ClipRun a record is at most about 400 KB, a session's records
// about 25 MB (most are a few kilobytes).
const MaxRunRecords = 64

// The caps of a run record's fields, in code points; a longer text is cut (ClipRun). Stdout,
// stderr and the summary have the caps of a posted result (the server runtime clips to them
// already); the code that of a stored tool result.
const (
	MaxRunCodeChars        = limits.MaxToolResultLength
	MaxRunStdoutChars      = limits.MaxStdoutChars
	MaxRunStderrChars      = limits.MaxStderrChars
	MaxRunSummaryChars     = limits.MaxSummaryChars
	MaxRunDescriptionChars = limits.CodePoints(2000)
	MaxRunStatusChars      = limits.CodePoints(64)
	MaxRunCallIDChars      = limits.MaxCallIDChars
)

// ClipRun bounds a record as PutRun keeps it: every text valid UTF-8 (an invalid byte becomes
// U+FFFD) and cut to its cap; Files at most limits.MaxSavedFiles paths, each at most
// limits.MaxArtifactNameChars (a longer one could not have been kept, so it is left out), never
// nil.
func ClipRun(rec RunRecord) RunRecord {
	rec.CallID = clipText(rec.CallID, MaxRunCallIDChars)
	rec.Status = clipText(rec.Status, MaxRunStatusChars)
	rec.Description = clipText(rec.Description, MaxRunDescriptionChars)
	rec.Code = clipText(rec.Code, MaxRunCodeChars)
	rec.Stdout = clipText(rec.Stdout, MaxRunStdoutChars)
	rec.Stderr = clipText(rec.Stderr, MaxRunStderrChars)
	rec.Summary = clipText(rec.Summary, MaxRunSummaryChars)
	files := make([]string, 0, min(len(rec.Files), limits.MaxSavedFiles))
	for _, p := range rec.Files {
		if len(files) == limits.MaxSavedFiles {
			break
		}
		if p != "" && utf8.ValidString(p) && utf8.RuneCountInString(p) <= int(limits.MaxArtifactNameChars) {
			files = append(files, p)
		}
	}
	rec.Files = files
	return rec
}

// clipText is s as valid UTF-8, cut to at most n code points.
func clipText(s string, n limits.CodePoints) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= int(n) {
		return s // fewer bytes than the cap: fewer code points too
	}
	i, count := 0, 0
	for i < len(s) && count < int(n) {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i]
}

// FileLimits bound one session's attached files, and what one client keeps.
type FileLimits struct {
	MaxFiles        int
	MaxSessionBytes int64
	// Client is who attaches the files (the client address); "" counts them for no one.
	Client string
	// MaxClientBytes bounds what Client's files may count (as against the budget: bytes,
	// names and overhead) across the community's sessions; 0 is a quarter of the community's
	// budget (its share of it in memory), but at least a whole session's worth
	// (MaxSessionBytes and MaxFiles files' names and overhead) within that budget, so that a
	// reader can always fill one session. A file replaced by another client leaves its first
	// client's count.
	MaxClientBytes int64
	// Communities is how many communities take uploads. The in-memory store, whose budget
	// spans the process, gives each community 1/Communities of it for attached files, so that
	// one community's readers cannot fill it for every other; 0 is 1. Redis gives every
	// community a budget of its own and does not use it.
	Communities int
}

// clientShare is the default MaxClientBytes: what a community may hold of attached files,
// divided by this (unless a session holds more).
const clientShare = 4

// maxNameBytes is the most bytes a file's name counts against the budget: the callers' names
// are at most 128 ASCII characters (workspace.MaxUploadNameChars).
const maxNameBytes = 128

// maxClient is lim's bound on one client's files in a community whose budget for files is
// budget: MaxClientBytes, or by default the larger of a quarter of the budget and what one full
// session counts, and never more than the budget.
func (lim FileLimits) maxClient(budget int64) int64 {
	if lim.MaxClientBytes > 0 {
		return lim.MaxClientBytes
	}
	session := lim.MaxSessionBytes + int64(max(lim.MaxFiles, 0))*(maxNameBytes+runOverhead)
	return min(budget, max(budget/clientShare, session))
}

// withDefaults returns l with every zero or negative field set to its DefaultLimits value.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.SessionTTL <= 0 {
		l.SessionTTL = d.SessionTTL
	}
	if l.ParkedTTL <= 0 {
		l.ParkedTTL = d.ParkedTTL
	}
	if l.MaxSessionsPerCommunity <= 0 {
		l.MaxSessionsPerCommunity = d.MaxSessionsPerCommunity
	}
	if l.ArtifactBytes <= 0 {
		l.ArtifactBytes = d.ArtifactBytes
	}
	return l
}

// validCost refuses a cost that is not a finite amount of at least 0 USD.
func validCost(usd float64) error {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return fmt.Errorf("store: cost must be a finite amount of at least 0 USD, got %v", usd)
	}
	return nil
}

// HasControl reports whether a session id holds a control character (C0, DEL or C1: CR, LF,
// NUL, …): such an id is refused wherever it comes from (a path, a chat or resume body), since
// it would end up in log lines and headers.
func HasControl(id string) bool {
	for _, r := range id {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
