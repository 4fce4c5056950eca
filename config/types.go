package config

import (
	"slices"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/runtimelock"
)

// Community is one community's config.yaml, decoded and with defaults filled (config.md §2).
// Optional sections that were absent or null are nil.
type Community struct {
	ID                     string            `yaml:"id" json:"id" cfg:"required"`
	Name                   string            `yaml:"name" json:"name" cfg:"required"`
	Description            string            `yaml:"description" json:"description" cfg:"required"`
	Status                 string            `yaml:"status" json:"status" validate:"oneof=available beta coming_soon"`
	SystemPrompt           *string           `yaml:"system_prompt" json:"system_prompt"`
	Documentation          []DocSource       `yaml:"documentation" json:"documentation" validate:"dive"`
	GitHub                 *GitHub           `yaml:"github" json:"github"`
	Citations              *Citations        `yaml:"citations" json:"citations"`
	Discourse              []Discourse       `yaml:"discourse" json:"discourse" validate:"dive"`
	Mailman                []Mailman         `yaml:"mailman" json:"mailman" validate:"dive"`
	Docstrings             *Docstrings       `yaml:"docstrings" json:"docstrings"`
	FAQGeneration          *FAQGeneration    `yaml:"faq_generation" json:"faq_generation"`
	PublicFeeds            *PublicFeeds      `yaml:"public_feeds" json:"public_feeds"`
	Sync                   *Sync             `yaml:"sync" json:"sync"`
	Extensions             *Extensions       `yaml:"extensions" json:"extensions"`
	Runtime                *Runtime          `yaml:"runtime" json:"runtime"`
	Notebook               *Notebook         `yaml:"notebook" json:"notebook"`
	EnablePageContext      bool              `yaml:"enable_page_context" json:"enable_page_context"`
	CORSOrigins            []string          `yaml:"cors_origins" json:"cors_origins"`
	AnthropicAPIKeyEnvVar  *string           `yaml:"anthropic_api_key_env_var" json:"anthropic_api_key_env_var"`
	OpenRouterAPIKeyEnvVar *string           `yaml:"openrouter_api_key_env_var" json:"openrouter_api_key_env_var"`
	DefaultModel           *string           `yaml:"default_model" json:"default_model"`
	ReasoningEffort        *string           `yaml:"reasoning_effort" json:"reasoning_effort" validate:"omitempty,oneof=none low medium high xhigh max"`
	ModelInstructions      map[string]string `yaml:"model_instructions" json:"model_instructions"`
	DefaultModelProvider   *string           `yaml:"default_model_provider" json:"default_model_provider"`
	Maintainers            []string          `yaml:"maintainers" json:"maintainers"`
	Budget                 *Budget           `yaml:"budget" json:"budget"`
	Widget                 *Widget           `yaml:"widget" json:"widget"`
	Links                  *Links            `yaml:"links" json:"links"`

	// Dir is the community's folder and File its config.yaml, as given to Load.
	Dir  string `yaml:"-" json:"-" validate:"-"`
	File string `yaml:"-" json:"-" validate:"-"`
	// Overlay is the verified lock overlay when runtime.python.lockfile is set and it verified;
	// OverlayErr says why it did not. Both are set by Load.
	Overlay    *runtimelock.Verified `yaml:"-" json:"-" validate:"-"`
	OverlayErr error                 `yaml:"-" json:"-" validate:"-"`
}

// python returns runtime.python, or nil.
func (c *Community) python() *PythonRuntime {
	if c.Runtime == nil {
		return nil
	}
	return c.Runtime.Python
}

// TakesUploads returns the community's upload rules and whether readers may attach files at
// all (a Python runtime with uploads enabled).
func (c *Community) TakesUploads() (Uploads, bool) {
	if py := c.python(); py != nil && py.Uploads.Enabled {
		return py.Uploads, true
	}
	return Uploads{}, false
}

func (c *Community) setDefaults() {
	c.Status = "available"
	c.EnablePageContext = true
	c.CORSOrigins, c.Maintainers = []string{}, []string{}
	c.Documentation, c.Discourse, c.Mailman = []DocSource{}, []Discourse{}, []Mailman{}
	c.ModelInstructions = map[string]string{}
}

