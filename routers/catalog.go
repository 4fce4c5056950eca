package routers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"os"
	"path"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/runtimelock"
)

// maxLogoBytes bounds a logo read at load; a widget logo is a few kilobytes.
const maxLogoBytes = 1 << 20

// logoNames are the files a community's logo may be, in priority order (api.md §4.6).
var logoNames = []string{"logo.svg", "logo.png", "logo.jpg", "logo.jpeg", "logo.webp"}

// catalog is everything the handlers serve, computed once per (re)load. It is never modified
// once it is served (sealCatalog adds the sealed copies before).
type catalog struct {
	byID        map[string]*community
	ids         []string
	communities body // GET /communities
	origins     *originSet
}

// community is one community's precomputed responses.
type community struct {
	cfg     *config.Community
	status  string
	origins *originSet
	// public is GET /{c} with client tools offered; plain is the same without them (the kill
	// switch, or nothing to offer). Both are fixed bytes with a strong ETag per encoding.
	public, plain body
	// offersTools is false when no client tool is configured or the overlay failed.
	offersTools bool
	// overlay serves the wheels; nil when the community names no lockfile.
	overlay       *runtimelock.Verified
	overlayFailed bool
	// wheels are the overlay's verified wheels by exact file name, with their headers.
	wheels map[string]*wheelFile
	logo   *logo
}

type logo struct {
	body body
	svg  bool
}

func newCatalog(set *config.Set, s Settings, log *slog.Logger) (*catalog, error) {
	cat := &catalog{byID: map[string]*community{}, origins: newOriginSet(s.CORSOrigins)}
	var listed []listedCommunity
	for _, c := range set.Communities {
		cc, err := newCommunity(c, s, log)
		if err != nil {
			return nil, err
		}
		cat.byID[c.ID] = cc
		cat.ids = append(cat.ids, c.ID)
		cat.origins.add(c.CORSOrigins)
		if c.Status == "available" {
			var pc publicConfig
			if err := json.Unmarshal(cc.plain.identity.data, &pc); err != nil {
				return nil, err
			}
			var links *listedLinks
			if l := c.Links; l != nil {
				links = &listedLinks{Homepage: l.Homepage, Documentation: l.Documentation, Repository: l.Repository, Demo: l.Demo}
			}
			listed = append(listed, listedCommunity{ID: c.ID, Name: c.Name, Description: c.Description, Status: c.Status, Widget: listWidget(pc.Widget), Links: links})
		}
	}
	sort.Strings(cat.ids)
	if listed == nil {
		listed = []listedCommunity{}
	}
	data, err := json.Marshal(listed)
	if err != nil {
		return nil, err
	}
	cat.communities = newBody(echo.MIMEApplicationJSON, data, true)
	return cat, nil
}

func newCommunity(c *config.Community, s Settings, log *slog.Logger) (*community, error) {
	cc := &community{cfg: c, status: "healthy", origins: newOriginSet(s.CORSOrigins)}
	cc.origins.add(c.CORSOrigins)
	lg, err := readLogo(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("community %s: %v", c.ID, err)
	}
	cc.logo = lg
	py := pythonOf(c)
	configured := c.Extensions != nil && len(c.Extensions.ClientTools) > 0 && py != nil
	if py != nil && py.Lockfile != nil {
		cc.overlay = c.Overlay
		if c.Overlay == nil {
			// Fail closed, as the reference does: the community stays up without client tools.
			cc.overlayFailed = true
			cc.status = "degraded"
			log.Error("lock overlay does not verify; client tools are off for this community",
				slog.String("community", c.ID), slog.Any("error", c.OverlayErr))
		}
	}
	cc.offersTools = configured && !cc.overlayFailed
	if ov := cc.overlay.Overlay(); ov != nil && !cc.overlayFailed {
		cc.wheels = map[string]*wheelFile{}
		for _, p := range ov.Packages {
			if data, sum, ok := cc.overlay.Wheel(p.FileName); ok {
				cc.wheels[p.FileName] = newWheelFile(data, sum)
			}
		}
	}

	var logoPath *string
	if lg != nil {
		logoPath = strPtr("/" + c.ID + "/logo")
	}
	model := s.DefaultModel
	if c.DefaultModel != nil {
		model = *c.DefaultModel
	}
	if s.ResolveModel != nil {
		model = s.ResolveModel(c)
	}
	pc := publicConfig{
		ID:                   c.ID,
		Name:                 c.Name,
		Description:          c.Description,
		DefaultModel:         model,
		DefaultModelProvider: c.DefaultModelProvider,
		OfferedModels:        []offeredModel{{ID: model, Label: model}},
		Widget:               resolveWidget(c, logoPath),
		Status:               cc.status,
		ClientTools:          []clientTool{},
		RuntimeLock:          json.RawMessage("null"),
	}
	plain, err := json.Marshal(pc)
	if err != nil {
		return nil, err
	}
	cc.plain = newBody(echo.MIMEApplicationJSON, plain, true)
	cc.public = cc.plain
	if cc.offersTools {
		for _, t := range c.Extensions.ClientTools {
			pc.ClientTools = append(pc.ClientTools, clientTool{Name: t.Name, Runtime: t.Runtime, RequiresPermission: t.RequiresPermission})
		}
		pc.Runtime = &publicRuntime{Python: resolvePython(py, s.Deployment)}
		if cc.overlay != nil {
			pc.RuntimeLock = cc.overlay.JSON()
		}
		full, err := json.Marshal(pc)
		if err != nil {
			return nil, err
		}
		cc.public = newBody(echo.MIMEApplicationJSON, full, true)
	}
	return cc, nil
}

func pythonOf(c *config.Community) *config.PythonRuntime {
	if c.Runtime == nil {
		return nil
	}
	return c.Runtime.Python
}

// readLogo reads the community's logo, if it has one, through an os.Root so a symlink cannot
// lead out of the community's folder.
func readLogo(dir string) (*logo, error) {
	if dir == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, name := range logoNames {
		f, err := root.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("logo %s: %v", name, err)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxLogoBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("logo %s: %v", name, err)
		}
		if len(data) > maxLogoBytes {
			return nil, fmt.Errorf("logo %s is larger than %d bytes", name, maxLogoBytes)
		}
		ext := path.Ext(name)
		ct := mime.TypeByExtension(ext)
		if ext == ".webp" {
			ct = "image/webp"
		}
		// An SVG is text and compresses well; the raster formats are compressed already.
		return &logo{body: newBody(ct, data, ext == ".svg"), svg: ext == ".svg"}, nil
	}
	return nil, nil
}
