package toolresults

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/osc-assistant/assistant/limits"
)

// Small known-good images, as base64. The PNG, JPEG and GIF were written by Go's image
// encoders; the three WebP files are the 1x1 images browsers' WebP feature tests use (lossy
// VP8, lossless VP8L, extended VP8X with alpha), each checked to decode fully with
// golang.org/x/image/webp v0.48.0. The VP8L one is also built field by field in
// TestWebPFromSpec.
const (
	testPNG3x2      = "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAIUlEQVR4nGJmUPWasnznvY/MDHsesgWUznrCqQcIAAD//1L5CFbl8KQIAAAAAElFTkSuQmCC"
	testGIF5x2      = "R0lGODlhBQACAIAAAAAAAP///ywAAAAABQACAAACA4SPBQA7"
	testWebPLossy   = "UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA"
	testWebPLoss1x1 = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="
	testWebPX1x1    = "UklGRkoAAABXRUJQVlA4WAoAAAAQAAAAAAAAAAAAQUxQSAwAAAARBxAR/Q9ERP8DAABWUDggGAAAABQBAJ0BKgEAAQAAAP4AAA3AAP7mtQAAAA=="
)

// pngHeader returns a PNG signature and an IHDR chunk (8-bit RGB) with a correct CRC.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 0, 8+8+13+4)
	ihdr = append(ihdr, "\x89PNG\r\n\x1a\n"...)
	ihdr = binary.BigEndian.AppendUint32(ihdr, 13)
	ihdr = append(ihdr, "IHDR"...)
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	return binary.BigEndian.AppendUint32(ihdr, crc32.ChecksumIEEE(ihdr[12:]))
}

// pngWithFiller is a valid PNG header for w x h followed by filler up to exactly size bytes. It
// is not a decodable PNG (no IDAT, no IEND): it passes because the check reads the header only.
func pngWithFiller(w, h uint32, size int) string {
	b := pngHeader(w, h)
	for len(b) < size {
		b = append(b, byte(len(b)*7))
	}
	return base64.StdEncoding.EncodeToString(b[:size])
}

func imageObj(mime, data string, w, h int) map[string]any {
	return map[string]any{"mime": mime, "data_base64": data, "width": w, "height": h}
}

type generatedCase struct {
	name   string
	resume bool // DecodeResume instead of Decode
	body   any
	ok     bool
}