// DocSource is one documentation page: fetched from SourceURL (else URL), or read from
// SourcePath, indexed, and put in the prompt or offered to the model (knowledge).
type DocSource struct {
	Title     string  `yaml:"title" json:"title" cfg:"required"`
	URL       string  `yaml:"url" json:"url" cfg:"required"`
	SourceURL *string `yaml:"source_url" json:"source_url"`
	// SourcePath (ours) is a Markdown file inside the community's folder read instead of a
	// fetch, so a community's documentation works with no network; checked at load.
	SourcePath  *string `yaml:"source_path" json:"source_path,omitempty"`
	Preload     bool    `yaml:"preload" json:"preload"`
	Category    string  `yaml:"category" json:"category"`
	Type        string  `yaml:"type" json:"type" validate:"oneof=sphinx mkdocs html markdown json"`
	SourceRepo  *string `yaml:"source_repo" json:"source_repo"`
	Description *string `yaml:"description" json:"description"`
}

func (d *DocSource) setDefaults() { d.Category, d.Type = "general", "html" }

func (g *GitHub) setDefaults() { g.Repos = []string{} }

func (c *Citations) setDefaults() {
	c.Queries, c.DOIs = []string{}, []string{}
	c.PaperLabels, c.Aliases = map[string]string{}, map[string][]string{}
}

func (d *Discourse) setDefaults() { d.Tags, d.Categories = []string{}, []DiscourseCategory{} }

func (d *Docstrings) setDefaults() { d.Repos = []DocstringRepo{} }

func (e *Extensions) setDefaults() {
	e.PythonPlugins, e.MCPServers, e.ClientTools = []PythonPlugin{}, []MCPServer{}, []ClientTool{}
	e.MCPToolsAllow, e.MCPToolsDeny = []string{}, []string{}
}

// GitHub lists repositories to sync (accepted, not used here).
type GitHub struct {
	Repos []string `yaml:"repos" json:"repos"`
}

// Citations configures paper search (accepted, not used here).
type Citations struct {
	Queries     []string            `yaml:"queries" json:"queries"`
	DOIs        []string            `yaml:"dois" json:"dois"`
	LiveSearch  bool                `yaml:"live_search" json:"live_search"`
	PaperLabels map[string]string   `yaml:"paper_labels" json:"paper_labels"`
	Aliases     map[string][]string `yaml:"aliases" json:"aliases"`
}

// Discourse is one forum to sync (accepted, not used here).
type Discourse struct {
	URL        string              `yaml:"url" json:"url" cfg:"required"`
	Tags       []string            `yaml:"tags" json:"tags"`
	Categories []DiscourseCategory `yaml:"categories" json:"categories" validate:"dive"`
}

// DiscourseCategory is one forum category.
type DiscourseCategory struct {
	Slug string `yaml:"slug" json:"slug" cfg:"required" validate:"min=1,slug"`
	ID   int    `yaml:"id" json:"id" cfg:"required" validate:"min=1"`
}

// Mailman is one mailing-list archive (accepted, not used here).
type Mailman struct {
	ListName    string  `yaml:"list_name" json:"list_name" cfg:"required"`
	BaseURL     string  `yaml:"base_url" json:"base_url" cfg:"required"`
	DisplayName *string `yaml:"display_name" json:"display_name"`
	StartYear   *int    `yaml:"start_year" json:"start_year"`
}

// Docstrings lists repositories whose docstrings are indexed (accepted, not used here).
type Docstrings struct {
	Repos []DocstringRepo `yaml:"repos" json:"repos" validate:"dive"`
}

// DocstringRepo is one repository of Docstrings.
type DocstringRepo struct {
	Repo      string   `yaml:"repo" json:"repo" cfg:"required"`
	Branch    string   `yaml:"branch" json:"branch"`
	Languages []string `yaml:"languages" json:"languages" validate:"dive,oneof=matlab python"`
}

func (d *DocstringRepo) setDefaults() {
	d.Branch = "main"
	d.Languages = []string{"matlab", "python"}
}

// FAQGeneration configures FAQ mining (accepted, not used here).
type FAQGeneration struct {
	EvaluationAgent  *Agent               `yaml:"evaluation_agent" json:"evaluation_agent"`
	SummaryAgent     *Agent               `yaml:"summary_agent" json:"summary_agent"`
	QualityThreshold float64              `yaml:"quality_threshold" json:"quality_threshold" validate:"min=0,max=1"`
	Sources          map[string]FAQSource `yaml:"sources" json:"sources" validate:"dive"`
}

func (f *FAQGeneration) setDefaults() {
	f.QualityThreshold, f.Sources = 0.7, map[string]FAQSource{}
}

