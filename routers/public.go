package routers

import (
	"encoding/json"

	"github.com/osc-assistant/assistant/config"
)

// publicConfig is GET /{c}, the config the widget reads (api.md §4.1). Every key is always
// present; per-deployment values are resolved for the serving deployment.
type publicConfig struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	DefaultModel         string          `json:"default_model"`
	DefaultModelProvider *string         `json:"default_model_provider"`
	OfferedModels        []offeredModel  `json:"offered_models"`
	Widget               widgetConfig    `json:"widget"`
	Status               string          `json:"status"`
	ClientTools          []clientTool    `json:"client_tools"`
	Runtime              *publicRuntime  `json:"runtime"`
	RuntimeLock          json.RawMessage `json:"runtime_lock"`
}

type offeredModel struct {
	ID           string `json:"id"`
	Label        string `json:"label"`
	PlatformOnly bool   `json:"platform_only"`
}

type clientTool struct {
	Name               string `json:"name"`
	Runtime            string `json:"runtime"`
	RequiresPermission bool   `json:"requires_permission"`
}

type publicRuntime struct {
	Python *publicPython `json:"python"`
}

type publicPython struct {
	PyodideVersion   string               `json:"pyodide_version"`
	Lockfile         *string              `json:"lockfile"`
	Preload          []string             `json:"preload"`
	AllowInstall     []string             `json:"allow_install"`
	ImportBeforeSeal []string             `json:"import_before_seal"`
	Prelude          *string              `json:"prelude"`
	PreloadOn        string               `json:"preload_on"`
	FetchAllow       []string             `json:"fetch_allow"`
	IndexURLs        []string             `json:"index_urls"`
	Limits           config.RuntimeLimits `json:"limits"`
	// Uploads is always in the python block, off or on, so a widget decides on a file picker
	// from it alone.
	Uploads config.Uploads `json:"uploads"`
}

// widgetConfig is the widget block of GET /{c}: every key present, null when unset.
type widgetConfig struct {
	Title                     string                   `json:"title"`
	InitialMessage            *string                  `json:"initial_message"`
	Placeholder               string                   `json:"placeholder"`
	SuggestedQuestions        []string                 `json:"suggested_questions"`
	DatasetSuggestedQuestions []config.DatasetQuestion `json:"dataset_suggested_questions"`
	LogoURL                   *string                  `json:"logo_url"`
	ThemeColor                *string                  `json:"theme_color"`
	UserBubbleColor           *string                  `json:"user_bubble_color"`
	ThemeTextColor            *string                  `json:"theme_text_color"`
	AccentColor               *string                  `json:"accent_color"`
	UserBubbleTextColor       *string                  `json:"user_bubble_text_color"`
	Launcher                  *string                  `json:"launcher"`
	LauncherLabel             *string                  `json:"launcher_label"`
	LauncherPosition          *string                  `json:"launcher_position"`
	LauncherSize              *int                     `json:"launcher_size"`
	LauncherOpenSize          *int                     `json:"launcher_open_size"`
	LauncherOffsetX           *int                     `json:"launcher_offset_x"`
	LauncherOffsetY           *int                     `json:"launcher_offset_y"`
	LauncherMobileOffsetX     *int                     `json:"launcher_mobile_offset_x"`
	LauncherMobileOffsetY     *int                     `json:"launcher_mobile_offset_y"`
	ColorScheme               *string                  `json:"color_scheme"`
}

// listedWidget is the widget block of GET /communities: the colour and launcher keys appear
// only when set, as in the reference.
type listedWidget struct {
	Title                     string                   `json:"title"`
	InitialMessage            *string                  `json:"initial_message"`
	Placeholder               string                   `json:"placeholder"`
	SuggestedQuestions        []string                 `json:"suggested_questions"`
	LogoURL                   *string                  `json:"logo_url"`
	DatasetSuggestedQuestions []config.DatasetQuestion `json:"dataset_suggested_questions,omitempty"`
	ThemeColor                *string                  `json:"theme_color,omitempty"`
	UserBubbleColor           *string                  `json:"user_bubble_color,omitempty"`
	ThemeTextColor            *string                  `json:"theme_text_color,omitempty"`
	AccentColor               *string                  `json:"accent_color,omitempty"`
	UserBubbleTextColor       *string                  `json:"user_bubble_text_color,omitempty"`
	Launcher                  *string                  `json:"launcher,omitempty"`
	ColorScheme               *string                  `json:"color_scheme,omitempty"`
	LauncherLabel             *string                  `json:"launcher_label,omitempty"`
	LauncherPosition          *string                  `json:"launcher_position,omitempty"`
	LauncherSize              *int                     `json:"launcher_size,omitempty"`
	LauncherOpenSize          *int                     `json:"launcher_open_size,omitempty"`
	LauncherOffsetX           *int                     `json:"launcher_offset_x,omitempty"`
	LauncherOffsetY           *int                     `json:"launcher_offset_y,omitempty"`
	LauncherMobileOffsetX     *int                     `json:"launcher_mobile_offset_x,omitempty"`
	LauncherMobileOffsetY     *int                     `json:"launcher_mobile_offset_y,omitempty"`
}

