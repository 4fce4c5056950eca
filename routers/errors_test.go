package routers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/toolresults"
)

// post sends body to ts over real HTTP and returns the answer and its body.
func post(t *testing.T, ts *httptest.Server, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(ts.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// fastAPI422 checks that data is a FastAPI 422 body ({"detail": [{type, loc, msg, input,
// ctx?}, ...]}) and returns its items.
func fastAPI422(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var body struct {
		Detail []map[string]any `json:"detail"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body.Detail) == 0 {
		t.Fatalf("not a 422 list (%v): %.300s", err, data)
	}
	for _, it := range body.Detail {
		_, hasInput := it["input"]
		loc, _ := it["loc"].([]any)
		if typ, _ := it["type"].(string); typ == "" || loc == nil || it["msg"] == nil || !hasInput {
			t.Fatalf("malformed item %v", it)
		}
		for k := range it {
			if !strings.Contains(" type loc msg input ctx ", " "+k+" ") {
				t.Fatalf("item key %q", k)
			}
		}
	}
	return body.Detail
}

// object is {"<i><fill>": value, ...} with n keys.
func object(n int, fill, value string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%04d%s":%s`, i, fill, value)
	}
	b.WriteString("}")
	return b.String()
}

// TestErrorBodiesBounded posts the hostile bodies of issue 10 over HTTP: every answer is a
// FastAPI 422 smaller than limits.MaxErrorBodyBytes, whatever the request. Before the fix
// the resume body (8.5 MB) got a 61 MB answer and the /chat body (260 KB) a 1.26 MB one.
func TestErrorBodiesBounded(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t))
	t.Cleanup(ts.Close)
	image := object(330, strings.Repeat("<", 8600), "0") // some 2.8 MB of long "<" keys
	cases := []struct {
		name, path, body string
		omitted          bool // the list is cut and ends with a too_many_errors item
	}{
		{"resume: long keys in images", "/hed/chat/resume",
			`{"session_id":"s","result":{"call_id":"c","images":[` + image + "," + image + "," + image + `]}}`, true},
		{"resume: long keys everywhere", "/hed/chat/resume",
			object(300, strings.Repeat("<", 9000), `"`+strings.Repeat("&", 9000)+`"`), true},
		{"chat: a message that is a list", "/hed/chat",
			`{"message":[` + strings.TrimSuffix(strings.Repeat(`"<<<<<<<<<<",`, 20000), ",") + `]}`, false},
		{"chat: page_context a list of long-keyed objects", "/hed/chat",
			`{"message":"hi","page_context":[` + object(20, strings.Repeat("<", 10000), "1") + `]}`, false},
		{"chat: a wide object as page_context.url", "/hed/chat",
			`{"message":"hi","page_context":{"url":` + object(500, strings.Repeat(">", 200), `"`+strings.Repeat("<", 200)+`"`) + `}}`, false},
		{"feedback: a long object as feedback_type", "/feedback",
			`{"community_id":"hed","feedback_type":` + object(100, strings.Repeat("<", 500), "0") + `}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := post(t, ts, tc.path, []byte(tc.body))
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d: %.300s", resp.StatusCode, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if len(data) >= int(limits.MaxErrorBodyBytes) {
				t.Errorf("a %d-byte request got a %d-byte 422", len(tc.body), len(data))
			}
			if bytes.Contains(data, []byte(`\u003c`)) {
				t.Error("HTML escaping in an error body")
			}
			items := fastAPI422(t, data)
			last := items[len(items)-1]
			if cut := last["type"] == toolresults.TypeTooManyErrors; cut != tc.omitted || len(items) > limits.MaxErrorItems+1 {
				t.Errorf("%d items, the last %v", len(items), last)
			}
			t.Logf("%d-byte request: %d-byte 422 of %d items", len(tc.body), len(data), len(items))
		})
	}
}

// TestOrdinary422Unchanged: a 422 within the bounds is exactly what it was, item for item and
// byte for byte (these bodies hold nothing that HTML escaping would have changed).
func TestOrdinary422Unchanged(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t))
	t.Cleanup(ts.Close)
	cases := []struct{ path, body, want string }{
		{"/hed/chat/resume", `{"session_id":"s"}`,
			`{"detail":[{"type":"missing","loc":["body","result"],"msg":"Field required","input":{"session_id":"s"}}]}`},
		{"/hed/chat/resume", `{"session_id":"s","result":{"call_id":"c","stdout":1},"zz":[1,2]}`,
			`{"detail":[{"type":"string_type","loc":["body","result","stdout"],"msg":"Input should be a valid string","input":1},` +
				`{"type":"extra_forbidden","loc":["body","zz"],"msg":"Extra inputs are not permitted","input":[1,2]}]}`},
		{"/hed/chat", `{"message":"","client_tools":"x"}`,
			`{"detail":[{"type":"string_too_short","loc":["body","message"],"msg":"String should have at least 1 character","input":"","ctx":{"min_length":1}},` +
				`{"type":"list_type","loc":["body","client_tools"],"msg":"Input should be a valid list","input":"x"}]}`},
		{"/hed/chat", `{"message":"hi","page_context":{"title":"` + strings.Repeat("t", 501) + `"}}`,
			`{"detail":[{"type":"string_too_long","loc":["body","page_context","title"],"msg":"String should have at most 500 characters","input":"` +
				strings.Repeat("t", 200) + `…","ctx":{"max_length":500}}]}`},
	}
	for _, tc := range cases {
		_, data := post(t, ts, tc.path, []byte(tc.body))
		if got := string(data); got != tc.want+"\n" {
			t.Errorf("POST %s %s:\n got %s\nwant %s", tc.path, tc.body, got, tc.want)
		}
	}
}

// TestModelCap: model is capped at limits.MaxModelChars on /chat and /chat/resume alike, with
// the same 422 item; before, /chat/resume took a model of any length.
func TestModelCap(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t))
	t.Cleanup(ts.Close)
	modelItem := func(path, body string) string {
		t.Helper()
		resp, data := post(t, ts, path, []byte(body))
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("POST %s: status %d", path, resp.StatusCode)
		}
		for _, it := range fastAPI422(t, data) {
			if fmt.Sprint(it["loc"]) == "[body model]" {
				b, err := json.Marshal(it)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
		t.Fatalf("POST %s: no item for model in %.300s", path, data)
		return ""
	}
	for _, n := range []int{int(limits.MaxModelChars) + 1, 10000} {
		model := strings.Repeat("m", n)
		chat := modelItem("/hed/chat", `{"message":"hi","model":"`+model+`"}`)
		// session_id is missing too, so the request fails whatever model the cap allows.
		resume := modelItem("/hed/chat/resume", `{"result":{"call_id":"c"},"model":"`+model+`"}`)
		if chat != resume {
			t.Errorf("a %d-character model:\n/chat        %s\n/chat/resume %s", n, chat, resume)
		}
		if !strings.Contains(chat, `"type":"string_too_long"`) || !strings.Contains(chat, `"max_length":200`) {
			t.Errorf("model item %s", chat)
		}
	}
	// The 5 MB model of the issue is refused without being echoed.
	resp, data := post(t, ts, "/hed/chat/resume", []byte(`{"session_id":"s","result":{"call_id":"c"},"model":"`+strings.Repeat("m", 5<<20)+`"}`))
	if resp.StatusCode != http.StatusUnprocessableEntity || len(data) > 1024 {
		t.Errorf("a 5 MB model: status %d, %d-byte body", resp.StatusCode, len(data))
	}
}

// TestErrorBodyGuard: the last guard in the error mapping keeps a body under
// limits.MaxErrorBodyBytes even when items were not bounded by their validator, dropping
// trailing items into the final count; within the bounds it changes nothing.
func TestErrorBodyGuard(t *testing.T) {
	small := []detailItem{
		{Type: "missing", Loc: []any{"body", "x"}, Msg: "Field required", Input: map[string]any{"a<b": "&"}},
		{Type: "string_too_long", Loc: []any{"body", "y"}, Msg: "String should have at most 2 characters", Input: "abc", Ctx: map[string]any{"max_length": 2}},
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"detail": small}); err != nil {
		t.Fatal(err)
	}
	if got := itemsJSON(small, 0); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("within the bounds:\n got %s\nwant %s", got, want.Bytes())
	}

	big := make([]detailItem, 100)
	for i := range big {
		big[i] = detailItem{Type: "value_error", Loc: []any{"body", i}, Msg: "Value error", Input: strings.Repeat("x", 3000)}
	}
	tests := []struct {
		name    string
		items   []detailItem
		omitted int
		atLeast int // items kept: the guard fills the budget rather than emptying the list
	}{
		// Each item is some 3 KB: about 21 fit.
		{name: "over the cap", items: big, atLeast: 20},
		{name: "over the cap, some already omitted", items: big, omitted: 7, atLeast: 20},
		{name: "one item too large alone", items: []detailItem{{Type: "value_error", Loc: []any{"body"}, Msg: "m", Input: strings.Repeat("x", 70000)}}},
		{name: "only omitted", omitted: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := itemsJSON(tc.items, tc.omitted)
			if len(got) >= int(limits.MaxErrorBodyBytes) {
				t.Fatalf("%d bytes", len(got))
			}
			items := fastAPI422(t, got)
			kept, last := len(items)-1, items[len(items)-1]
			want := fmt.Sprintf("map[omitted:%d]", len(tc.items)+tc.omitted-kept)
			if kept < tc.atLeast || last["type"] != toolresults.TypeTooManyErrors || fmt.Sprint(last["ctx"]) != want || fmt.Sprint(last["loc"]) != "[body]" {
				t.Errorf("%d items kept, the last %v; want at least %d and ctx %s", kept, last, tc.atLeast, want)
			}
		})
	}

	// A {"detail": "..."} text is cut rather than sent whole.
	if got := detailJSON(strings.Repeat("<", 100000)); len(got) >= int(limits.MaxErrorBodyBytes) || !json.Valid(got) {
		t.Errorf("a long detail text gave %d bytes", len(got))
	}
}

// TestReplyErrorBody: a non-streamed chat that ends without an answer is rendered by the one
// error mapping with the reference's body (keys in the order c.JSON of a map wrote them), and
// a message of any length stays under limits.MaxErrorBodyBytes.
func TestReplyErrorBody(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct {
		msg       string
		wantExact bool
	}{
		{"The assistant finished without writing an answer.", true},
		{strings.Repeat("<upstream said>", 10000), false},
	} {
		rec := httptest.NewRecorder()
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/hed/chat", nil), rec)
		c.Set(requestIDKey, "req-0001")
		s.handleError(&replyError{http.StatusBadGateway, tc.msg}, c)
		want := `{"detail":"` + tc.msg + `","error_id":"req-0001","request_id":"req-0001"}` + "\n"
		if rec.Code != http.StatusBadGateway || (tc.wantExact && rec.Body.String() != want) {
			t.Errorf("%d %s", rec.Code, rec.Body)
		}
		var body map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error_id"] != "req-0001" || rec.Body.Len() >= int(limits.MaxErrorBodyBytes) {
			t.Errorf("a %d-character message: %d-byte body, %v", len(tc.msg), rec.Body.Len(), err)
		}
	}
}