// Agent names the model one FAQ step uses.
type Agent struct {
	Model         string  `yaml:"model" json:"model" cfg:"required"`
	Provider      *string `yaml:"provider" json:"provider" validate:"omitempty,max=50"`
	Temperature   float64 `yaml:"temperature" json:"temperature" validate:"min=0,max=2"`
	EnableCaching bool    `yaml:"enable_caching" json:"enable_caching"`
}

func (a *Agent) setDefaults() { a.Temperature, a.EnableCaching = 0.1, true }

// FAQSource configures one FAQ source type.
type FAQSource struct {
	Enabled         bool `yaml:"enabled" json:"enabled"`
	MinMessages     int  `yaml:"min_messages" json:"min_messages" validate:"min=1"`
	MinParticipants int  `yaml:"min_participants" json:"min_participants" validate:"min=1"`
}

func (f *FAQSource) setDefaults() { f.Enabled, f.MinMessages, f.MinParticipants = true, 2, 2 }

// PublicFeeds opts in to the public FAQ and citation feeds (accepted, not used here).
type PublicFeeds struct {
	FAQ       bool `yaml:"faq" json:"faq"`
	Citations bool `yaml:"citations" json:"citations"`
}

// Sync holds one schedule per sync job (accepted, not used here).
type Sync struct {
	GitHub     *Schedule `yaml:"github" json:"github"`
	Papers     *Schedule `yaml:"papers" json:"papers"`
	Docstrings *Schedule `yaml:"docstrings" json:"docstrings"`
	Mailman    *Schedule `yaml:"mailman" json:"mailman"`
	FAQ        *Schedule `yaml:"faq" json:"faq"`
	BEPs       *Schedule `yaml:"beps" json:"beps"`
	Discourse  *Schedule `yaml:"discourse" json:"discourse"`
}

// Schedule is one five-field crontab line.
type Schedule struct {
	Cron string `yaml:"cron" json:"cron" cfg:"required"`
}

// Budget is the community's spending limit for platform-paid chats.
type Budget struct {
	DailyLimitUSD     float64 `yaml:"daily_limit_usd" json:"daily_limit_usd" cfg:"required" validate:"gt=0"`
	MonthlyLimitUSD   float64 `yaml:"monthly_limit_usd" json:"monthly_limit_usd" cfg:"required" validate:"gt=0"`
	AlertThresholdPct float64 `yaml:"alert_threshold_pct" json:"alert_threshold_pct" validate:"min=0,max=100"`
}

func (b *Budget) setDefaults() { b.AlertThresholdPct = 80 }

// Links are the community's public links shown by clients.
type Links struct {
	Homepage      *string `yaml:"homepage" json:"homepage"`
	Documentation *string `yaml:"documentation" json:"documentation"`
	Repository    *string `yaml:"repository" json:"repository"`
	Demo          *string `yaml:"demo" json:"demo"`
}

// Widget is how the chat widget looks (config.md §2.5).
type Widget struct {
	Title                     *string           `yaml:"title" json:"title" validate:"omitempty,max=100"`
	InitialMessage            *string           `yaml:"initial_message" json:"initial_message" validate:"omitempty,max=1000"`
	Placeholder               *string           `yaml:"placeholder" json:"placeholder" validate:"omitempty,max=200"`
	SuggestedQuestions        []string          `yaml:"suggested_questions" json:"suggested_questions"`
	DatasetSuggestedQuestions []DatasetQuestion `yaml:"dataset_suggested_questions" json:"dataset_suggested_questions"`
	ThemeColor                *string           `yaml:"theme_color" json:"theme_color" validate:"omitempty,rgbhex"`
	UserBubbleColor           *string           `yaml:"user_bubble_color" json:"user_bubble_color" validate:"omitempty,rgbhex"`
	ThemeTextColor            *string           `yaml:"theme_text_color" json:"theme_text_color" validate:"omitempty,rgbhex"`
	AccentColor               *string           `yaml:"accent_color" json:"accent_color" validate:"omitempty,rgbhex"`
	UserBubbleTextColor       *string           `yaml:"user_bubble_text_color" json:"user_bubble_text_color" validate:"omitempty,rgbhex"`
	LogoURL                   *string           `yaml:"logo_url" json:"logo_url" validate:"omitempty,max=500"`
	Launcher                  string            `yaml:"launcher" json:"launcher" validate:"oneof=bubble capsule"`
	ColorScheme               string            `yaml:"color_scheme" json:"color_scheme" validate:"oneof=light auto"`
	LauncherLabel             *string           `yaml:"launcher_label" json:"launcher_label" validate:"omitempty,max=40"`
	LauncherPosition          string            `yaml:"launcher_position" json:"launcher_position" validate:"oneof=bottom-right bottom-left"`
	LauncherSize              *int              `yaml:"launcher_size" json:"launcher_size" cfg:"strict" validate:"omitempty,min=44,max=96"`
	LauncherOpenSize          *int              `yaml:"launcher_open_size" json:"launcher_open_size" cfg:"strict" validate:"omitempty,min=44,max=96"`
	LauncherOffsetX           *int              `yaml:"launcher_offset_x" json:"launcher_offset_x" cfg:"strict" validate:"omitempty,min=0,max=200"`
	LauncherOffsetY           *int              `yaml:"launcher_offset_y" json:"launcher_offset_y" cfg:"strict" validate:"omitempty,min=0,max=200"`
	LauncherMobileOffsetX     *int              `yaml:"launcher_mobile_offset_x" json:"launcher_mobile_offset_x" cfg:"strict" validate:"omitempty,min=0,max=200"`
	LauncherMobileOffsetY     *int              `yaml:"launcher_mobile_offset_y" json:"launcher_mobile_offset_y" cfg:"strict" validate:"omitempty,min=0,max=200"`
}

