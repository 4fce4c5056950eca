package toolresults

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/osc-assistant/assistant/limits"
)

func encodePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 31)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 75}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decodeOne posts one image in a minimal result and returns the problems (type, loc, msg).
func decodeOne(t *testing.T, mime string, data []byte, w, h int) []FieldError {
	t.Helper()
	body, err := json.Marshal(map[string]any{"call_id": "c", "images": []any{
		imageObj(mime, base64.StdEncoding.EncodeToString(data), w, h),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(body)
	if err != nil {
		return detailOf(t, err).Errors
	}
	if len(r.Images) != 1 || r.Images[0].Width != w || r.Images[0].Height != h || r.Images[0].MIME != mime {
		t.Fatalf("decoded images = %+v", r.Images)
	}
	return nil
}

func imageProblem(msg string) []FieldError {
	return []FieldError{{Type: "value_error", Loc: []any{"images", 0}, Msg: "Value error, " + msg}}
}

var ignoreInputAndCtx = cmpopts.IgnoreFields(FieldError{}, "Input", "Ctx")

// TestImagesFromEncoders checks the header readers against images written by Go's own
// encoders, at several sizes including the largest edge.
func TestImagesFromEncoders(t *testing.T) {
	edge := int(limits.MaxImageEdgePx)
	encoders := []struct {
		mime, name string
		encode     func(testing.TB, int, int) []byte
	}{
		{"image/png", "PNG", encodePNG},
		{"image/jpeg", "JPEG", encodeJPEG},
		{"image/gif", "GIF", encodeGIF},
	}
	sizes := [][2]int{{1, 1}, {17, 5}, {5, 17}, {640, 480}, {edge, 1}, {1, edge}}
	for _, enc := range encoders {
		for _, size := range sizes {
			w, h := size[0], size[1]
			data := enc.encode(t, w, h)
			t.Run(enc.name+"/"+jsonString(w)+"x"+jsonString(h), func(t *testing.T) {
				if got := decodeOne(t, enc.mime, data, w, h); got != nil {
					t.Fatalf("refused: %+v", got)
				}
				// Swapped or off-by-one sizes are refused with what the header says.
				for _, wrong := range [][2]int{{h, w}, {w + 1, h}, {w, h + 1}} {
					if wrong == size || wrong[0] > edge || wrong[1] > edge {
						continue
					}
					want := imageProblem("declared " + jsonString(wrong[0]) + "x" + jsonString(wrong[1]) +
						" but the image header says " + jsonString(w) + "x" + jsonString(h))
					if diff := cmp.Diff(want, decodeOne(t, enc.mime, data, wrong[0], wrong[1]), ignoreInputAndCtx); diff != "" {
						t.Errorf("declared %v (-want +got):\n%s", wrong, diff)
					}
				}
				// Declared as each other type: refused, naming what the bytes are.
				for _, other := range encoders {
					if other.mime == enc.mime {
						continue
					}
					want := imageProblem("declared " + other.mime + " but the bytes are a " + enc.name + " image")
					if diff := cmp.Diff(want, decodeOne(t, other.mime, data, w, h), ignoreInputAndCtx); diff != "" {
						t.Errorf("declared %s (-want +got):\n%s", other.mime, diff)
					}
				}
				want := imageProblem("declared image/webp but the bytes are a " + enc.name + " image")
				if diff := cmp.Diff(want, decodeOne(t, "image/webp", data, w, h), ignoreInputAndCtx); diff != "" {
					t.Errorf("declared image/webp (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func jsonString(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// riff wraps chunks in a RIFF WEBP container, padding each chunk to an even length.
func riff(chunks ...[]byte) []byte {
	body := []byte("WEBP")
	for _, c := range chunks {
		body = append(body, c...)
		if len(c)%2 == 1 {
			body = append(body, 0)
		}
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	return append(out, body...)
}

func chunk(fourcc string, payload []byte) []byte {
	c := append([]byte(fourcc), binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))...)
	return append(c, payload...)
}

// vp8lHeader is the five-byte VP8L header: the 0x2f signature, then 14 bits of width-1, 14 bits
// of height-1, the alpha hint and a 3-bit version (0), least significant bit first.
func vp8lHeader(w, h int, alpha bool) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	if alpha {
		bits |= 1 << 28
	}
	return binary.LittleEndian.AppendUint32([]byte{0x2f}, bits)
}

// TestWebPFromSpec builds the 1x1 lossless WebP from the container and VP8L header layout of
// the WebP specification (RFC 9649) around its entropy-coded pixel data, checks that it equals
// the known-good file, and that Decode accepts it.
func TestWebPFromSpec(t *testing.T) {
	// One transparent pixel, entropy coded (RFC 9649 §3.7 onwards); taken from the known-good
	// file rather than derived here.
	pixels := []byte{0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07}
	file := riff(chunk("VP8L", append(vp8lHeader(1, 1, true), pixels...)))
	want, err := base64.StdEncoding.DecodeString(testWebPLoss1x1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, want) {
		t.Fatalf("built  %x\nwant   %x", file, want)
	}
	if got := decodeOne(t, "image/webp", file, 1, 1); got != nil {
		t.Fatalf("refused: %+v", got)
	}
}

// TestWebPHeaders reads crafted WebP headers. Only the headers are real: the pixel data after
// them is filler, which the check never reads.
func TestWebPHeaders(t *testing.T) {
	filler := bytes.Repeat([]byte{0}, 16)
	vp8 := func(keyFrame bool, w, h uint16) []byte {
		tag := []byte{0x30, 0x01, 0x00} // frame tag; bit 0 clear = key frame
		if !keyFrame {
			tag[0] |= 1
		}
		p := append(tag, 0x9d, 0x01, 0x2a)
		p = binary.LittleEndian.AppendUint16(p, w)
		p = binary.LittleEndian.AppendUint16(p, h)
		return chunk("VP8 ", append(p, filler...))
	}
	vp8x := func(w, h int) []byte {
		p := []byte{0x10, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
		return chunk("VP8X", p)
	}
	truncatedRIFF := riff(chunk("VP8L", append(vp8lHeader(3, 3, false), filler...)))
	truncatedRIFF = truncatedRIFF[:len(truncatedRIFF)-4]
	badVersion := vp8lHeader(3, 3, false)
	badVersion[4] |= 0x20
	for _, tc := range []struct {
		name string
		file []byte
		w, h int
		err  string
	}{
		{name: "lossy_300x200", file: riff(vp8(true, 300, 200)), w: 300, h: 200},
		{name: "lossy_scale_bits_ignored", file: riff(vp8(true, 300|0xc000, 200|0x4000)), w: 300, h: 200},
		{name: "lossless_640x480", file: riff(chunk("VP8L", append(vp8lHeader(640, 480, false), filler...))), w: 640, h: 480},
		{name: "lossless_largest", file: riff(chunk("VP8L", append(vp8lHeader(16384, 16384, true), filler...))), w: 16384, h: 16384},
		{name: "extended_5000x3000", file: riff(vp8x(5000, 3000), chunk("VP8L", append(vp8lHeader(5000, 3000, false), filler...))), w: 5000, h: 3000},
		{name: "lossy_not_key_frame", file: riff(vp8(false, 300, 200)), err: "the VP8 frame is not a key frame"},
		{name: "lossless_bad_signature", file: riff(chunk("VP8L", append([]byte{0x2e, 0, 0, 0, 0}, filler...))), err: "the VP8L signature is missing"},
		{name: "lossless_bad_version", file: riff(chunk("VP8L", append(badVersion, filler...))), err: "the VP8L version is not 0"},
		{name: "riff_size_beyond_data", file: truncatedRIFF, err: "the RIFF header promises 42 bytes but there are 38"},
		{name: "unknown_first_chunk", file: riff(chunk("ALPH", filler)), err: `the first chunk is "ALPH", not VP8, VP8L or VP8X`},
		{name: "short", file: []byte("RIFF\x04\x00\x00\x00WEBPVP8L"), err: "the data ends inside the header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b64 := base64.StdEncoding.EncodeToString(tc.file)
			n, ok := base64Len(b64)
			if !ok || n != len(tc.file) {
				t.Fatalf("base64Len = %d, %v", n, ok)
			}
			w, h, err := webpSize(strings.NewReader(string(tc.file)), n)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || w != tc.w || h != tc.h {
				t.Fatalf("webpSize = %d, %d, %v; want %d, %d", w, h, err, tc.w, tc.h)
			}
			if tc.w <= int(limits.MaxImageEdgePx) && tc.h <= int(limits.MaxImageEdgePx) {
				if err := checkImageHeader("image/webp", b64, n, tc.w, tc.h); err != nil {
					t.Fatalf("checkImageHeader: %v", err)
				}
			}
		})
	}
}

// segment is a JPEG marker segment with a payload of n bytes.
func segment(marker byte, n int) []byte {
	s := []byte{0xff, marker}
	s = binary.BigEndian.AppendUint16(s, uint16(n+2))
	return append(s, bytes.Repeat([]byte{0xab}, n)...)
}

// TestJPEGMarkerScan edits a Go-encoded JPEG: segments and fill bytes before the frame header
// are skipped, DHT/JPG/DAC (C4, C8, CC) are not taken for frame headers, every other SOFn is,
// and a malformed stream is refused.
func TestJPEGMarkerScan(t *testing.T) {
	base := encodeJPEG(t, 7, 5)
	sof := bytes.Index(base, []byte{0xff, 0xc0})
	if sof < 0 {
		t.Fatal("no SOF0 in the encoder's output")
	}
	insert := func(extra ...[]byte) []byte {
		out := append([]byte(nil), base[:2]...) // SOI
		for _, e := range extra {
			out = append(out, e...)
		}
		return append(out, base[2:]...)
	}
	withSOF := func(m byte) []byte {
		out := append([]byte(nil), base...)
		out[sof+1] = m
		return out
	}
	for _, tc := range []struct {
		name string
		data []byte
		err  string
	}{
		{name: "as_encoded", data: base},
		{name: "big_app_segments", data: insert(segment(0xe1, 65533), segment(0xe2, 65533), segment(0xed, 1000))},
		{name: "fill_bytes", data: insert([]byte{0xff, 0xff, 0xff}, segment(0xe0, 14), []byte{0xff, 0xff})},
		{name: "dht_jpg_dac_skipped", data: insert(segment(0xc4, 20), segment(0xc8, 4), segment(0xcc, 2), segment(0xfe, 0))},
		{name: "standalone_markers", data: insert([]byte{0xff, 0x01, 0xff, 0xd3})},
		{name: "sof2_progressive", data: withSOF(0xc2)},
		{name: "sof9_arithmetic", data: withSOF(0xc9)},
		{name: "sof15", data: withSOF(0xcf)},
		{name: "eoi_first", data: insert([]byte{0xff, 0xd9}), err: "marker 0xd9 comes before a frame header"},
		{name: "sos_first", data: insert(segment(0xda, 10)), err: "marker 0xda comes before a frame header"},
		{name: "not_a_marker", data: insert(segment(0xe0, 4), []byte{0x00}), err: "expected a marker, found byte 0x00"},
		{name: "bad_length", data: insert([]byte{0xff, 0xe0, 0x00, 0x01}), err: "marker 0xe0 has a length of 1"},
		{name: "segment_past_end", data: append([]byte{0xff, 0xd8}, segment(0xe0, 200)[:50]...), err: "the data ends inside a marker segment"},
		{name: "ends_before_sof", data: base[:sof], err: "the data ends before a frame header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			err := checkImageHeader("image/jpeg", base64.StdEncoding.EncodeToString(data), len(data), 7, 5)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := "the JPEG header cannot be read: " + tc.err
			if err == nil || err.Error() != want {
				t.Fatalf("error = %v, want %q", err, want)
			}
		})
	}
}

// TestBase64Len pins base64Len to Python's b64decode(s, validate=True) (outputs recorded with
// CPython 3.11), including where Go's own decoders differ: they skip \r and \n, and Strict()
// refuses non-zero bits before the padding, which Python accepts.
func TestBase64Len(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int
		ok bool
	}{
		{"", 0, true},
		{"QUJD", 3, true},
		{"QUI=", 2, true},
		{"QQ==", 1, true},
		{"QR==", 1, true}, // non-zero unused bits: Python b'A'; Go's Strict() refuses
		{"QUJ=", 2, true}, // likewise
		{"QUJDQQ==", 4, true},
		{"QQ", 0, false},   // Incorrect padding
		{"QUI", 0, false},  // Incorrect padding
		{"A===", 0, false}, // 1 more than a multiple of 4
		{"====", 0, false}, // Leading padding not allowed
		{"QU=I", 0, false}, // Discontinuous padding not allowed
		{"QR==QUJD", 0, false},
		{"QUJD\n", 0, false}, // Only base64 data is allowed
		{"QU\r\nJD", 0, false},
		{"QUJD QUJD", 0, false},
		{"QUJD\tQUJ", 0, false},
		{"-_-_", 0, false},
		{"QUJ\x00", 0, false},
		{"QUJé", 0, false},
	} {
		n, ok := base64Len(tc.in)
		if n != tc.n || ok != tc.ok {
			t.Errorf("base64Len(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
		if ok {
			if b, err := base64.StdEncoding.DecodeString(tc.in); err != nil || len(b) != n {
				t.Errorf("%q: Go decodes %d bytes, %v", tc.in, len(b), err)
			}
		}
	}
	// Go's decoder would have accepted these; base64Len must not.
	for _, in := range []string{"QU\r\nJD", "QUJD\n"} {
		if _, err := base64.StdEncoding.Strict().DecodeString(in); err != nil {
			t.Errorf("%q: expected Go's decoder to skip the newline, got %v", in, err)
		}
	}
}

// TestImageCostIsHeaderOnly measures the memory that checking a 2,000,000-byte image and refusing
// an oversized one allocate: the refusal nothing, the check a few kilobytes, never the image.
func TestImageCostIsHeaderOnly(t *testing.T) {
	edge := uint32(limits.MaxImageEdgePx)
	atCap := pngWithFiller(edge, edge, int(limits.MaxImageBytes))
	overCap := pngWithFiller(edge, edge, int(limits.MaxImageBytes)+3)
	if allocs := testing.AllocsPerRun(10, func() {
		if _, ok := base64Len(overCap); !ok {
			t.Fatal("refused")
		}
	}); allocs != 0 {
		t.Errorf("sizing an oversized image allocates %v times", allocs)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 10
	for range runs {
		if err := checkImageHeader("image/png", atCap, int(limits.MaxImageBytes), int(edge), int(edge)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 16<<10 {
		t.Errorf("checking one image header allocates %d bytes", per)
	}
}

func TestPyRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"image/svg+xml", `'image/svg+xml'`},
		{"", `''`},
		{"it's", `"it's"`},
		{`a'b"c`, `'a\'b"c'`},
		{`say "hi"`, `'say "hi"'`},
		{"back\\slash", `'back\\slash'`},
		{"a\nb\tc\rd", `'a\nb\tc\rd'`},
		{"\x00\x7f\u00a0\u200b", `'\x00\x7f\xa0\u200b'`},
		{"é😀", `'é😀'`},
		{strings.Repeat("x", 300), "'" + strings.Repeat("x", 200) + "…'"},
	} {
		if got := pyRepr(tc.in); got != tc.want {
			t.Errorf("pyRepr(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestValidationErrorText(t *testing.T) {
	_, err := Decode([]byte(`{"images": [{"mime": "image/bmp"}], "zz": 1, "a": 2, "b": 3, "c": 4, "d": 5}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v", err)
	}
	want := "10 validation errors: call_id: Field required; images[0].mime: Value error, unsupported image media " +
		"type: 'image/bmp'; images[0].data_base64: Field required; images[0].width: Field required; " +
		"images[0].height: Field required; and 5 more"
	if got := err.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	_, err = DecodeResume([]byte(`{"session_id": }`))
	if got, want := err.Error(), "1 validation error: body[15]: JSON decode error: Expecting value"; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
}
