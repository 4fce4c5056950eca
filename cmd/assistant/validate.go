package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/osc-assistant/assistant/config"
)

// runValidate loads every community with the server's own loader and reports every problem.
func runValidate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	connect := fs.Bool("connect", false, "also connect to every MCP server of the deployment (ASSISTANT_DEPLOYMENT) and list its tools; exit 1 when one cannot be reached")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: assistant validate [--connect] [DIR]\n\nLoads DIR/*/config.yaml (default: communities) exactly as the server does and prints\nevery problem as file:line:col: path: message. Exits 1 when there is any.\nWith --connect, connects to every MCP server and lists the tools the model would see.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	dir := "communities"
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	eng, err := openEngine(ctx, getenv("ASSISTANT_ENGINE_DIR"), getenv("ASSISTANT_ENGINE_CACHE"), 0, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Fprintln(stderr, "assistant validate:", err)
		return 1
	}
	if eng != nil {
		defer eng.Close(ctx)
	}
	set, err := config.Load(ctx, dir, loadOptions(eng))
	if err != nil {
		var list config.ErrorList
		if errors.As(err, &list) {
			fmt.Fprintln(stderr, list.Error())
			fmt.Fprintf(stderr, "%d %s\n", len(list), plural(len(list), "error", "errors"))
		} else {
			fmt.Fprintln(stderr, err)
		}
		return 1
	}
	for _, c := range set.Communities {
		fmt.Fprintf(stdout, "%s: %s\n", c.ID, summary(c))
	}
	for _, n := range set.Notices {
		fmt.Fprintf(stdout, "%s: notice: %s\n", n.File, n.Msg)
	}
	if !set.PreludesChecked {
		fmt.Fprintln(stdout, "note: preludes were not compile-checked: set ASSISTANT_ENGINE_DIR to the Python engine (make validate does)")
	}
	fmt.Fprintf(stdout, "%d %s valid\n", len(set.Communities), plural(len(set.Communities), "community", "communities"))
	if *connect {
		return connectMCP(ctx, set, getenv, stdout, stderr)
	}
	return 0
}

// summary says in one line what a community offers.
func summary(c *config.Community) string {
	var parts []string
	var tools []string
	if c.Extensions != nil {
		for _, t := range c.Extensions.ClientTools {
			tools = append(tools, t.Name)
		}
	}
	if len(tools) == 0 {
		parts = append(parts, "no client tools")
	} else {
		parts = append(parts, "client tools "+strings.Join(tools, ", "))
	}
	if c.Runtime != nil && c.Runtime.Python != nil {
		py := c.Runtime.Python
		parts = append(parts, fmt.Sprintf("Pyodide %s, %d preloaded", py.PyodideVersion, len(py.Preload)))
	}
	if d := c.DeploymentSpecific(); len(d) > 0 {
		parts = append(parts, "differs per deployment: "+strings.Join(d, ", "))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
