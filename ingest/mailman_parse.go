package ingest

// The pipermail (Mailman 2) archive pages, read with golang.org/x/net/html's tokenizer: the
// archive index (its volumes), a volume's thread.html (its messages in thread order) and a
// message page (subject, author, address, date, body). Nothing here trusts the page: names
// that become paths and URLs are checked, texts are bounded, invalid UTF-8 is replaced.

import (
	"bytes"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/knowledge"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// Bounds of what one archive page may give.
const (
	mailmanMaxVolumes       = 10000
	mailmanMaxThreadEntries = 100000
	mailmanMaxSubject       = 1000
	mailmanMaxAuthor        = 300
	mailmanMaxEmail         = 320
	mailmanMaxDate          = 100
	// mailmanMaxBody is what is kept of a message's text (the column's cap, §2.2).
	mailmanMaxBody = knowledge.CapMessageBody
	// mailmanMaxMessageID bounds a message file's number (pipermail writes six digits).
	mailmanMaxMessageID = 12
)

// mailmanVolume is one archive volume: pipermail groups messages by year ("2024"), month
// ("2024-January"), quarter ("2024q1"), week ("Week-of-Mon-20240101") or day ("20240101"),
// as the list's archive_volume_frequency says.
type mailmanVolume struct {
	Name       string
	Year       int
	Start, End time.Time // the period it covers, UTC (End excluded)
}

var mailmanMonths = []string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// parseMailmanVolume reads a volume directory name; ok is false for anything else, so only
// these names ever become paths or URLs.
func parseMailmanVolume(name string) (mailmanVolume, bool) {
	digits := func(s string) (int, bool) {
		if s == "" {
			return 0, false
		}
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	yearOK := func(y int) bool { return y >= 1970 && y <= 9999 }
	day := func(s string) (time.Time, bool) {
		if len(s) != 8 {
			return time.Time{}, false
		}
		if _, ok := digits(s); !ok {
			return time.Time{}, false
		}
		t, err := time.Parse("20060102", s)
		return t, err == nil && yearOK(t.Year())
	}
	switch {
	case len(name) == 4:
		y, ok := digits(name)
		if !ok || !yearOK(y) {
			return mailmanVolume{}, false
		}
		s := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		return mailmanVolume{Name: name, Year: y, Start: s, End: s.AddDate(1, 0, 0)}, true
	case len(name) == 6 && name[4] == 'q':
		y, ok := digits(name[:4])
		q, ok2 := digits(name[5:])
		if !ok || !ok2 || !yearOK(y) || q < 1 || q > 4 {
			return mailmanVolume{}, false
		}
		s := time.Date(y, time.Month(3*(q-1)+1), 1, 0, 0, 0, 0, time.UTC)
		return mailmanVolume{Name: name, Year: y, Start: s, End: s.AddDate(0, 3, 0)}, true
	case strings.HasPrefix(name, "Week-of-Mon-"):
		s, ok := day(strings.TrimPrefix(name, "Week-of-Mon-"))
		if !ok {
			return mailmanVolume{}, false
		}
		return mailmanVolume{Name: name, Year: s.Year(), Start: s, End: s.AddDate(0, 0, 7)}, true
	case len(name) > 5 && name[4] == '-':
		y, ok := digits(name[:4])
		m := slices.Index(mailmanMonths, name[5:])
		if !ok || !yearOK(y) || m < 0 {
			return mailmanVolume{}, false
		}
		s := time.Date(y, time.Month(m+1), 1, 0, 0, 0, 0, time.UTC)
		return mailmanVolume{Name: name, Year: y, Start: s, End: s.AddDate(0, 1, 0)}, true
	case len(name) == 8:
		s, ok := day(name)
		if !ok {
			return mailmanVolume{}, false
		}
		return mailmanVolume{Name: name, Year: s.Year(), Start: s, End: s.AddDate(0, 0, 1)}, true
	}
	return mailmanVolume{}, false
}

// mailmanUTF8 returns a page as UTF-8: valid UTF-8 is kept (pipermail often declares
// us-ascii over UTF-8 text), anything else is decoded by the charset the Content-Type or the
// page's <meta> declares (windows-1252 when none), invalid sequences replaced.
func mailmanUTF8(body []byte, contentType string) []byte {
	if utf8.Valid(body) {
		return body
	}
	enc, _, _ := charset.DetermineEncoding(body, contentType)
	if out, err := enc.NewDecoder().Bytes(body); err == nil {
		return bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	return bytes.ToValidUTF8(body, []byte("\uFFFD"))
}

// parseMailmanIndex returns the archive index's volumes, oldest first: every link into a
// volume directory ("2024/thread.html", "2024-January/date.html", "2024/") and every cell
// naming a yearly or monthly volume ("2024:", "January 2024:").
func parseMailmanIndex(page []byte) []mailmanVolume {
	seen := map[string]bool{}
	var out []mailmanVolume
	add := func(name string) {
		if seen[name] || len(out) >= mailmanMaxVolumes {
			return
		}
		if v, ok := parseMailmanVolume(name); ok {
			seen[name] = true
			out = append(out, v)
		}
	}
	z := html.NewTokenizer(bytes.NewReader(page))
	inCell := false
	var cell strings.Builder
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			slices.SortFunc(out, func(a, b mailmanVolume) int {
				if c := a.Start.Compare(b.Start); c != 0 {
					return c
				}
				return strings.Compare(a.Name, b.Name)
			})
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.DataAtom {
			case atom.A:
				if dir, ok := mailmanVolumeDir(htmlAttr(tok, "href")); ok {
					add(dir)
				}
			case atom.Td:
				inCell = true
				cell.Reset()
			}
		case html.EndTagToken:
			if z.Token().DataAtom == atom.Td && inCell {
				inCell = false
				add(mailmanCellVolume(cell.String()))
			}
		case html.TextToken:
			if inCell && cell.Len() < 200 {
				cell.Write(z.Text())
			}
		}
	}
}

// mailmanVolumeDir is the volume directory a relative link points into, or "" and false.
func mailmanVolumeDir(href string) (string, bool) {
	dir, _, ok := strings.Cut(strings.TrimSpace(href), "/")
	if !ok || dir == "" || strings.ContainsAny(dir, ":?#%\\") {
		return "", false
	}
	return dir, true
}

// mailmanCellVolume reads an index cell's "2024:" or "January 2024:" as a volume name.
func mailmanCellVolume(text string) string {
	f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(text), ":"))
	switch {
	case len(f) == 1:
		return f[0]
	case len(f) == 2 && slices.Contains(mailmanMonths, f[0]):
		return f[1] + "-" + f[0]
	}
	return ""
}

