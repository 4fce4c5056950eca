package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSourceToolCheck: a source tool's arguments are checked against its parameters before it
// runs: types, enums, required ones, nullable ones, bounded strings, defaults filled in.
func TestSourceToolCheck(t *testing.T) {
	tool := SourceTool{Name: "list_x_recent", Params: []ToolParam{
		{Name: "item_type", Type: "string", Enum: []string{"all", "issue", "pr"}, Default: "all"},
		{Name: "repo", Type: "string", Nullable: true},
		{Name: "limit", Type: "integer", Default: 10},
		{Name: "include_prs", Type: "boolean", Default: true},
		{Name: "query", Type: "string", Required: true},
	}}
	cases := []struct {
		in, want, problem string
	}{
		{`{"query":"q"}`, `{"include_prs":true,"item_type":"all","limit":10,"query":"q","repo":null}`, ""},
		{`{"query":"q","repo":null,"item_type":"pr","limit":3,"include_prs":false,"extra":1}`, `{"include_prs":false,"item_type":"pr","limit":3,"query":"q","repo":null}`, ""},
		{`{}`, "", "query: Field required"},
		{`{"query":"q","item_type":"wiki"}`, "", "item_type: Input should be 'all', 'issue' or 'pr'"},
		{`{"query":"q","limit":2.5}`, "", "limit: Input should be a valid integer"},
		{`{"query":"q","include_prs":"yes"}`, "", "include_prs: Input should be a valid boolean"},
		{`{"query":"` + strings.Repeat("a", maxArgChars+1) + `"}`, "", "query: String should have at most 1000 characters"},
		{`[1]`, "", "input: must be a JSON object"},
	}
	for _, tc := range cases {
		got, problems := tool.check(json.RawMessage(tc.in))
		if tc.problem != "" {
			if len(problems) != 1 || problems[0] != tc.problem {
				t.Errorf("%.40s: problems %q, want %q", tc.in, problems, tc.problem)
			}
			continue
		}
		b, _ := json.Marshal(got)
		if problems != nil || string(b) != tc.want {
			t.Errorf("%.40s: %s %q, want %s", tc.in, b, problems, tc.want)
		}
	}
	var schema map[string]any
	if err := json.Unmarshal(tool.schema(), &schema); err != nil || schema["required"].([]any)[0] != "query" {
		t.Errorf("schema %s", tool.schema())
	}
}
