package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/mcp"
)

// newMCP is the manager of the deployment's MCP servers, reading header values and command
// servers' variables from the environment.
func newMCP(dep config.Deployment, getenv func(string) string, log *slog.Logger) *mcp.Manager {
	return mcp.New(mcp.Options{Deployment: dep, Getenv: getenv, Log: log, Version: version})
}

// mcpConnectWait bounds how long validate --connect waits for the servers' first attempts.
var mcpConnectWait = 30 * time.Second

// connectMCP is validate --connect: every MCP server of the deployment is connected once and
// its bound tools listed. It returns the exit code: 1 when a server could not be reached.
func connectMCP(ctx context.Context, set *config.Set, getenv func(string) string, stdout, stderr io.Writer) int {
	dep, err := config.ServingDeployment(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "assistant validate:", err)
		return 1
	}
	m := newMCP(dep, getenv, slog.New(slog.DiscardHandler))
	defer m.Close()
	m.Apply(set)
	wait, cancel := context.WithTimeout(ctx, mcpConnectWait)
	defer cancel()
	m.WaitFirstAttempt(wait)
	statuses := m.Statuses()
	failed := 0
	for _, st := range statuses {
		if !st.Connected {
			failed++
			why := st.Error
			if why == "" {
				why = "no answer in time"
			}
			fmt.Fprintf(stdout, "%s: MCP server %s (%s): not reachable: %s\n", st.Community, st.Server, dep, why)
			continue
		}
		var names []string
		for _, t := range m.Tools(st.Community) {
			if t.Server == st.Server {
				names = append(names, t.Name)
			}
		}
		fmt.Fprintf(stdout, "%s: MCP server %s (%s): %d %s: %s\n", st.Community, st.Server, dep, len(names), plural(len(names), "tool", "tools"), strings.Join(names, ", "))
		if st.Note != "" {
			fmt.Fprintf(stdout, "%s: MCP server %s (%s): %s\n", st.Community, st.Server, dep, st.Note)
		}
	}
	fmt.Fprintf(stdout, "%d of %d MCP %s reachable\n", len(statuses)-failed, len(statuses), plural(len(statuses), "server", "servers"))
	if failed > 0 {
		return 1
	}
	return 0
}
