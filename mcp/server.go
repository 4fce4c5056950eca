package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/limits"
)

// baseEnv is what a command server's environment always holds, when set here.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// server is the client of one configured server: it connects, lists tools, and reconnects
// with backoff until stopped.
type server struct {
	m         *Manager
	community string
	cfg       config.MCPServer
	filter    Filter
	log       *slog.Logger

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	attempted chan struct{}
	once      sync.Once

	// slots holds a token per call in flight (Options.MaxCallsInFlight), so that what answers hold in
	// memory is bounded however many readers call at once.
	slots chan struct{}

	mu        sync.RWMutex
	session   *sdk.ClientSession
	tools     map[string]Tool
	leftOut   int    // tools past MaxToolsPerServer
	note      string // why, for Status
	connected bool
	lastErr   string
	since     time.Time
}

func newServer(m *Manager, community string, cfg config.MCPServer, f Filter) *server {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{m: m, community: community, cfg: cfg, filter: f, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), attempted: make(chan struct{}), since: time.Now(),
		slots: make(chan struct{}, m.opts.MaxCallsInFlight),
		log:   m.log.With(slog.String("community", community), slog.String("mcp_server", cfg.Name))}
}

func (s *server) start() { go s.run() }

func (s *server) stop() {
	s.cancel()
	s.mu.RLock()
	cs := s.session
	s.mu.RUnlock()
	if cs != nil {
		_ = cs.Close()
	}
	<-s.done
}

// run connects, waits for the session to end, and connects again after a backoff that doubles
// after each failed attempt and starts over after a connection that worked.
func (s *server) run() {
	defer close(s.done)
	wait := s.m.opts.MinBackoff
	for s.ctx.Err() == nil {
		cs, err := s.connect()
		if err != nil {
			s.setDown(err)
			s.log.Warn("MCP server not reachable; retrying", slog.Any("error", err), slog.Duration("retry_in", wait))
			s.firstAttempt()
			select {
			case <-time.After(wait):
			case <-s.ctx.Done():
			}
			wait = min(2*wait, s.m.opts.MaxBackoff)
			continue
		}
		s.firstAttempt()
		wait = s.m.opts.MinBackoff
		err = cs.Wait()
		if s.ctx.Err() != nil {
			break
		}
		s.setDown(fmt.Errorf("connection ended: %v", err))
		s.log.Warn("MCP server connection ended; reconnecting", slog.Any("error", err))
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
		}
	}
	s.setDown(errors.New("stopped"))
	s.firstAttempt()
}

// firstAttempt marks the first connection attempt as over (WaitFirstAttempt).
func (s *server) firstAttempt() { s.once.Do(func() { close(s.attempted) }) }

// connect opens a session and reads the tool list.
func (s *server) connect() (*sdk.ClientSession, error) {
	t, err := s.transport()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	c := s.m.client(s.onListChanged)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.session = cs
	s.mu.Unlock()
	if s.ctx.Err() != nil { // stopped while connecting
		_ = cs.Close()
		return nil, s.ctx.Err()
	}
	if err := s.refresh(ctx, cs); err != nil {
		_ = cs.Close()
		return nil, err
	}
	return cs, nil
}

func (s *server) onListChanged() {
	go func() {
		s.mu.RLock()
		cs := s.session
		s.mu.RUnlock()
		if cs == nil {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		if err := s.refresh(ctx, cs); err != nil {
			s.log.Warn("MCP tools/list after list_changed failed", slog.Any("error", err))
		}
	}()
}

// refresh reads tools/list (every page, up to maxListedTools entries) and binds the tools that
// pass their checks, at most MaxToolsPerServer of them.
func (s *server) refresh(ctx context.Context, cs *sdk.ClientSession) error {
	ctx, watch := withCallWatch(ctx)
	tools := map[string]Tool{}
	listed, leftOut := 0, 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			if capped := capError(s.cfg.Name, err, watch); capped != nil {
				err = capped
			}
			return fmt.Errorf("tools/list: %w", err)
		}
		if listed++; listed > maxListedTools {
			break
		}
		name, err := BoundName(s.cfg.Name, t.Name)
		if err != nil {
			s.log.Warn("MCP tool skipped", slog.String("tool", t.Name), slog.Any("error", err))
			continue
		}
		raw, rs, err := resolveSchema(t.InputSchema)
		if err != nil {
			s.log.Warn("MCP tool skipped: invalid input schema", slog.String("tool", t.Name), slog.Any("error", err))
			continue
		}
		if !s.filter.Allows(name) {
			continue
		}
		if _, dup := tools[name]; !dup && len(tools) == MaxToolsPerServer {
			leftOut++
			continue
		}
		tools[name] = Tool{Name: name, Server: s.cfg.Name, Remote: t.Name, Description: describe(s.cfg.Name, t.Description), Schema: raw, resolved: rs}
	}
	var note string
	if leftOut > 0 || listed > maxListedTools {
		note = fmt.Sprintf("%d tools left out: at most %d are bound from one server", leftOut, MaxToolsPerServer)
		if listed > maxListedTools {
			note += fmt.Sprintf("; the server lists more than %d, and those past them were not read", maxListedTools)
		}
		s.log.Warn("MCP tools left out", slog.Int("tools", len(tools)), slog.Int("left_out", leftOut), slog.Bool("list_cut", listed > maxListedTools))
	}
	s.mu.Lock()
	if s.session == cs {
		s.tools, s.leftOut, s.note, s.connected, s.lastErr, s.since = tools, leftOut, note, true, "", time.Now()
	}
	s.mu.Unlock()
	s.m.metrics.up(s.community, s.cfg.Name, true, len(tools), leftOut)
	s.log.Info("MCP server connected", slog.Int("tools", len(tools)))
	return nil
}

