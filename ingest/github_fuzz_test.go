package ingest

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzGitHubPage feeds any bytes to the issues page decoder: an answer is refused or gives
// items the table accepts (a positive number, issue or pr, open or closed, texts within their
// caps and valid UTF-8).
func FuzzGitHubPage(f *testing.F) {
	f.Add([]byte(`[{"number":1,"title":"t","body":"<b>x</b>","state":"open","html_url":"https://github.com/a/b/issues/1","created_at":"2024-05-01T12:00:00Z"},{"number":2,"pull_request":{"url":"u"},"state":"closed","body":null}]`))
	f.Add([]byte(`[{"number":-1},{"number":3,"pull_request":null,"title":"` + strings.Repeat("\\u00e9", 2000) + `"}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"message":"Not Found"}`))
	f.Fuzz(func(t *testing.T, page []byte) {
		items, err := decodeGitHubItems(bytes.NewReader(page), "a/b")
		if err != nil {
			return
		}
		if len(items) > githubMaxItemsPerPage {
			t.Fatalf("%d items", len(items))
		}
		for _, it := range items {
			if it.Repo != "a/b" || it.Number <= 0 || (it.Type != "issue" && it.Type != "pr") || (it.Status != "open" && it.Status != "closed") {
				t.Fatalf("item %+v", it)
			}
			if !utf8.ValidString(it.Body) || utf8.RuneCountInString(it.Body) > githubMaxBody || utf8.RuneCountInString(it.Title) > githubMaxTitle {
				t.Fatalf("item %d texts over their caps or invalid", it.Number)
			}
		}
	})
}
