package chat

import (
	"testing"

	"github.com/osc-assistant/assistant/config"
)

// TestResolveWhoPays: whose key pays decides the provider, and a request that no key pays for
// is refused or falls back to the scripted model (api.md §8).
func TestResolveWhoPays(t *testing.T) {
	community := func(model, anthropicVar, openrouterVar string) *config.Community {
		c := &config.Community{ID: "hed"}
		if model != "" {
			c.DefaultModel = &model
		}
		if anthropicVar != "" {
			c.AnthropicAPIKeyEnvVar = &anthropicVar
		}
		if openrouterVar != "" {
			c.OpenRouterAPIKeyEnvVar = &openrouterVar
		}
		return c
	}
	platform := map[string]string{"ANTHROPIC_API_KEY": "sk-platform"}
	cases := []struct {
		name      string
		c         *config.Community
		env       map[string]string
		requested string
		keys      Keys
		// want is the route's Model, or "" for a refusal with code.
		want       string
		byok, free bool
		code       RefusalCode
	}{
		{name: "BYOK Anthropic header", c: community("anthropic/claude-sonnet-4-5", "", ""), keys: Keys{Anthropic: "sk-r"},
			want: "anthropic/claude-sonnet-4-5", byok: true},
		{name: "BYOK Anthropic header, community default not Claude", c: community("openai/gpt-4o-mini", "", ""), keys: Keys{Anthropic: "sk-r"},
			want: "anthropic/claude-haiku-4-5", byok: true},
		{name: "BYOK Anthropic header, requested model not Claude", c: community("", "", ""), requested: "openrouter/meta/llama", keys: Keys{Anthropic: "sk-r"},
			code: CodeUnknownModel},
		{name: "BYOK Anthropic header beats OpenRouter header", c: community("anthropic/claude-sonnet-4-5", "", ""), keys: Keys{Anthropic: "sk-r", OpenRouter: "or-r"},
			want: "anthropic/claude-sonnet-4-5", byok: true},
		{name: "BYOK OpenRouter header, openrouter model", c: community("", "", ""), requested: "openrouter/meta/llama-3", keys: Keys{OpenRouter: "or-r"},
			want: "openrouter/meta/llama-3", byok: true},
		{name: "BYOK OpenRouter header, other model id", c: community("anthropic/claude-sonnet-4-5", "", ""), keys: Keys{OpenRouter: "or-r"},
			want: "openrouter/anthropic/claude-sonnet-4-5", byok: true},
		{name: "BYOK header beats scripted default", c: community("", "", ""), keys: Keys{OpenRouter: "or-r"},
			want: "openrouter/scripted/demo", byok: true},
		{name: "community Anthropic key variable", c: community("anthropic/claude-sonnet-4-5", "HED_ANTHROPIC", ""), env: map[string]string{"HED_ANTHROPIC": "sk-hed"},
			want: "anthropic/claude-sonnet-4-5"},
		{name: "community OpenRouter key variable", c: community("openrouter/meta/llama-3", "", "HED_OPENROUTER"), env: map[string]string{"HED_OPENROUTER": "or-hed"},
			want: "openrouter/meta/llama-3"},
		{name: "platform Anthropic key", c: community("anthropic/claude-sonnet-4-5", "HED_ANTHROPIC", ""), env: platform,
			want: "anthropic/claude-sonnet-4-5"},
		{name: "platform OpenRouter key", c: community("openrouter/meta/llama-3", "", ""), env: map[string]string{"OPENROUTER_API_KEY": "or-p"},
			want: "openrouter/meta/llama-3"},
		{name: "a local OpenAI-compatible server needs no key", c: community("openai/llama3", "", ""), env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
			want: "openai/llama3"},
		{name: "a bare name is a Claude model", c: community("claude-sonnet-4-5", "", ""), env: platform,
			want: "anthropic/claude-sonnet-4-5"},
		{name: "no key: the default falls back to scripted", c: community("anthropic/claude-sonnet-4-5", "HED_ANTHROPIC", ""),
			want: DefaultScripted, free: true},
		{name: "no key: the server default", c: community("", "", ""),
			want: DefaultScripted, free: true},
		{name: "no key: a requested model is refused", c: community("", "", ""), requested: "anthropic/claude-sonnet-4-5",
			code: CodeKeyRequired},
		{name: "a blank key variable is no key", c: community("anthropic/claude-sonnet-4-5", "", ""), env: map[string]string{"ANTHROPIC_API_KEY": "  "},
			want: DefaultScripted, free: true},
		{name: "scripted where it is the community default", c: community("anthropic/claude-sonnet-4-5", "", ""), requested: "scripted/echo",
			want: "scripted/echo", free: true},
		{name: "scripted where a real model is configured", c: community("anthropic/claude-sonnet-4-5", "", ""), env: platform, requested: "scripted/demo",
			code: CodeUnknownModel},
		{name: "unknown provider", c: community("", "", ""), env: platform, requested: "mistral/large",
			code: CodeUnknownModel},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &Models{Getenv: func(k string) string { return tc.env[k] }, Default: DefaultScripted}
			r, err := m.Resolve(tc.c, tc.requested, tc.keys)
			if tc.want == "" {
				if ref := refusalOf(err); ref == nil || ref.Code != tc.code || ref.Msg == "" {
					t.Fatalf("Resolve = %+v, %v; want a refusal with code %d", r, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != tc.want || r.BYOK != tc.byok || r.Free != tc.free || r.Provider == nil {
				t.Errorf("Resolve = %+v; want %s, BYOK %v, free %v", r, tc.want, tc.byok, tc.free)
			}
		})
	}
}

// TestDefaultModel: what GET /{c} reports is what a request without a model and key runs.
func TestDefaultModel(t *testing.T) {
	c := &config.Community{ID: "hed", DefaultModel: new("anthropic/claude-sonnet-4-5")}
	m := &Models{Getenv: func(string) string { return "" }}
	if got := m.DefaultModel(c); got != DefaultScripted {
		t.Errorf("no key: %s", got)
	}
	m.Getenv = func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": "sk"}[k] }
	if got := m.DefaultModel(c); got != "anthropic/claude-sonnet-4-5" {
		t.Errorf("with a key: %s", got)
	}
	if got := m.DefaultModel(&config.Community{ID: "x", DefaultModel: new("mistral/large")}); got != "mistral/large" {
		t.Errorf("unknown provider: %s", got)
	}
}
