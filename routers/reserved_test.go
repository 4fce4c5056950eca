package routers

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
)

// TestReservedIDsMatchRoutes ties config.ReservedIDs to the route table: every fixed first path
// segment the server routes is reserved (a community with that id would be unreachable), and
// every reserved id is routed, except the reference's own routes this server does not serve.
func TestReservedIDsMatchRoutes(t *testing.T) {
	var notServed []string // every reserved id is served now (the sync routes since issue 24)
	s := newTestServer(t)
	routed := map[string]bool{}
	for _, r := range s.e.Routes() {
		first, _, _ := strings.Cut(strings.TrimPrefix(r.Path, "/"), "/")
		if first == "" || strings.HasPrefix(first, ":") || strings.HasPrefix(first, "*") {
			continue
		}
		routed[first] = true
	}
	var missing, unrouted []string
	for seg := range routed {
		if !slices.Contains(config.ReservedIDs, seg) {
			missing = append(missing, seg)
		}
	}
	for _, id := range config.ReservedIDs {
		if !routed[id] && !slices.Contains(notServed, id) {
			unrouted = append(unrouted, id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(unrouted) > 0 {
		t.Errorf("routed but not reserved: %q; reserved but neither routed nor the reference's: %q", missing, unrouted)
	}
}
