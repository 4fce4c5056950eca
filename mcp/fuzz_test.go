package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzSchemaCheck feeds input schemas (from a server's tools/list) and arguments (from the
// model) through the checks: neither may panic, and a schema that passes checks any arguments.
func FuzzSchemaCheck(f *testing.F) {
	f.Add(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, `{"text":"hi"}`)
	f.Add(`{"type":"object","properties":"oops"}`, `{}`)
	f.Add(`{"type":"string"}`, `"x"`)
	f.Add(`{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`, `{"a":[1,2]}`)
	f.Add(`{"type":"object","patternProperties":{"(":{}}}`, `{"((":1}`)
	f.Add(`{"type":["object"],"additionalProperties":false}`, `{"x":null}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		if !json.Valid([]byte(schema)) {
			return
		}
		raw, rs, err := resolveSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		tool := Tool{Name: "s__t", Schema: raw, resolved: rs}
		_ = tool.Check(json.RawMessage(args))
	})
}
