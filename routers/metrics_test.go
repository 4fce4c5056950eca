package routers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestMetricLabelsAreBounded: what a client invents (a method, a community id, a path no route
// serves) never becomes a label value, so a flood of such requests adds no series: unknown
// methods count as "other", paths of no route as "unmatched", and community paths under the
// route template.
func TestMetricLabelsAreBounded(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct {
		method, path string
		want         string // "route method status"
	}{
		{"GET", "/nemar", "/:c GET 200"},
		{"HEAD", "/nemar", "/:c HEAD 200"},
		{"DELETE", "/nemar", "/:c DELETE 405"},
		{"PATCH", "/nemar", "/:c PATCH 405"},
		{"TRACE", "/nemar", "/:c TRACE 405"},
		{"FOO", "/nemar", "/:c other 405"},
		{"get", "/nemar", "/:c other 405"}, // methods are case-sensitive: "get" is not GET
		{"GET", "/no-such-community", "/:c GET 404"},
		{"GET", "/no/such/route/at/all", "unmatched GET 404"},
		{"FOO", "/no/such/route/at/all", "unmatched other 404"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := requestCounts(t, s)
			s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, nil))
			d := countDiff(before, requestCounts(t, s))
			if len(d) != 1 || d[tc.want] != 1 {
				t.Errorf("counted %v, want %s +1", d, tc.want)
			}
		})
	}

	series := len(requestCounts(t, s))
	for i := range 300 {
		for _, r := range []*http.Request{
			httptest.NewRequest(fmt.Sprintf("INVENTED-%d", i), "/nemar", nil),
			httptest.NewRequest(fmt.Sprintf("INVENTED-%d", i), fmt.Sprintf("/x%d/y/z/w", i), nil),
			httptest.NewRequest(http.MethodGet, fmt.Sprintf("/invented-%d", i), nil),
			httptest.NewRequest(http.MethodPost, fmt.Sprintf("/invented-%d/chat", i), nil),
			httptest.NewRequest(http.MethodGet, fmt.Sprintf("/invented/%d/path/%d", i, i), nil),
		} {
			s.ServeHTTP(httptest.NewRecorder(), r)
		}
	}
	if got := requestCounts(t, s); len(got) > series+1 { // POST /:c/chat's own series is new
		t.Errorf("1,500 invented requests made %d series into %d", series, len(got))
	}
}