func (w *Widget) setDefaults() {
	w.SuggestedQuestions, w.DatasetSuggestedQuestions = []string{}, []DatasetQuestion{}
	w.Launcher, w.ColorScheme, w.LauncherPosition = "bubble", "light", "bottom-right"
}

// DatasetQuestion is a suggested-question template with {dataset_id}, {subject}, {task} blanks.
type DatasetQuestion struct {
	Text      string `yaml:"text" json:"text" cfg:"required"`
	NeedsZarr bool   `yaml:"needs_zarr" json:"needs_zarr"`
}

// Notebook points at the community's starter notebook (accepted, not used here).
type Notebook struct {
	Starter         string            `yaml:"starter" json:"starter" cfg:"required"`
	DatasetPattern  string            `yaml:"dataset_pattern" json:"dataset_pattern" cfg:"required"`
	ZarrBase        map[string]string `yaml:"zarr_base" json:"zarr_base" cfg:"required"`
	DatasetPageBase map[string]string `yaml:"dataset_page_base" json:"dataset_page_base" cfg:"required"`
}

// Extensions holds the community's tools.
type Extensions struct {
	PythonPlugins []PythonPlugin `yaml:"python_plugins" json:"python_plugins" validate:"dive"`
	MCPServers    []MCPServer    `yaml:"mcp_servers" json:"mcp_servers" validate:"dive"`
	ClientTools   []ClientTool   `yaml:"client_tools" json:"client_tools" validate:"dive"`
	// MCPToolsAllow and MCPToolsDeny are glob patterns (path.Match syntax) over the bound names
	// of MCP tools, "<server>__<tool>": with an allow list only the tools it matches are bound;
	// a tool the deny list matches never is. Deny wins.
	MCPToolsAllow []string `yaml:"mcp_tools_allow" json:"mcp_tools_allow"`
	MCPToolsDeny  []string `yaml:"mcp_tools_deny" json:"mcp_tools_deny"`
}

// PythonPlugin is an OSA in-process tool module (accepted, not used here).
type PythonPlugin struct {
	Module string    `yaml:"module" json:"module" cfg:"required"`
	Tools  *[]string `yaml:"tools" json:"tools"`
}

// The bounds of an MCP server's call_timeout_seconds.
const (
	MCPDefaultCallSeconds = 30
	MCPMaxCallSeconds     = 300
)

// MCPServer is a Model Context Protocol server the model's knowledge tools come from: a local
// command, or a remote URL that may differ per deployment.
type MCPServer struct {
	Name    string                 `yaml:"name" json:"name" cfg:"required"`
	Command *[]string              `yaml:"command" json:"command"`
	URL     *PerDeployment[string] `yaml:"url" json:"url"`
	// HeadersEnv (url servers) maps an HTTP header name to the environment variable holding its
	// value, so that no secret is written in YAML.
	HeadersEnv map[string]string `yaml:"headers_env" json:"headers_env"`
	// Env (command servers) names the environment variables passed to the child process, besides
	// the minimal PATH, HOME, LANG and TMPDIR it always gets.
	Env []string `yaml:"env" json:"env"`
	// CallTimeoutSeconds bounds one tools/call (default 30).
	CallTimeoutSeconds int `yaml:"call_timeout_seconds" json:"call_timeout_seconds"`
}

func (s *MCPServer) setDefaults() {
	s.HeadersEnv, s.Env, s.CallTimeoutSeconds = map[string]string{}, []string{}, MCPDefaultCallSeconds
}

