package chat

import (
	"net/http"
	"strings"

	"github.com/osc-assistant/assistant/config"
)

// Keys are the caller's own model keys (BYOK headers). The caller then pays, so no origin
// check or budget applies.
type Keys struct {
	Anthropic  string
	OpenRouter string
}

// Route is where one request's model calls go.
type Route struct {
	Provider Provider
	// Model is the id reported to the widget ("provider/name").
	Model string
	// Name is the provider's own name of the model, sent in its requests.
	Name string
	// BYOK is true when the caller's own key pays.
	BYOK bool
	// Free is true for the offline scripted model: nobody pays.
	Free bool
}

// msgKeyRequired is the reference's 403 text for a platform-paid request that may not be paid for.
const msgKeyRequired = "API key required. Please provide your Anthropic API key via the X-Anthropic-API-Key header, or your OpenRouter API key via the X-OpenRouter-Key header. Get an Anthropic key at: https://platform.claude.com/settings/keys, or an OpenRouter key at: https://openrouter.ai/keys"

// DefaultScripted is the model a community runs when no key is configured anywhere.
const DefaultScripted = "scripted/demo"

// Models resolves which provider and model serve a request (api.md §8), from the request, the
// community's config and the server's environment.
type Models struct {
	// Getenv reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL,
	// OPENROUTER_API_KEY, OPENROUTER_BASE_URL and the communities' own key variables.
	Getenv func(string) string
	// Default is the model of a community without default_model.
	Default string
	// HTTPClient is used by every provider (nil: the SDKs' default).
	HTTPClient *http.Client
}

func splitModel(id string) (provider, name string) {
	if p, n, ok := strings.Cut(id, "/"); ok {
		return p, n
	}
	// A bare name is a Claude model, as in the reference's configs.
	return "anthropic", id
}

// DefaultModel is the model a request without a model and without a key of its own runs for
// community c: what GET /{c} reports.
func (m *Models) DefaultModel(c *config.Community) string {
	r, err := m.Resolve(c, "", Keys{})
	if err != nil {
		return m.configured(c)
	}
	return r.Model
}

func (m *Models) configured(c *config.Community) string {
	if c.DefaultModel != nil && *c.DefaultModel != "" {
		return *c.DefaultModel
	}
	if m.Default != "" {
		return m.Default
	}
	return DefaultScripted
}

func (m *Models) env(name string) string {
	if name == "" || m.Getenv == nil {
		return ""
	}
	return strings.TrimSpace(m.Getenv(name))
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Resolve picks the provider for one request. requested is the request's model override ("" for
// the community's default). Whose key pays decides the provider: a BYOK Anthropic key beats a
// BYOK OpenRouter key; then the community's own key variable; then the platform's key. A
// default model whose provider has no key anywhere falls back to the offline scripted model,
// so a server without any account still answers; a model the caller named explicitly does not.
func (m *Models) Resolve(c *config.Community, requested string, keys Keys) (Route, error) {
	id := requested
	if id == "" {
		id = m.configured(c)
	}
	if keys.Anthropic != "" || keys.OpenRouter != "" {
		return m.callerPays(id, requested, keys)
	}
	return m.platformPays(c, id, requested)
}

// callerPays routes a request that brought its own key: an Anthropic key runs a Claude model
// (the default one when the community's is not), an OpenRouter key runs any model id.
func (m *Models) callerPays(id, requested string, keys Keys) (Route, error) {
	provider, name := splitModel(id)
	if keys.Anthropic == "" {
		slug := id
		if provider == "openrouter" {
			slug = name
		}
		return Route{Provider: m.openrouter(keys.OpenRouter), Model: "openrouter/" + slug, Name: slug, BYOK: true}, nil
	}
	if provider != "anthropic" {
		if requested != "" {
			return Route{}, refuse(CodeUnknownModel, "Model '"+requested+"' is not a Claude model, so it cannot run with your Anthropic API key. Choose a Claude model, or use an OpenRouter key.")
		}
		name = "claude-haiku-4-5"
	}
	return Route{Provider: m.anthropic(keys.Anthropic), Model: "anthropic/" + name, Name: name, BYOK: true}, nil
}

// platformPays routes a request without a key of its own: the community's key variable, then
// the platform's, pays; with neither, the default model falls back to the scripted one.
func (m *Models) platformPays(c *config.Community, id, requested string) (Route, error) {
	provider, name := splitModel(id)
	switch provider {
	case "scripted":
		// Nobody pays for the offline model, so it skips the origin check and the budget; a
		// request may name it only where it is what the community runs anyway (no key
		// configured). Otherwise anyone could name it to reach the server-side fallback
		// without a key or an allowed origin.
		if requested != "" {
			if def, err := m.Resolve(c, "", Keys{}); err != nil || !def.Free {
				return Route{}, refuse(CodeUnknownModel, "Model '"+requested+"' is not offered by this server.")
			}
		}
		return Route{Provider: Scripted{}, Model: "scripted/" + name, Name: name, Free: true}, nil
	case "anthropic":
		if key := m.firstEnv(deref(c.AnthropicAPIKeyEnvVar), "ANTHROPIC_API_KEY"); key != "" {
			return Route{Provider: m.anthropic(key), Model: "anthropic/" + name, Name: name}, nil
		}
	case "openrouter":
		if key := m.firstEnv(deref(c.OpenRouterAPIKeyEnvVar), "OPENROUTER_API_KEY"); key != "" {
			return Route{Provider: m.openrouter(key), Model: "openrouter/" + name, Name: name}, nil
		}
	case "openai":
		key, base := m.env("OPENAI_API_KEY"), m.env("OPENAI_BASE_URL")
		if key != "" || base != "" {
			if key == "" {
				key = "unused" // local servers (Ollama, vLLM, llama.cpp) take any key
			}
			return Route{Provider: NewOpenAI(OpenAIOptions{APIKey: key, BaseURL: base, HTTPClient: m.HTTPClient, Images: m.env("OPENAI_IMAGES") == "1"}), Model: "openai/" + name, Name: name}, nil
		}
	default:
		return Route{}, refuse(CodeUnknownModel, "Model '"+id+"' names an unknown provider '"+provider+"'; use anthropic/, openai/, openrouter/ or scripted/.")
	}
	// No key anywhere for the provider.
	if requested != "" {
		return Route{}, refuse(CodeKeyRequired, msgKeyRequired)
	}
	return Route{Provider: Scripted{}, Model: DefaultScripted, Name: "demo", Free: true}, nil
}

// firstEnv is the first of the variables that is set.
func (m *Models) firstEnv(names ...string) string {
	for _, n := range names {
		if v := m.env(n); v != "" {
			return v
		}
	}
	return ""
}

func (m *Models) anthropic(key string) Provider {
	return NewAnthropic(AnthropicOptions{APIKey: key, BaseURL: m.env("ANTHROPIC_BASE_URL"), HTTPClient: m.HTTPClient})
}

func (m *Models) openrouter(key string) Provider {
	base := m.env("OPENROUTER_BASE_URL")
	if base == "" {
		base = "https://openrouter.ai/api/v1"
	}
	return NewOpenAI(OpenAIOptions{APIKey: key, BaseURL: base, HTTPClient: m.HTTPClient})
}
