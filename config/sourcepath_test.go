package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/limits"
)

// TestSourcePathSize: a source_path over the size a fetched document may have is refused at
// load (the testdata cases cover the other source_path rules; a 4 MiB file is made here).
func TestSourcePathSize(t *testing.T) {
	for _, size := range []int{int(limits.MaxDocumentBytes), int(limits.MaxDocumentBytes) + 1} {
		dir := filepath.Join(t.TempDir(), "demo")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := "id: demo\nname: Demo\ndescription: d\ndocumentation:\n  - title: Big\n    url: https://example.org/big\n    source_path: big.md\n"
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "big.md"), []byte(strings.Repeat("a", size)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), filepath.Dir(dir), Options{})
		tooBig := size > int(limits.MaxDocumentBytes)
		if (err != nil) != tooBig || (tooBig && !strings.Contains(err.Error(), "documentation[0].source_path: source_path \"big.md\" is 4194305 bytes, over the 4 MiB")) {
			t.Errorf("%d bytes: %v", size, err)
		}
	}
}
