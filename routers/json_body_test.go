package routers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/toolresults"
)

// TestJSONBodyStrict: /chat and /feedback read their bodies with the strict reader. Before,
// encoding/json's decoder took a trailing "}" or "]" after the object (dec.More saw the end of
// a value) and let a repeated key's last value win unseen; both are now a 422 in FastAPI's
// shape.
func TestJSONBodyStrict(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t))
	t.Cleanup(ts.Close)
	const dup = `"msg":"Value error, duplicate key: a JSON object must not repeat a key","input":%s,"ctx":{"error":"duplicate key: a JSON object must not repeat a key"}}`
	extra := func(pos int) string {
		return fmt.Sprintf(`{"detail":[{"type":"json_invalid","loc":["body",%d],"msg":"JSON decode error","input":{},"ctx":{"error":"Extra data"}}]}`, pos)
	}
	cases := []struct{ path, body, want string }{
		{"/hed/chat", `{"message":"hi"}}`, extra(16)},
		{"/hed/chat", `{"message":"hi"}]`, extra(16)},
		{"/hed/chat", `{"message":"hi"} x`, extra(17)},
		{"/hed/chat", `{"message":"hi"}{}`, extra(16)},
		{"/hed/chat", "{\"message\":\"é\"}\n}\n", extra(16)},
		{"/feedback", `{"community_id":"hed","sentiment":"up"}}`, extra(39)},
		{"/hed/chat", `{"message":"hi","message":""}`,
			`{"detail":[{"type":"value_error","loc":["body","message"],` + fmt.Sprintf(dup, `""`) + `]}`},
		{"/hed/chat", `{"message":"hi","page_context":{"url":"https://a.org","url":"javascript:x"},"x":[{"a":1,"a":{"b":2}}]}`,
			`{"detail":[{"type":"value_error","loc":["body","page_context","url"],` + fmt.Sprintf(dup, `"javascript:x"`) + `,` +
				`{"type":"value_error","loc":["body","x",0,"a"],` + fmt.Sprintf(dup, `{"b":2}`) + `]}`},
		{"/feedback", `{"community_id":"hed","feedback_type":"general","comment":"a","comment":"b"}`,
			`{"detail":[{"type":"value_error","loc":["body","comment"],` + fmt.Sprintf(dup, `"b"`) + `]}`},
		// Unchanged: a body that is not an object.
		{"/feedback", `null`,
			`{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from","input":null}]}`},
	}
	for _, tc := range cases {
		resp, data := post(t, ts, tc.path, []byte(tc.body))
		if resp.StatusCode != http.StatusUnprocessableEntity || string(data) != tc.want+"\n" {
			t.Errorf("POST %s %s: %d\n got %s\nwant %s", tc.path, tc.body, resp.StatusCode, data, tc.want)
		}
	}
}

// TestJSONBodyRepeatsBounded: a body of many repeated keys gets the bounded list, ending with
// the count of the rest.
func TestJSONBodyRepeatsBounded(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t))
	t.Cleanup(ts.Close)
	body := `{"message":"hi"` + strings.Repeat(`,"message":"`+strings.Repeat("<", 300)+`"`, 500) + `}`
	resp, data := post(t, ts, "/hed/chat", []byte(body))
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %.300s", resp.StatusCode, data)
	}
	items := fastAPI422(t, data)
	last := items[len(items)-1]
	if len(items) != limits.MaxErrorItems+1 || last["type"] != toolresults.TypeTooManyErrors || fmt.Sprint(last["ctx"]) != fmt.Sprintf("map[omitted:%d]", 500-limits.MaxErrorItems) {
		t.Errorf("%d items, the last %v", len(items), last)
	}
	if items[0]["type"] != "value_error" || fmt.Sprint(items[0]["loc"]) != "[body message]" {
		t.Errorf("first item %v", items[0])
	}
}
