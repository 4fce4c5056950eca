package routers

import (
	"context"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/config"
)

// Settings are the process settings the HTTP layer needs.
type Settings struct {
	// BasePath mounts every route under a prefix such as /osa ("" for none). It never ends in /.
	BasePath string
	// Deployment is the deployment whose per-deployment values are served.
	Deployment config.Deployment
	// CORSOrigins are origins allowed on every route, in addition to each community's own.
	CORSOrigins []string
	// AdminKey guards the admin routes (X-API-Key). Empty disables them.
	AdminKey string
	// DefaultModel is the model a community without default_model runs.
	DefaultModel string
	// ResolveModel, when set, says which model a request without a model and without a key
	// of its own actually runs for a community (what GET /{c} reports as default_model).
	ResolveModel func(c *config.Community) string
	Version      string
	Commit       string
	// RateLimits limit the chat routes per client IP and community.
	RateLimits RateLimits
	// TrustedProxies are the networks whose X-Forwarded-For is believed.
	TrustedProxies []*net.IPNet
	// AccessLog says which requests are logged (ParseAccessLog); the zero value logs all.
	AccessLog AccessLog
	// FastPath says the listener runs the fast path (AnswerFast): bodies of 64 KB or more then
	// get a sealed copy it sends with sendfile. Without it nothing is sealed.
	FastPath bool
	// Files bound the upload and export routes for the whole process.
	Files FileSettings
}

// Deps is everything the server is built from.
type Deps struct {
	Settings Settings
	Logger   *slog.Logger
	// Getenv reads the environment; the client-tool kill switch is read through it on every
	// request.
	Getenv func(string) string
	// Load loads every community. It is called by Reload; the first catalog comes from
	// Communities.
	Load func(ctx context.Context) (*config.Set, error)
	// Applied, when set, is told of each set a reload made the catalog (never of one it
	// refused), so what follows the communities (MCP servers, documentation) follows the
	// catalog the routes serve.
	Applied func(*config.Set)
	// Communities is the set loaded at start.
	Communities *config.Set
	// Engine runs chat turns (a *chat.Engine).
	Engine ChatEngine
	// Artifacts serves the files server-side runs saved; nil turns the artifact route off.
	Artifacts ArtifactReader
	// Files serves a session's attached files, its runs' manifest and export; nil turns those
	// routes off (404).
	Files SessionFiles
	// Limiter counts requests for the rate limits; nil disables them.
	Limiter Limiter
	// Registerer receives extra metrics (the budget gauge), or nil.
	Collectors []prometheus.Collector
	// Docs reports each community's documentation for GET /health/communities; nil leaves
	// its "docs" null.
	Docs DocsHealth
	// Sync serves the /sync routes and the syncs of GET /health/communities (handlers_sync.go).
	Sync SyncDeps
	// Feeds reads GET /{c}/faq and /{c}/citations (*knowledge.Store); nil serves them empty.
	Feeds FeedReader
}