type listedCommunity struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Status      string       `json:"status"`
	Widget      listedWidget `json:"widget"`
	Links       *listedLinks `json:"links"`
}

type listedLinks struct {
	Homepage      *string `json:"homepage,omitempty"`
	Documentation *string `json:"documentation,omitempty"`
	Repository    *string `json:"repository,omitempty"`
	Demo          *string `json:"demo,omitempty"`
}

func strPtr(s string) *string { return &s }

// resolveWidget fills the widget defaults the reference fills (config.md §2.5).
func resolveWidget(c *config.Community, logoPath *string) widgetConfig {
	w := c.Widget
	if w == nil {
		w = &config.Widget{Launcher: "bubble", ColorScheme: "light", LauncherPosition: "bottom-right"}
	}
	out := widgetConfig{
		Title:                 c.Name,
		InitialMessage:        w.InitialMessage,
		Placeholder:           "Ask a question...",
		SuggestedQuestions:    w.SuggestedQuestions,
		LogoURL:               w.LogoURL,
		ThemeColor:            w.ThemeColor,
		UserBubbleColor:       w.UserBubbleColor,
		ThemeTextColor:        w.ThemeTextColor,
		AccentColor:           w.AccentColor,
		UserBubbleTextColor:   w.UserBubbleTextColor,
		LauncherLabel:         w.LauncherLabel,
		LauncherSize:          w.LauncherSize,
		LauncherOpenSize:      w.LauncherOpenSize,
		LauncherOffsetX:       w.LauncherOffsetX,
		LauncherOffsetY:       w.LauncherOffsetY,
		LauncherMobileOffsetX: w.LauncherMobileOffsetX,
		LauncherMobileOffsetY: w.LauncherMobileOffsetY,
	}
	if out.Title == "" {
		out.Title = "Assistant"
	}
	if w.Title != nil {
		out.Title = *w.Title
	}
	if w.Placeholder != nil {
		out.Placeholder = *w.Placeholder
	}
	if out.SuggestedQuestions == nil {
		out.SuggestedQuestions = []string{}
	}
	if len(w.DatasetSuggestedQuestions) > 0 {
		out.DatasetSuggestedQuestions = w.DatasetSuggestedQuestions
	}
	if out.LogoURL == nil {
		out.LogoURL = logoPath
	}
	if w.Launcher == "capsule" {
		out.Launcher = strPtr("capsule")
	}
	if w.LauncherPosition == "bottom-left" {
		out.LauncherPosition = strPtr("bottom-left")
	}
	if w.ColorScheme == "auto" {
		out.ColorScheme = strPtr("auto")
	}
	return out
}

func listWidget(w widgetConfig) listedWidget {
	return listedWidget{
		Title: w.Title, InitialMessage: w.InitialMessage, Placeholder: w.Placeholder,
		SuggestedQuestions: w.SuggestedQuestions, LogoURL: w.LogoURL,
		DatasetSuggestedQuestions: w.DatasetSuggestedQuestions,
		ThemeColor:                w.ThemeColor, UserBubbleColor: w.UserBubbleColor, ThemeTextColor: w.ThemeTextColor,
		AccentColor: w.AccentColor, UserBubbleTextColor: w.UserBubbleTextColor,
		Launcher: w.Launcher, ColorScheme: w.ColorScheme, LauncherLabel: w.LauncherLabel,
		LauncherPosition: w.LauncherPosition, LauncherSize: w.LauncherSize, LauncherOpenSize: w.LauncherOpenSize,
		LauncherOffsetX: w.LauncherOffsetX, LauncherOffsetY: w.LauncherOffsetY,
		LauncherMobileOffsetX: w.LauncherMobileOffsetX, LauncherMobileOffsetY: w.LauncherMobileOffsetY,
	}
}

// resolvePython is runtime.python for one deployment, every default filled.
func resolvePython(py *config.PythonRuntime, dep config.Deployment) *publicPython {
	out := &publicPython{
		PyodideVersion:   py.PyodideVersion,
		Lockfile:         py.Lockfile,
		Preload:          py.Preload,
		AllowInstall:     py.AllowInstall,
		ImportBeforeSeal: py.ImportBeforeSeal,
		PreloadOn:        py.PreloadOn,
		FetchAllow:       py.FetchAllow.Resolve(dep),
		IndexURLs:        py.IndexURLs,
		Limits:           py.Limits,
		Uploads:          py.Uploads,
	}
	if py.Prelude != nil {
		out.Prelude = strPtr(py.Prelude.Resolve(dep))
	}
	if out.FetchAllow == nil {
		out.FetchAllow = []string{}
	}
	if out.Uploads.Types == nil {
		out.Uploads.Types = []string{}
	}
	return out
}
