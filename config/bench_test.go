package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// nemarSized is a NEMAR-sized community (every part of runtime.python, a rich widget, MCP and a
// notebook) without a lockfile, so the benchmark measures config loading, not wheel hashing.
func nemarSized(t testing.TB) string {
	data, err := os.ReadFile("../communities/nemar/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), "    lockfile: runtime/lock.json\n", "", 1)
	s = strings.Replace(s, ", nemar-tools]", "]", 1)
	return s
}

func BenchmarkLoad(b *testing.B) {
	src := nemarSized(b)
	for _, n := range []int{1, 100, 1000} {
		dir := b.TempDir()
		for i := range n {
			id := fmt.Sprintf("community-%d", i)
			if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
				b.Fatal(err)
			}
			data := strings.Replace(src, "id: nemar", "id: "+id, 1)
			if err := os.WriteFile(filepath.Join(dir, id, "config.yaml"), []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		// The baseline reads and parses the same files and checks nothing: the floor any loader
		// pays, so the ratio to it is what the checks cost.
		b.Run(fmt.Sprintf("communities=%d/baseline=parse-only", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				entries, err := os.ReadDir(dir)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range entries {
					data, err := os.ReadFile(filepath.Join(dir, e.Name(), "config.yaml"))
					if err != nil {
						b.Fatal(err)
					}
					var node yaml.Node
					if err := yaml.Unmarshal(data, &node); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("communities=%d/load", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set, err := Load(context.Background(), dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(set.Communities) != n {
					b.Fatalf("loaded %d, want %d", len(set.Communities), n)
				}
			}
		})
	}
}