func htmlAttr(tok html.Token, name string) string {
	for _, a := range tok.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// mailmanEntry is one message of a volume's thread.html, in page order.
type mailmanEntry struct {
	ID      string // the file's number, "017633"
	Subject string
}

// mailmanMessageID reports whether id is a message file's number.
func mailmanMessageID(id string) bool {
	if id == "" || len(id) > mailmanMaxMessageID {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseMailmanThreads returns the messages thread.html links to ("017633.html"), in page
// order, each once, with the subject the link shows.
func parseMailmanThreads(page []byte) []mailmanEntry {
	var out []mailmanEntry
	seen := map[string]bool{}
	z := html.NewTokenizer(bytes.NewReader(page))
	var cur *mailmanEntry
	var text strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken:
			tok := z.Token()
			if tok.DataAtom != atom.A {
				continue
			}
			href := strings.TrimSpace(htmlAttr(tok, "href"))
			id, ok := strings.CutSuffix(href, ".html")
			if ok && mailmanMessageID(id) && !seen[id] && len(out) < mailmanMaxThreadEntries {
				seen[id] = true
				out = append(out, mailmanEntry{ID: id})
				cur = &out[len(out)-1]
				text.Reset()
			}
		case html.EndTagToken:
			if cur != nil && z.Token().DataAtom == atom.A {
				cur.Subject = mailmanLine(text.String(), mailmanMaxSubject)
				cur = nil
			}
		case html.TextToken:
			if cur != nil && text.Len() < 4*mailmanMaxSubject {
				text.Write(z.Text())
			}
		}
	}
}

// mailmanPage is what a message page gives.
type mailmanPage struct {
	Subject, Author, Email, Date, Body string
}

// parseMailmanMessage reads a message page (§6.9): the <title>, the first <b> (author), the
// first mailto link's address, the first <i> (the date as written) and the first <pre> (the
// body, its links kept as Markdown links when their text differs).
func parseMailmanMessage(page []byte) mailmanPage {
	var p mailmanPage
	z := html.NewTokenizer(bytes.NewReader(page))
	const (
		none = iota
		inTitle
		inB
		inI
		inPre
	)
	state := none
	var title, b, i strings.Builder
	var body strings.Builder
	doneTitle, doneB, doneI, donePre, doneEmail := false, false, false, false, false
	var link string // the href of the <a> open inside <pre>
	var linkText strings.Builder
	inLink := false
	bodyRunes := 0
	writeBody := func(s string) {
		if bodyRunes >= mailmanMaxBody {
			return
		}
		s = cutRunes(s, mailmanMaxBody-bodyRunes)
		bodyRunes += utf8.RuneCountInString(s)
		body.WriteString(s)
	}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.DataAtom {
			case atom.Title:
				if !doneTitle {
					state = inTitle
				}
			case atom.B:
				if !doneB && state == none {
					state = inB
				}
			case atom.I:
				if !doneI && state == none {
					state = inI
				}
			case atom.Pre:
				if !donePre && state == none {
					state = inPre
				}
			case atom.A:
				href := strings.TrimSpace(htmlAttr(tok, "href"))
				if !doneEmail && len(href) > 7 && strings.EqualFold(href[:7], "mailto:") {
					doneEmail = true
					p.Email = mailtoAddress(href[7:])
				}
				if state == inPre && tt == html.StartTagToken {
					inLink, link = true, href
					linkText.Reset()
				}
			}
		case html.EndTagToken:
			tok := z.Token()
			switch {
			case tok.DataAtom == atom.Title && state == inTitle:
				state, doneTitle = none, true
			case tok.DataAtom == atom.B && state == inB:
				state, doneB = none, true
			case tok.DataAtom == atom.I && state == inI:
				state, doneI = none, true
			case tok.DataAtom == atom.Pre && state == inPre:
				state, donePre = none, true
			case tok.DataAtom == atom.A && inLink:
				inLink = false
				t := linkText.String()
				if u, err := url.Parse(link); err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.TrimSpace(t) != link {
					writeBody("[" + t + "](" + link + ")")
				} else {
					writeBody(t)
				}
			}
		case html.TextToken:
			t := z.Text()
			switch state {
			case inTitle:
				if title.Len() < 4*mailmanMaxSubject {
					title.Write(t)
				}
			case inB:
				if b.Len() < 4*mailmanMaxAuthor {
					b.Write(t)
				}
			case inI:
				if i.Len() < 4*mailmanMaxDate {
					i.Write(t)
				}
			case inPre:
				if inLink {
					if linkText.Len() < 4096 {
						linkText.Write(t)
					}
				} else {
					writeBody(string(t))
				}
			}
		}
	}
	if state == inPre && inLink {
		writeBody(linkText.String())
	}
	p.Subject = mailmanLine(title.String(), mailmanMaxSubject)
	if p.Subject == "" {
		p.Subject = "No subject"
	}
	p.Author = mailmanLine(b.String(), mailmanMaxAuthor)
	// The date is kept as written: only trimmed, line breaks and controls made spaces.
	p.Date = cutRunes(strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(i.String(), ""))), mailmanMaxDate)
	p.Body = strings.TrimSpace(strings.ToValidUTF8(strings.ReplaceAll(body.String(), "\r\n", "\n"), "\uFFFD"))
	return p
}

