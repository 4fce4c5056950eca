package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/osc-assistant/assistant/config"
)

// Options configure a Manager.
type Options struct {
	// Deployment picks each url server's URL.
	Deployment config.Deployment
	// Getenv reads the environment: the values of headers_env and env, and the minimal
	// environment of a command server. nil reads nothing.
	Getenv func(string) string
	Log    *slog.Logger
	// Transport carries the HTTP requests of url servers; nil is http.DefaultTransport.
	Transport http.RoundTripper
	// MinBackoff and MaxBackoff bound the wait between connection attempts (1 s and 60 s by
	// default); the wait doubles after each failure.
	MinBackoff, MaxBackoff time.Duration
	// Version is sent to servers as the client's version.
	Version string
	// MaxCallsInFlight caps the calls under way to one server at once (8 by default); a call
	// waits for a place within its timeout.
	MaxCallsInFlight int
}

// defaultCallsInFlight is Options.MaxCallsInFlight unless set.
const defaultCallsInFlight = 8

// Result is what one call returned: its text (clipped) and whether the server marked it an
// error (isError).
type Result struct {
	Text    string
	IsError bool
}

// Status is the state of one server, for /health and validate --connect.
type Status struct {
	Community string `json:"community"`
	Server    string `json:"server"`
	Connected bool   `json:"connected"`
	Tools     int    `json:"tools"`
	// ToolsLeftOut counts the tools not bound because the server offers more than
	// MaxToolsPerServer; Note says so in words.
	ToolsLeftOut int       `json:"tools_left_out,omitempty"`
	Note         string    `json:"note,omitempty"`
	Error        string    `json:"error,omitempty"`
	Since        time.Time `json:"since"`
}

// Manager holds the clients of every community's MCP servers. It is safe for concurrent use.
type Manager struct {
	opts    Options
	log     *slog.Logger
	metrics *Metrics

	mu      sync.RWMutex
	servers map[string][]*server // by community id
	closed  bool
}

// New returns a Manager with no servers; Apply connects them.
func New(opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(60*time.Second, opts.MinBackoff)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MaxCallsInFlight <= 0 {
		opts.MaxCallsInFlight = defaultCallsInFlight
	}
	return &Manager{opts: opts, log: opts.Log, metrics: newMetrics(), servers: map[string][]*server{}}
}

// Apply replaces every client by clients of the MCP servers of set: the old ones are closed
// (their child processes killed), the new ones connect in the background. It returns at once.
func (m *Manager) Apply(set *config.Set) {
	next := map[string][]*server{}
	if set != nil {
		for _, c := range set.Communities {
			if c.Extensions == nil {
				continue
			}
			f := Filter{Allow: c.Extensions.MCPToolsAllow, Deny: c.Extensions.MCPToolsDeny}
			for _, sc := range c.Extensions.MCPServers {
				next[c.ID] = append(next[c.ID], newServer(m, c.ID, sc, f))
			}
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	old := m.servers
	m.servers = next
	m.mu.Unlock()
	stopAll(old)
	m.metrics.reset()
	for _, list := range next {
		for _, s := range list {
			s.start()
		}
	}
}

// Close stops every client and kills every child process; the Manager serves no tools after.
func (m *Manager) Close() {
	m.mu.Lock()
	old := m.servers
	m.servers, m.closed = map[string][]*server{}, true
	m.mu.Unlock()
	stopAll(old)
}

func stopAll(servers map[string][]*server) {
	var wg sync.WaitGroup
	for _, list := range servers {
		for _, s := range list {
			wg.Go(s.stop)
		}
	}
	wg.Wait()
}

// WaitFirstAttempt waits until every server has tried to connect once, or ctx is done.
func (m *Manager) WaitFirstAttempt(ctx context.Context) {
	m.mu.RLock()
	var all []*server
	for _, list := range m.servers {
		all = append(all, list...)
	}
	m.mu.RUnlock()
	for _, s := range all {
		select {
		case <-s.attempted:
		case <-ctx.Done():
			return
		}
	}
}

// Tools returns the tools bound for a community now, sorted by name: every connected server's
// tools that passed their checks and the community's filter.
func (m *Manager) Tools(community string) []Tool {
	m.mu.RLock()
	list := m.servers[community]
	m.mu.RUnlock()
	var out []Tool
	for _, s := range list {
		out = append(out, s.boundTools()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ErrUnknownTool is returned by Call for a name that is not bound.
var ErrUnknownTool = errors.New("no such MCP tool")

// Call calls the tool bound as name for community with args (already checked against its
// schema), within the server's call timeout. An error is a failure of the call itself (not
// connected, transport, timeout); a tool's own failure is a Result with IsError.
func (m *Manager) Call(ctx context.Context, community, name string, args json.RawMessage) (Result, error) {
	m.mu.RLock()
	list := m.servers[community]
	m.mu.RUnlock()
	for _, s := range list {
		if t, ok := s.tool(name); ok {
			return s.call(ctx, t, args)
		}
	}
	return Result{}, fmt.Errorf("%w: %s", ErrUnknownTool, name)
}

// Statuses reports every server's state, by community then server.
func (m *Manager) Statuses() []Status {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Status
	for _, list := range m.servers {
		for _, s := range list {
			out = append(out, s.status())
		}
	}
	slices.SortFunc(out, func(a, b Status) int {
		if a.Community != b.Community {
			return cmpString(a.Community, b.Community)
		}
		return cmpString(a.Server, b.Server)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// client is the SDK client this manager identifies itself with, one per server so that each
// has its own list_changed handler.
func (m *Manager) client(onListChanged func()) *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "osc-assistant", Version: m.opts.Version}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			onListChanged()
		},
	})
}
