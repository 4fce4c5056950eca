package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// SourceTool is a knowledge tool over a community's synced sources (knowledge.md §4.3: its
// GitHub discussions, papers, code docstrings, FAQ, forum), described by its parameters so the
// chat checks a call's arguments before it runs. The knowledge store gives them (Knowledge.Tools).
type SourceTool struct {
	Name, Description string
	Params            []ToolParam
	// Run carries out a call whose arguments passed the check: args holds every parameter,
	// defaults filled in (nil for a nullable one left out).
	Run func(ctx context.Context, args map[string]any) KnowledgeResult
}

// ToolParam is one parameter of a SourceTool.
type ToolParam struct {
	Name, Description string
	// Type is "string", "integer" or "boolean".
	Type     string
	Required bool
	// Nullable lets the model send null (the tool's "or None").
	Nullable bool
	// Enum, for a string, lists the values it may take.
	Enum []string
	// Default is what a missing parameter takes.
	Default any
}

// maxArgChars bounds a string argument of a source tool: a query, a symbol, a repository.
const maxArgChars = 1000

// schema is the tool's JSON Schema, for the model.
func (t SourceTool) schema() json.RawMessage {
	props := map[string]any{}
	var required []string
	for _, p := range t.Params {
		s := map[string]any{"type": p.Type}
		if p.Nullable {
			s["type"] = []string{p.Type, "null"}
		}
		if p.Description != "" {
			s["description"] = p.Description
		}
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		if p.Default != nil {
			s["default"] = p.Default
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	b, _ := json.Marshal(out)
	return b
}

// check checks a call's arguments against the parameters: types, enums, required ones,
// strings at most maxArgChars; unknown keys are ignored. It returns every parameter, defaults
// filled in.
func (t SourceTool) check(input json.RawMessage) (map[string]any, []string) {
	m, problems := decodeArgs(input)
	if problems != nil {
		return nil, problems
	}
	out := map[string]any{}
	for _, p := range t.Params {
		v, present := m[p.Name]
		if !present || v == nil {
			switch {
			case present && p.Nullable:
				out[p.Name] = nil
			case p.Required:
				problems = append(problems, p.Name+": Field required")
			default:
				out[p.Name] = p.Default
			}
			continue
		}
		switch p.Type {
		case "string":
			s, ok := v.(string)
			switch {
			case !ok:
				problems = append(problems, p.Name+": Input should be a valid string")
			case utf8.RuneCountInString(s) > maxArgChars:
				problems = append(problems, fmt.Sprintf("%s: String should have at most %d characters", p.Name, maxArgChars))
			case len(p.Enum) > 0 && !slices.Contains(p.Enum, s):
				problems = append(problems, fmt.Sprintf("%s: Input should be %s", p.Name, quoteList(p.Enum)))
			default:
				out[p.Name] = s
			}
		case "integer":
			f, ok := v.(float64)
			if !ok || f != float64(int64(f)) || f > 1e9 || f < -1e9 {
				problems = append(problems, p.Name+": Input should be a valid integer")
				continue
			}
			out[p.Name] = int(f)
		case "boolean":
			b, ok := v.(bool)
			if !ok {
				problems = append(problems, p.Name+": Input should be a valid boolean")
				continue
			}
			out[p.Name] = b
		}
	}
	if problems != nil {
		return nil, problems
	}
	return out, nil
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// bindSourceTools puts the community's synced-source tools first among the turn's tools, in
// the order the knowledge store gives them (knowledge.md §4.1), sharing the reply's budget of
// knowledge calls.
func (r *turn) bindSourceTools() {
	if r.e.Knowledge == nil {
		return
	}
	var tools []Tool
	for _, st := range r.e.Knowledge.Tools(r.t.Community.ID) {
		if _, taken := r.tools.byName[st.Name]; taken {
			continue
		}
		st := st
		tools = append(tools, Tool{Name: st.Name, Description: st.Description, Schema: st.schema()})
		r.tools.byName[st.Name] = boundTool{mcp: true,
			check: func(in json.RawMessage) (json.RawMessage, []string) {
				args, problems := st.check(in)
				if problems != nil {
					return nil, problems
				}
				b, _ := json.Marshal(args)
				return b, nil
			},
			run: func(r *turn, ctx context.Context, b *batch, call checkedCall) error {
				return r.runKnowledge(ctx, b, call, func(r *turn, ctx context.Context, call checkedCall) KnowledgeResult {
					checked := map[string]any{}
					_ = json.Unmarshal(call.Args, &checked)
					for k, v := range checked { // JSON numbers back to ints
						if f, ok := v.(float64); ok {
							checked[k] = int(f)
						}
					}
					return st.Run(ctx, checked)
				})
			}}
	}
	r.tools.list = append(tools, r.tools.list...)
}
