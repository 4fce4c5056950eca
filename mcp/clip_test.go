package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestClipVectors checks clip against the vectors the sandbox and the widget share.
func TestClipVectors(t *testing.T) {
	raw, err := os.ReadFile("../web/testdata/clip.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			Name  string  `json:"name"`
			Limit int     `json:"limit"`
			Text  [][]any `json:"text"`
			Want  [][]any `json:"want"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	join := func(p [][]any) string {
		var b strings.Builder
		for _, x := range p {
			b.WriteString(strings.Repeat(x[0].(string), int(x[1].(float64))))
		}
		return b.String()
	}
	for _, c := range v.Cases {
		if got, want := clip(join(c.Text), c.Limit), join(c.Want); got != want {
			t.Errorf("%s: got %q, want %q", c.Name, got, want)
		}
	}
}