// ClientTool is a tool whose code runs in the reader's browser (config.md §3.1).
type ClientTool struct {
	Name               string `yaml:"name" json:"name" cfg:"required"`
	Runtime            string `yaml:"runtime" json:"runtime" cfg:"required" validate:"oneof=python"`
	RequiresPermission bool   `yaml:"requires_permission" json:"requires_permission"`
	Description        string `yaml:"description" json:"description" cfg:"required"`
}

func (c *ClientTool) setDefaults() { c.RequiresPermission = true }

// Runtime describes the execution environments that client tools run in.
type Runtime struct {
	Python *PythonRuntime `yaml:"python" json:"python"`
}

// PythonRuntime is the browser's Pyodide environment (config.md §4).
type PythonRuntime struct {
	PyodideVersion   string                  `yaml:"pyodide_version" json:"pyodide_version" cfg:"required"`
	Lockfile         *string                 `yaml:"lockfile" json:"lockfile"`
	Preload          []string                `yaml:"preload" json:"preload"`
	AllowInstall     []string                `yaml:"allow_install" json:"allow_install"`
	ImportBeforeSeal []string                `yaml:"import_before_seal" json:"import_before_seal"`
	Prelude          *PerDeployment[string]  `yaml:"prelude" json:"prelude"`
	PreloadOn        string                  `yaml:"preload_on" json:"preload_on" validate:"oneof=first_run widget_open first_message"`
	FetchAllow       PerDeployment[[]string] `yaml:"fetch_allow" json:"fetch_allow"`
	IndexURLs        []string                `yaml:"index_urls" json:"index_urls"`
	Limits           RuntimeLimits           `yaml:"limits" json:"limits"`
	// ServerFallback lets the server run a configured client tool itself, in its own Python
	// engine, when the caller does not declare it (a command-line client, an old widget, a
	// page that blocks WebAssembly). Not in the reference; off by default.
	ServerFallback bool `yaml:"server_fallback" json:"server_fallback"`
	// Uploads lets readers attach data files to a session (runs read them at /data/<name>).
	Uploads Uploads `yaml:"uploads" json:"uploads"`
}

// Uploads bounds the files a reader may attach to a session. Not in the reference.
type Uploads struct {
	Enabled      bool     `yaml:"enabled" json:"enabled"`
	MaxFileMB    int      `yaml:"max_file_mb" json:"max_file_mb"`
	MaxSessionMB int      `yaml:"max_session_mb" json:"max_session_mb"`
	MaxFiles     int      `yaml:"max_files" json:"max_files"`
	Types        []string `yaml:"types" json:"types"`
}

// setDefaults fills issue 14's defaults: off, 25 MB a file, 100 MB a session, 16 files, every
// type but parquet. The list is a copy, so no community can change limits' default.
func (u *Uploads) setDefaults() {
	b := limits.Uploads
	*u = Uploads{
		MaxFileMB:    b.MaxFileMB.Default,
		MaxSessionMB: b.MaxSessionMB.Default,
		MaxFiles:     b.MaxFiles.Default,
		Types:        slices.Clone(limits.DefaultUploadTypes),
	}
}

func (p *PythonRuntime) setDefaults() {
	p.Preload, p.AllowInstall, p.ImportBeforeSeal, p.IndexURLs = []string{}, []string{}, []string{}, []string{}
	p.PreloadOn = "first_run"
	p.FetchAllow = Single([]string{})
	p.Limits.setDefaults()
	p.Uploads.setDefaults()
}

// RuntimeLimits are instructions to the browser, bounded so that they never exceed what the
// server accepts (config.md §5.2).
type RuntimeLimits struct {
	MemoryMB    int `yaml:"memory_mb" json:"memory_mb"`
	StdoutChars int `yaml:"stdout_chars" json:"stdout_chars"`
	StderrChars int `yaml:"stderr_chars" json:"stderr_chars"`
	Images      int `yaml:"images" json:"images"`
	ImagePx     int `yaml:"image_px" json:"image_px"`
	ExecSeconds int `yaml:"exec_seconds" json:"exec_seconds"`
}

func (r *RuntimeLimits) setDefaults() {
	b := limits.Runtime
	*r = RuntimeLimits{
		MemoryMB:    b.MemoryMB.Default,
		StdoutChars: b.StdoutChars.Default,
		StderrChars: b.StderrChars.Default,
		Images:      b.Images.Default,
		ImagePx:     b.ImagePx.Default,
		ExecSeconds: b.ExecSeconds.Default,
	}
}