func (s *server) setDown(err error) {
	s.mu.Lock()
	if s.connected || s.lastErr == "" {
		s.since = time.Now()
	}
	s.session, s.tools, s.leftOut, s.note, s.connected, s.lastErr = nil, nil, 0, "", false, err.Error()
	s.mu.Unlock()
	s.m.metrics.up(s.community, s.cfg.Name, false, 0, 0)
}

func (s *server) boundTools() []Tool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t)
	}
	return out
}

func (s *server) tool(name string) (Tool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tools[name]
	return t, ok
}

func (s *server) status() Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Status{Community: s.community, Server: s.cfg.Name, Connected: s.connected, Tools: len(s.tools),
		ToolsLeftOut: s.leftOut, Note: s.note, Error: s.lastErr, Since: s.since}
}

// call makes one tools/call within the server's timeout, once one of its
// Options.MaxCallsInFlight places is free.
func (s *server) call(ctx context.Context, t Tool, args json.RawMessage) (Result, error) {
	s.mu.RLock()
	cs := s.session
	s.mu.RUnlock()
	if cs == nil {
		s.m.metrics.failed(s.community, t, "not_connected", 0)
		return Result{}, fmt.Errorf("MCP server %s is not connected", s.cfg.Name)
	}
	timeout := time.Duration(s.cfg.CallTimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = config.MCPDefaultCallSeconds * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return Result{}, ctx.Err() // the reader went away
		}
		s.m.metrics.failed(s.community, t, "busy", 0)
		return Result{}, fmt.Errorf("MCP server %s is busy: %d calls were under way and none ended in time", s.cfg.Name, cap(s.slots))
	}
	ctx, watch := withCallWatch(ctx)
	start := time.Now()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.Remote, Arguments: args})
	took := time.Since(start)
	var capped error
	if err != nil {
		capped = capError(s.cfg.Name, err, watch)
	}
	var tl *TooLargeError
	switch {
	case errors.As(capped, &tl):
		// The connection that carried it is gone; a stdio child's session ended with it, and
		// run starts it again.
		s.m.metrics.failed(s.community, t, "too_large", took)
		return Result{}, capped
	case capped != nil:
		// Another message ended the connection this call was waiting on.
		s.m.metrics.failed(s.community, t, "transport", took)
		return Result{}, capped
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.m.metrics.failed(s.community, t, "timeout", took)
		return Result{}, fmt.Errorf("MCP server %s did not answer within %s", s.cfg.Name, timeout)
	case err != nil:
		s.m.metrics.failed(s.community, t, "transport", took)
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			// Not the server's own answer: the connection is broken, so it is closed, and run
			// connects again.
			_ = cs.Close()
		}
		return Result{}, fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
	}
	s.m.metrics.done(s.community, t, res.IsError, took)
	return Result{Text: clip(resultText(res), int(limits.MaxStdoutChars)), IsError: res.IsError}, nil
}

// resultText joins a result's text blocks; other blocks are named, not shown.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, "[image block, not shown]")
		case *sdk.AudioContent:
			parts = append(parts, "[audio block, not shown]")
		case *sdk.ResourceLink:
			parts = append(parts, "[resource link: "+c.URI+"]")
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, "[resource block, not shown]")
			}
		default:
			parts = append(parts, "[content block, not shown]")
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// transport is the SDK transport of the server: streamable HTTP for a url, stdio for a command.
func (s *server) transport() (sdk.Transport, error) {
	if s.cfg.URL != nil {
		headers := http.Header{}
		for h, env := range s.cfg.HeadersEnv {
			v := s.m.opts.Getenv(env)
			if v == "" {
				return nil, fmt.Errorf("header %s: environment variable %s is not set", h, env)
			}
			headers.Set(h, v)
		}
		base := s.m.opts.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		endpoint := s.cfg.URL.Resolve(s.m.opts.Deployment)
		client, err := httpClient(endpoint, base, headers, s.cfg.Name)
		if err != nil {
			return nil, err
		}
		return &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client, MaxRetries: 1}, nil
	}
	if s.cfg.Command == nil || len(*s.cfg.Command) == 0 {
		return nil, errors.New("no url and no command")
	}
	argv := *s.cfg.Command
	cmd := exec.CommandContext(s.ctx, argv[0], argv[1:]...)
	cmd.Env = []string{} // never the server's own environment
	for _, k := range append(append([]string{}, baseEnv...), s.cfg.Env...) {
		if v := s.m.opts.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.WaitDelay = exitWait
	return &commandTransport{cmd: cmd, server: s.cfg.Name}, nil
}
