package toolresults

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestHostileInputCost feeds 4 MiB bodies built to make a parser or checker amplify them, and
// checks that none costs more than twice its size in allocations (the one copy of its strings
// is the floor).
func TestHostileInputCost(t *testing.T) {
	const size = 4 << 20
	repeat := func(prefix, unit, suffix string) []byte {
		return []byte(prefix + strings.Repeat(unit, (size-len(prefix)-len(suffix))/len(unit)) + suffix)
	}
	cases := []struct {
		name string
		body []byte
	}{
		{"tiny_array_items", repeat(`{"call_id":"c","x":[`, `0,`, `0]}`)},
		{"many_unknown_keys", func() []byte {
			var b bytes.Buffer
			b.WriteString(`{"call_id":"c"`)
			for i := 0; b.Len() < size; i++ {
				b.WriteString(`,"k`)
				b.WriteString(strings.Repeat("x", i%7))
				b.WriteString(`":0`)
			}
			b.WriteString("}")
			return b.Bytes()
		}()},
		{"deep_nesting", repeat(`{"call_id":"c","x":`, `[`, ``)},
		{"escapes", repeat(`{"call_id":"c","stdout":"`, `\u00e9\n`, `"}`)},
		{"long_unknown_string", repeat(`{"call_id":"c","x":"`, `abcdefgh`, `"}`)},
		{"bad_base64", repeat(`{"call_id":"c","images":[{"mime":"image/png","width":1,"height":1,"data_base64":"`, `AAA-`, `"}]}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Decode(tc.body)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 2*uint64(len(tc.body)) {
				t.Errorf("a %d-byte body allocated %d bytes", len(tc.body), got)
			}
			if n := len(err.(*ValidationError).Errors); n > 2*maxValues {
				t.Errorf("%d errors", n)
			}
		})
	}
}
