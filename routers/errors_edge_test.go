package routers

import (
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/limits"
)

// TestErrorBodyGuardCountsOmitted: items that fit just under the cap on their own still fit
// once the final "omitted" item is added for errors the decoder already left out.
func TestErrorBodyGuardCountsOmitted(t *testing.T) {
	max := int(limits.MaxErrorBodyBytes)
	found := false
	for pad := 0; pad < 200 && !found; pad++ {
		items := make([]detailItem, 21)
		for i := range items {
			items[i] = detailItem{Type: "value_error", Loc: []any{"body", i}, Msg: "Value error", Input: strings.Repeat("x", 3000)}
		}
		items[0].Input = strings.Repeat("x", 3000+pad*10)
		n := len(itemsJSON(items, 0))
		if n < max-120 || n >= max {
			continue
		}
		found = true
		if got := len(itemsJSON(items, 5)); got >= max {
			t.Errorf("with 5 omitted: %d bytes, want under %d (without: %d)", got, max, n)
		}
	}
	if !found {
		t.Fatal("no item list landed just under the cap; adjust the padding")
	}
}