func resultWith(kv ...any) map[string]any {
	m := map[string]any{"call_id": "toolu_01"}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func resumeWith(kv ...any) map[string]any {
	m := map[string]any{"session_id": "s", "result": map[string]any{"call_id": "c"}}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func artifacts(n, chars int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%03d", i) + strings.Repeat("é", chars-3)
	}
	return out
}

// maximalResult is a valid result at every cap: call_id, stdout, stderr and summary of
// multi-byte characters, limits.MaxImages copies of the PNG image (base64, w x h), and
// limits.MaxArtifacts names of limits.MaxArtifactNameChars code points.
func maximalResult(image string, w, h int) map[string]any {
	images := make([]any, limits.MaxImages)
	for i := range images {
		images[i] = imageObj("image/png", image, w, h)
	}
	return resultWith(
		"call_id", strings.Repeat("é", int(limits.MaxCallIDChars)),
		"status", "error",
		"stdout", strings.Repeat("é", int(limits.MaxStdoutChars)),
		"stderr", strings.Repeat("😀", int(limits.MaxStderrChars)),
		"summary", strings.Repeat("ß", int(limits.MaxSummaryChars)),
		"images", images,
		"artifacts", artifacts(limits.MaxArtifacts, int(limits.MaxArtifactNameChars)),
		"elapsed_ms", 1<<53,
	)
}

func generatedCases() []generatedCase {
	capped := func(name, field, char string, limit limits.CodePoints) []generatedCase {
		return []generatedCase{
			{name: name + "_at_cap", body: resultWith(field, strings.Repeat(char, int(limit))), ok: true},
			{name: name + "_over_cap", body: resultWith(field, strings.Repeat(char, int(limit)+1))},
		}
	}
	var cases []generatedCase
	cases = append(cases, capped("stdout_e_acute", "stdout", "é", limits.MaxStdoutChars)...)
	cases = append(cases, capped("stderr_emoji", "stderr", "😀", limits.MaxStderrChars)...)
	cases = append(cases, capped("summary_sharp_s", "summary", "ß", limits.MaxSummaryChars)...)
	cases = append(cases, capped("call_id", "call_id", "é", limits.MaxCallIDChars)...)
	// stdout of limits.MaxStdoutChars ASCII characters is at the cap whatever the unit, so the
	// multi-byte cases above are the ones that tell code points from bytes; this one tells them
	// from UTF-16 units (an emoji is two).
	cases = append(cases, generatedCase{name: "stdout_emoji_at_cap", body: resultWith("stdout", strings.Repeat("😀", int(limits.MaxStdoutChars))), ok: true})

	edge := int(limits.MaxImageEdgePx)
	atCap := pngWithFiller(uint32(edge), uint32(edge), int(limits.MaxImageBytes))
	overCap := pngWithFiller(uint32(edge), uint32(edge), int(limits.MaxImageBytes)+1)
	cases = append(cases,
		generatedCase{name: "artifacts_at_cap", body: resultWith("artifacts", artifacts(limits.MaxArtifacts, int(limits.MaxArtifactNameChars))), ok: true},
		generatedCase{name: "artifacts_over_cap", body: resultWith("artifacts", artifacts(limits.MaxArtifacts+1, 4))},
		generatedCase{name: "artifact_name_over_cap", body: resultWith("artifacts", append(artifacts(limits.MaxArtifacts-1, 4), strings.Repeat("é", int(limits.MaxArtifactNameChars)+1)))},
		generatedCase{name: "image_at_byte_cap", body: resultWith("images", []any{imageObj("image/png", atCap, edge, edge)}), ok: true},
		generatedCase{name: "image_over_byte_cap", body: resultWith("images", []any{imageObj("image/png", overCap, edge, edge)})},
		generatedCase{name: "image_far_over_byte_cap", body: resultWith("images", []any{imageObj("image/png", overCap+overCap[:len(overCap)-4], edge, edge)})},
		generatedCase{name: "images_at_cap", body: resultWith("images", []any{
			imageObj("image/png", testPNG3x2, 3, 2), imageObj("image/gif", testGIF5x2, 5, 2), imageObj("image/webp", testWebPLossy, 1, 1),
		}), ok: true},
		generatedCase{name: "maximal", body: maximalResult(atCap, edge, edge), ok: true},
	)

	// Many unknown keys (more than the linear duplicate scan handles), one of them repeated.
	var b strings.Builder
	b.WriteString(`{"call_id":"c"`)
	for i := range 40 {
		fmt.Fprintf(&b, `,"k%02d":%d`, i%39, i)
	}
	b.WriteString("}")
	cases = append(cases, generatedCase{name: "many_unknown_keys", body: jsonText(b.String())})

	// Past limits.MaxErrorItems errors, the rest are only counted: 45 unknown keys give 40
	// items and 5 omitted.
	b.Reset()
	b.WriteString(`{"call_id":"c"`)
	for i := range limits.MaxErrorItems + 5 {
		fmt.Fprintf(&b, `,"k%02d":%d`, i, i)
	}
	b.WriteString("}")
	cases = append(cases, generatedCase{name: "unknown_keys_over_item_cap", body: jsonText(b.String())})
	// Long keys are cut in loc and in echoed objects (the "missing" items echo the image).
	long := func(c string) string { return strings.Repeat(c, 300) }
	cases = append(cases,
		generatedCase{name: "long_unknown_keys", body: resultWith(long("<"), long(">"), "images", []any{map[string]any{long("k"): long("v"), long("é"): 1}})},
		generatedCase{name: "resume_model_at_cap", resume: true, body: resumeWith("model", strings.Repeat("é", int(limits.MaxModelChars))), ok: true},
		generatedCase{name: "resume_model_over_cap", resume: true, body: resumeWith("model", strings.Repeat("é", int(limits.MaxModelChars)+1))},
	)

	page := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return resumeWith("page_context", m)
	}
	url := func(n int) string { return "https://" + strings.Repeat("é", n-len("https://")) }
	cases = append(cases,
		generatedCase{name: "resume_session_id_at_cap", resume: true, body: resumeWith("session_id", strings.Repeat("é", int(limits.MaxSessionIDChars))), ok: true},
		generatedCase{name: "resume_session_id_over_cap", resume: true, body: resumeWith("session_id", strings.Repeat("é", int(limits.MaxSessionIDChars)+1))},
		generatedCase{name: "resume_url_at_cap", resume: true, body: page("url", url(int(limits.MaxPageURLChars))), ok: true},
		generatedCase{name: "resume_url_over_cap", resume: true, body: page("url", url(int(limits.MaxPageURLChars)+1))},
		generatedCase{name: "resume_title_at_cap", resume: true, body: page("title", strings.Repeat("é", int(limits.MaxPageTitleChars))), ok: true},
		generatedCase{name: "resume_title_over_cap", resume: true, body: page("title", strings.Repeat("é", int(limits.MaxPageTitleChars)+1))},
		generatedCase{name: "resume_widget_instructions_at_cap", resume: true, body: page("widget_instructions", strings.Repeat("é", int(limits.MaxWidgetInstructionChars))), ok: true},
		generatedCase{name: "resume_widget_instructions_over_cap", resume: true, body: page("widget_instructions", strings.Repeat("é", int(limits.MaxWidgetInstructionChars)+1))},
		generatedCase{name: "resume_client_tools_at_cap", resume: true, body: resumeWith("client_tools", artifacts(limits.MaxDeclaredClientTools, 5)), ok: true},
		generatedCase{name: "resume_client_tools_over_cap", resume: true, body: resumeWith("client_tools", artifacts(limits.MaxDeclaredClientTools+1, 5))},
		generatedCase{name: "resume_maximal_result", resume: true, body: resumeWith("result", maximalResult(atCap, edge, edge)), ok: true},
	)
	return cases
}

// jsonText is JSON written by hand, passed through json.Marshal unchanged.
type jsonText string

func (j jsonText) MarshalJSON() ([]byte, error) { return []byte(j), nil }
