package routers

import (
	"context"
	"errors"
	"testing"

	"github.com/osc-assistant/assistant/config"
)

// TestReloadApplied: what follows the communities (MCP servers, documentation) is told of a
// set only once the catalog serves it: a reload that fails leaves it on the set it had.
func TestReloadApplied(t *testing.T) {
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var applied []*config.Set
	fail := false
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo"}, Getenv: func(string) string { return "" },
		Communities: set,
		Load: func(context.Context) (*config.Set, error) {
			if fail {
				return nil, errors.New("broken")
			}
			return set, nil
		},
		Applied: func(s *config.Set) { applied = append(applied, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil || len(applied) != 1 || applied[0] != set {
		t.Fatalf("a good reload: %v, applied %d", err, len(applied))
	}
	fail = true
	if err := s.Reload(context.Background()); !errors.Is(err, ErrReloadFailed) || len(applied) != 1 {
		t.Errorf("a failed reload: %v, applied %d times", err, len(applied))
	}
}
