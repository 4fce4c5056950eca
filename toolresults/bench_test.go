package toolresults

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"testing"

	"github.com/osc-assistant/assistant/limits"
)

// largestPNG encodes, without compression, the largest square opaque image whose PNG file stays
// within limits.MaxImageBytes: a real, fully decodable PNG whose IDAT fills almost the whole cap.
func largestPNG(b *testing.B) (data []byte, edge int) {
	b.Helper()
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	for edge = 820; edge > 0; edge-- {
		img := image.NewNRGBA(image.Rect(0, 0, edge, edge))
		for i := range img.Pix {
			img.Pix[i] = byte(i * 13)
			if i%4 == 3 {
				img.Pix[i] = 0xff // opaque, so the encoder writes 3-byte RGB pixels
			}
		}
		var buf bytes.Buffer
		if err := enc.Encode(&buf, img); err != nil {
			b.Fatal(err)
		}
		if buf.Len() <= int(limits.MaxImageBytes) {
			return buf.Bytes(), edge
		}
	}
	b.Fatal("no PNG fits")
	return nil, 0
}

// BenchmarkDecodeMaximal decodes a valid result at every cap (maximalResult) whose three
// images are real uncompressed PNGs just under limits.MaxImageBytes each.
func BenchmarkDecodeMaximal(b *testing.B) {
	img, edge := largestPNG(b)
	body, err := json.Marshal(maximalResult(base64.StdEncoding.EncodeToString(img), edge, edge))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("body %d bytes; each image %dx%d, %d bytes", len(body), edge, edge, len(img))
	// The baseline is what a lax server would do: encoding/json into the same struct, with no
	// caps, no base64 or image checks. The ratio is the price of the strict 422 check.
	b.Run("baseline=encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var r Result
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeTypical decodes the kind of result the widget usually posts: some output, a
// summary and one small figure.
func BenchmarkDecodeTypical(b *testing.B) {
	body, err := json.Marshal(resultWith(
		"stdout", "   a  b\n0  1  2\n1  3  4\n",
		"summary", "DataFrame with 2 rows and 2 columns",
		"images", []any{imageObj("image/png", testPNG3x2, 3, 2)},
		"artifacts", []string{"analysis.py"},
		"elapsed_ms", 812,
	))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
