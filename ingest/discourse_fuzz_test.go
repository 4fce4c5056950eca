package ingest

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDiscourseTopic feeds any bytes to the topic decoder and its row (tags as strings or
// objects, the accepted answer's three sources, cooked HTML to Markdown): a row is within its
// caps, valid UTF-8, and its URL stays on the forum.
func FuzzDiscourseTopic(f *testing.F) {
	f.Add([]byte(`{"id":7,"title":"How?","slug":"how","category_id":5,"tags":["eeg",{"name":"ica"}],"posts_count":3,"reply_count":2,"like_count":4,"views":10,"created_at":"2024-01-01T00:00:00.000Z","last_posted_at":"2024-01-02T00:00:00.000Z","accepted_answer":{"post_number":5,"excerpt":"<b>use</b> it"},"post_stream":{"posts":[{"post_number":1,"cooked":"<p>Hi <a href=\"/t/x/1\">x</a></p>"},{"post_number":2,"cooked":"<p>A</p>","actions_summary":[{"id":2,"count":3}]},{"post_number":3,"cooked":"<pre><code>x</code></pre>","like_count":9,"accepted_answer":true}]}}`))
	f.Add([]byte(`{"id":1,"slug":"..","tags":null,"post_stream":{"posts":[{"post_number":1,"cooked":"` + strings.Repeat("<div>", 600) + `"}]}}`))
	f.Add([]byte(`{"id":2,"slug":"../../x?y#z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tp discourseTopic
		if json.Unmarshal(data, &tp) != nil {
			return
		}
		rec := tp.record("https://forum.example.org", map[int]string{5: "Support"})
		for _, s := range []string{rec.Title, rec.FirstPost, rec.AcceptedAnswer} {
			if !utf8.ValidString(s) || utf8.RuneCountInString(s) > discourseMaxText {
				t.Fatalf("text over the cap or invalid: %d runes", utf8.RuneCountInString(s))
			}
		}
		rest, ok := strings.CutPrefix(rec.URL, "https://forum.example.org/t/")
		if len(rec.Tags) > discourseMaxTags || !ok {
			t.Fatalf("row %+v", rec)
		}
		for _, seg := range strings.Split(rest, "/") {
			if seg == "." || seg == ".." || seg == "" {
				t.Fatalf("topic URL %q leaves its place", rec.URL)
			}
		}
	})
}