// mailtoAddress is the address of a mailto: link: up to its query, percent-decoded,
// bounded. pipermail links the list's address here, with the message's subject and
// In-Reply-To in the query, or (older archives) the author's.
func mailtoAddress(v string) string {
	addr, _, _ := strings.Cut(v, "?")
	if dec, err := url.PathUnescape(addr); err == nil {
		addr = dec
	}
	return mailmanLine(addr, mailmanMaxEmail)
}

// mailmanLine collapses whitespace, drops control characters and invalid UTF-8, and cuts.
func mailmanLine(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return cutRunes(strings.Join(strings.Fields(s), " "), n)
}

// mailmanNormalize is a subject as threads are matched (§6.9): a leading [list-tag] and
// leading Re:, Fwd:, Fw:, AW:, WG: (any case) removed, repeatedly and in any order (so "Re:
// [list] x" matches "[list] x"), whitespace collapsed, lower-cased.
func mailmanNormalize(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for {
		old := s
		if strings.HasPrefix(s, "[") {
			if end := strings.IndexByte(s, ']'); end > 1 && isListTag(s[1:end]) {
				s = strings.TrimSpace(s[end+1:])
			}
		}
		for _, p := range []string{"re:", "fwd:", "fw:", "aw:", "wg:"} {
			if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
				s = strings.TrimSpace(s[len(p):])
			}
		}
		if s == old {
			return strings.ToLower(s)
		}
	}
}

// isListTag reports whether t is a list tag's name: word characters and hyphens.
func isListTag(t string) bool {
	for _, r := range t {
		if r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return t != ""
}

// mailmanThreadIDs assigns each entry its thread (§6.9): the first entry with a normalised
// subject is its thread's root, and the thread id is the root's message id.
func mailmanThreadIDs(entries []mailmanEntry) map[string]string {
	roots := map[string]string{}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		n := mailmanNormalize(e.Subject)
		root, ok := roots[n]
		if !ok {
			root = e.ID
			roots[n] = root
		}
		out[e.ID] = root
	}
	return out
}
