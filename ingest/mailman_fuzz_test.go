package ingest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/ingest/ingesttest"
)

// FuzzPipermail feeds any bytes to the three pipermail page parsers (the index, a thread
// page, a message page), seeded with the fake archive's pages. Whatever the input, only
// checked volume names and message numbers come out (they become paths and URLs), and every
// text is valid UTF-8 within its bound.
func FuzzPipermail(f *testing.F) {
	arch := ingesttest.NewMailman(f, "eeglablist")
	root := arch.Post(ingesttest.MailmanMessage{Subject: "ICA <question> & more", Body: "See https://example.org/a?b=1&c=2 and\n> quoted", Date: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)})
	arch.Post(ingesttest.MailmanMessage{Subject: "Re: ICA <question> & more", ReplyTo: root, Date: time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)})
	for _, p := range []string{"", "2025/thread.html", "2025/" + root + ".html"} {
		resp, err := http.Get(arch.URL + p)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.Add(b)
	}
	f.Add([]byte(`<td>January 2024:</td><a href="2024-January/thread.html">x</a><a href="../../etc/thread.html">y</a>`))
	f.Add([]byte("<LI><A HREF=\"000001.html\">[l] a\x00b\xff</A><LI><A HREF=\"/abs/000002.html\">x</A><A HREF=\"000003.html\">"))
	f.Add([]byte("<TITLE>t</TITLE><B>a<B>b</B><I>d</I><PRE><A HREF=\"javascript:x\">y</A><A HREF=\"https://x\">z"))
	f.Fuzz(func(t *testing.T, page []byte) {
		page = mailmanUTF8(page, "")
		if !utf8.Valid(page) {
			t.Fatal("mailmanUTF8 returned invalid UTF-8")
		}
		for _, v := range parseMailmanIndex(page) {
			if w, ok := parseMailmanVolume(v.Name); !ok || w != v || strings.ContainsAny(v.Name, "/\\.") {
				t.Fatalf("index gave volume %+v", v)
			}
		}
		for _, e := range parseMailmanThreads(page) {
			if !mailmanMessageID(e.ID) || !utf8.ValidString(e.Subject) || utf8.RuneCountInString(e.Subject) > mailmanMaxSubject {
				t.Fatalf("thread page gave entry %q", e)
			}
		}
		p := parseMailmanMessage(page)
		for _, s := range []struct {
			text string
			max  int
		}{{p.Subject, mailmanMaxSubject}, {p.Author, mailmanMaxAuthor}, {p.Email, mailmanMaxEmail}, {p.Date, mailmanMaxDate}, {p.Body, mailmanMaxBody}} {
			if !utf8.ValidString(s.text) || utf8.RuneCountInString(s.text) > s.max {
				t.Fatalf("message field %q: invalid or over %d", s.text, s.max)
			}
		}
		if strings.ContainsAny(p.Subject+p.Author+p.Date, "\n\r\x00") || p.Subject == "" {
			t.Fatalf("message header fields %q %q %q", p.Subject, p.Author, p.Date)
		}
	})
}
