package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

type mmFixture struct {
	arch  *ingesttest.Mailman
	store *knowledge.Store
	src   *Mailman
	clk   *stepClock
	cache string
}

func newMMFixture(t *testing.T, monthly bool) *mmFixture {
	t.Helper()
	clk := newStepClock() // 2026-03-02 09:00 UTC
	arch := ingesttest.NewMailman(t, "eeglablist")
	arch.Monthly = monthly
	f := &mmFixture{arch: arch, store: openTestStore(t), clk: clk, cache: filepath.Join(t.TempDir(), "mailman")}
	f.src = f.newSource(t, f.store)
	return f
}

func (f *mmFixture) newSource(t *testing.T, store *knowledge.Store) *Mailman {
	t.Helper()
	src, err := NewMailman(MailmanOptions{Store: store, Client: knowledge.NewGuardedClient(knowledge.GuardOptions{AllowLoopback: true}),
		CacheDir: f.cache, Now: f.clk.Now, Sleep: f.clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	src.Delay = 0
	return src
}

func (f *mmFixture) community(startYear int) *config.Community {
	l := config.Mailman{ListName: "eeglablist", BaseURL: strings.TrimSuffix(f.arch.URL, "/")}
	if startYear > 0 {
		l.StartYear = &startYear
	}
	return &config.Community{ID: "eeglab", Name: "EEGLAB", Mailman: []config.Mailman{l}}
}

func (f *mmFixture) sync(t *testing.T, c *config.Community, full bool) Result {
	t.Helper()
	res, err := f.src.Sync(context.Background(), c, RunOptions{Full: full}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// mmDay is a date at noon UTC.
func mmDay(year int, month time.Month, d int) time.Time {
	return time.Date(year, month, d, 12, 0, 0, 0, time.UTC)
}

func TestMailmanFirstSyncFillsAndAssemblesThreads(t *testing.T) {
	f := newMMFixture(t, false)
	f.arch.Post(ingesttest.MailmanMessage{Subject: "Old 2024 question", Date: mmDay(2024, 5, 1)})
	root := f.arch.Post(ingesttest.MailmanMessage{Subject: "ICA rejects every component", Author: "Jane Doe", Email: "jane@example.org",
		Body: "After runica all components look like noise.\nSee https://sccn.ucsd.edu/wiki/ICA for what I did.\n> quoted <text> & more", Date: mmDay(2025, 11, 3)})
	r1 := f.arch.Post(ingesttest.MailmanMessage{Subject: "Re: ICA rejects every component", Author: "Arnaud", Date: mmDay(2025, 11, 4), ReplyTo: root})
	other := f.arch.Post(ingesttest.MailmanMessage{Subject: "Channel locations", Date: mmDay(2025, 11, 5)})
	r2 := f.arch.Post(ingesttest.MailmanMessage{Subject: "AW: Re: ICA rejects  every component", Author: "Klaus", Date: mmDay(2025, 11, 6), ReplyTo: r1})
	fw := f.arch.Post(ingesttest.MailmanMessage{Subject: "Fwd: channel LOCATIONS", Date: mmDay(2025, 12, 1)})
	cur := f.arch.Post(ingesttest.MailmanMessage{Subject: "Re: ICA rejects every component", Date: mmDay(2026, 2, 1)})

	res := f.sync(t, f.community(2025), false)
	if res.Items != 6 {
		t.Errorf("%d messages stored, want the 6 from 2025 on", res.Items)
	}
	if n := f.arch.Count("2024/thread.html"); n != 0 {
		t.Errorf("the 2024 volume, before start_year, was read %d times", n)
	}
	if got, want := len(f.arch.Requests()), 1+2+6; got != want {
		t.Errorf("%d requests, want %d (index, 2 thread pages, 6 messages)", got, want)
	}
	rows := queryRows(t, f.store, "eeglab", `SELECT message_id, thread_id FROM mailing_list_messages ORDER BY message_id`)
	want := fmt.Sprint([][]string{{root, root}, {r1, root}, {other, other}, {r2, root}, {fw, other}, {cur, cur}})
	if fmt.Sprint(rows) != want {
		t.Errorf("(message, thread) = %v, want %v (threads within one volume)", rows, want)
	}
	rows = queryRows(t, f.store, "eeglab", `SELECT subject, author, author_email, date, body, url, year, in_reply_to IS NULL FROM mailing_list_messages WHERE message_id = ?`, root)
	wantRow := []string{"[Eeglablist] ICA rejects every component", "Jane Doe", "eeglablist@lists.example.org", "Mon Nov  3 12:00:00 UTC 2025",
		"After runica all components look like noise.\nSee https://sccn.ucsd.edu/wiki/ICA for what I did.\n> quoted <text> & more",
		f.arch.URL + "2025/" + root + ".html", "2025", "1"}
	if len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprint(wantRow) {
		t.Errorf("root message =\n%q\nwant\n%q", rows, wantRow)
	}
	if m, ok := syncMetaOf(t, f.store, "eeglab", "mailman", "eeglablist"); !ok || m.Items != 6 || !m.LastSyncAt.Equal(f.clk.Now()) {
		t.Errorf("(mailman, list) = %+v, %v", m, ok)
	}
}

func TestMailmanIncrementalFetchesOnlyWhatIsNew(t *testing.T) {
	f := newMMFixture(t, false)
	for i := range 5 {
		f.arch.Post(ingesttest.MailmanMessage{Subject: fmt.Sprintf("Question %d", i), Date: mmDay(2025, time.Month(3+i), 2)})
		f.arch.Post(ingesttest.MailmanMessage{Subject: fmt.Sprintf("Now %d", i), Date: mmDay(2026, 1, 2+i)})
	}
	f.sync(t, f.community(0), false)
	f.clk.Advance(24 * time.Hour)
	id := f.arch.Post(ingesttest.MailmanMessage{Subject: "Re: Now 2", Date: mmDay(2026, 3, 3)})
	f.arch.ResetRequests()

	res := f.sync(t, f.community(0), false)
	var paths []string
	for _, r := range f.arch.Requests() {
		paths = append(paths, strings.TrimPrefix(r.Path, "/pipermail/eeglablist/"))
	}
	// 2025 was final before the first run started: not read again. 2026 is current.
	if want := fmt.Sprint([]string{"", "2026/thread.html", "2026/" + id + ".html"}); fmt.Sprint(paths) != want {
		t.Errorf("second sync asked %v, want %s", paths, want)
	}
	if res.Items != 1 {
		t.Errorf("%d written, want 1", res.Items)
	}
	if got := queryRows(t, f.store, "eeglab", `SELECT thread_id FROM mailing_list_messages WHERE message_id = ?`, id); len(got) != 1 || got[0][0] == id {
		t.Errorf("the reply's thread %v: want the root of \"Now 2\"", got)
	}
	// Nothing new: the current volume's thread page only.
	f.arch.ResetRequests()
	if res := f.sync(t, f.community(0), false); res.Items != 0 || len(f.arch.Requests()) != 2 {
		t.Errorf("third sync wrote %d and made %d requests, want 0 and 2", res.Items, len(f.arch.Requests()))
	}
	// Even without its cache, a volume a clean run saw final is not read again.
	if err := os.RemoveAll(f.cache); err != nil {
		t.Fatal(err)
	}
	f.arch.ResetRequests()
	f.sync(t, f.community(0), false)
	if n := f.arch.Count("2026/thread.html"); n != 1 || len(f.arch.Requests()) != 1+1+6 {
		t.Errorf("after the cache was removed: %d requests %v, want the index and 2026's pages only", len(f.arch.Requests()), f.arch.Requests())
	}
	for _, r := range f.arch.Requests() {
		if strings.Contains(r.Path, "/2025/") {
			t.Errorf("asked %s, a volume final before the last clean run", r.Path)
		}
	}
}

func TestMailmanMonthlyVolumesAndCache(t *testing.T) {
	f := newMMFixture(t, true)
	for i := range 4 {
		f.arch.Post(ingesttest.MailmanMessage{Subject: fmt.Sprintf("February %d", i), Date: mmDay(2026, 2, 10+i)})
	}
	f.arch.Post(ingesttest.MailmanMessage{Subject: "March 0", Date: mmDay(2026, 3, 1)})
	f.sync(t, f.community(0), false) // 2 March: February's page is not final yet

	febFetches := func() int { return f.arch.Count("2026-February/thread.html") }
	f.clk.Advance(8 * 24 * time.Hour) // 10 March
	f.arch.Post(ingesttest.MailmanMessage{Subject: "March 1", Date: mmDay(2026, 3, 9)})
	f.sync(t, f.community(0), false)
	if n := febFetches(); n != 2 {
		t.Errorf("February's thread page fetched %d times by 10 March, want 2 (once more after the month ended)", n)
	}
	for range 3 {
		f.clk.Advance(5 * 24 * time.Hour)
		f.sync(t, f.community(0), false)
	}
	if n := febFetches(); n != 2 {
		t.Errorf("February's page fetched %d times, want no more once final", n)
	}
	if n := f.arch.Count("2026-March/thread.html"); n != 5 {
		t.Errorf("the current month fetched %d times in 5 runs, want every run", n)
	}

	// A new database with the same cache: everything is stored again, and no message page
	// or final thread page is fetched a second time.
	f.arch.ResetRequests()
	store2 := openTestStore(t)
	src2 := f.newSource(t, store2)
	res, err := src2.Sync(context.Background(), f.community(0), RunOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 6 {
		t.Errorf("%d stored from the cache, want 6", res.Items)
	}
	var paths []string
	for _, r := range f.arch.Requests() {
		paths = append(paths, strings.TrimPrefix(r.Path, "/pipermail/eeglablist/"))
	}
	if fmt.Sprint(paths) != "[ 2026-March/thread.html]" {
		t.Errorf("a rebuild asked %v, want the index and the current month only", paths)
	}
}

func TestMailmanBodiesCappedAndGoneMessagesSkipped(t *testing.T) {
	f := newMMFixture(t, false)
	long := f.arch.Post(ingesttest.MailmanMessage{Subject: "Long", Body: strings.Repeat("x", 15000), Date: mmDay(2026, 1, 5)})
	gone := f.arch.Post(ingesttest.MailmanMessage{Subject: "Gone", Date: mmDay(2026, 1, 6)})
	f.arch.Post(ingesttest.MailmanMessage{Subject: "Kept", Date: mmDay(2026, 1, 7)})
	f.arch.Remove(gone)
	res := f.sync(t, f.community(0), false)
	if res.Items != 2 || len(res.Failed) != 0 {
		t.Errorf("result %+v, want 2 stored and no failure", res)
	}
	if got := queryRows(t, f.store, "eeglab", `SELECT length(body) FROM mailing_list_messages WHERE message_id = ?`, long); fmt.Sprint(got) != "[[10000]]" {
		t.Errorf("a 15,000-character body stored as %v, want 10,000", got)
	}
}

func TestMailmanAddressAsTheSpecSays(t *testing.T) {
	f := newMMFixture(t, false)
	f.arch.ObscureOff = true
	id := f.arch.Post(ingesttest.MailmanMessage{Subject: "Plain", Email: "jane.doe+eeg@example.org", Date: mmDay(2026, 1, 5)})
	f.sync(t, f.community(0), false)
	if got := queryRows(t, f.store, "eeglab", `SELECT author_email FROM mailing_list_messages WHERE message_id = ?`, id); fmt.Sprint(got) != "[[jane.doe+eeg@example.org]]" {
		t.Errorf("author_email %v: want the first mailto link's address, without its query", got)
	}
}

func TestMailmanRefusesAPrivateAddress(t *testing.T) {
	f := newMMFixture(t, false)
	f.arch.Post(ingesttest.MailmanMessage{Subject: "x", Date: mmDay(2026, 1, 5)})
	src, err := NewMailman(MailmanOptions{Store: f.store, CacheDir: f.cache, Now: f.clk.Now, Sleep: f.clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	src.Delay = 0
	res, err := src.Sync(context.Background(), f.community(0), RunOptions{}, nil)
	if err == nil || len(res.Failed) != 1 || !errors.Is(res.Failed[0].Err, knowledge.ErrDestination) {
		t.Errorf("err %v, result %+v; want the guard's refusal", err, res)
	}
	if n := len(f.arch.Requests()); n != 0 {
		t.Errorf("the archive on loopback got %d requests", n)
	}
}

func TestMailmanPolitePause(t *testing.T) {
	f := newMMFixture(t, false)
	f.arch.Post(ingesttest.MailmanMessage{Subject: "a", Date: mmDay(2026, 1, 5)})
	f.arch.Post(ingesttest.MailmanMessage{Subject: "b", Date: mmDay(2026, 1, 6)})
	f.src.Delay = DefaultMailmanDelay
	f.sync(t, f.community(0), false)
	if s, n := f.clk.Sleeps(), len(f.arch.Requests()); len(s) != n || n != 4 || s[0] != time.Second {
		t.Errorf("pauses %v for %d requests, want 1s after each of 4", s, n)
	}
}

func TestMailmanPageOverTheCapFails(t *testing.T) {
	f := newMMFixture(t, false)
	srv := http.NewServeMux()
	srv.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat(`<a href="2024/thread.html">x</a>`, 1024))
		for i := 0; i < 200; i++ { // 6.5 MB, past the index's 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	s := newLoopbackServer(t, srv)
	c := &config.Community{ID: "eeglab", Mailman: []config.Mailman{{ListName: "big", BaseURL: s}}}
	res, err := f.src.Sync(context.Background(), c, RunOptions{}, nil)
	var tl *TooLargeError
	if err == nil || len(res.Failed) != 1 || !errors.As(res.Failed[0].Err, &tl) {
		t.Errorf("err %v, result %+v; want a TooLargeError", err, res)
	}
}

func TestMailmanSubjectNormalisation(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[Eeglablist] ICA question", "ica question"},
		{"[Eeglablist] Re: RE: ICA  question", "ica question"},
		{"Re: [Eeglablist] ICA question", "ica question"},
		{"AW: WG: Fw: FWD: ica Question", "ica question"},
		{"[hed-dev] Re:Schema", "schema"},
		{"[not a tag!] x", "[not a tag!] x"},
		{"Re:", ""},
	} {
		if got := mailmanNormalize(tc.in); got != tc.want {
			t.Errorf("mailmanNormalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMailmanVolumeNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		year int
		end  string
	}{
		{"2024", true, 2024, "2025-01-01"},
		{"2024-February", true, 2024, "2024-03-01"},
		{"2024q4", true, 2024, "2025-01-01"},
		{"Week-of-Mon-20240101", true, 2024, "2024-01-08"},
		{"20240229", true, 2024, "2024-03-01"},
		{"2024-Feb", false, 0, ""},
		{"..", false, 0, ""},
		{"2024q5", false, 0, ""},
		{"eeglablist.mbox", false, 0, ""},
		{"20241332", false, 0, ""},
	} {
		v, ok := parseMailmanVolume(tc.name)
		if ok != tc.ok || ok && (v.Year != tc.year || v.End.Format(time.DateOnly) != tc.end) {
			t.Errorf("parseMailmanVolume(%q) = %+v, %v", tc.name, v, ok)
		}
	}
}

func TestMailmanCharsets(t *testing.T) {
	latin1 := []byte("<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\"></head><body><PRE>Gr\xfc\xdfe</PRE></body></html>")
	if got := parseMailmanMessage(mailmanUTF8(latin1, "")).Body; got != "Grüße" {
		t.Errorf("latin-1 body read as %q", got)
	}
	utf := []byte("<html><head><meta charset=\"us-ascii\"></head><body><PRE>Grüße</PRE></body></html>")
	if got := parseMailmanMessage(mailmanUTF8(utf, "text/html; charset=us-ascii")).Body; got != "Grüße" {
		t.Errorf("UTF-8 under a us-ascii label read as %q", got)
	}
}

// newLoopbackServer serves h on loopback for the test and returns its URL.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Which volumes were read whole is recorded per volume, not inferred from the last clean run:
// a start_year lowered later reads the older years that run skipped.
func TestMailmanStartYearLoweredReadsOlderVolumes(t *testing.T) {
	f := newMMFixture(t, false)
	old := f.arch.Post(ingesttest.MailmanMessage{Subject: "From 2023", Date: mmDay(2023, 5, 1)})
	older := f.arch.Post(ingesttest.MailmanMessage{Subject: "From 2024", Date: mmDay(2024, 6, 1)})
	f.arch.Post(ingesttest.MailmanMessage{Subject: "From 2026", Date: mmDay(2026, 1, 5)})
	if res := f.sync(t, f.community(2026), false); res.Items != 1 {
		t.Fatalf("%d stored, want 2026's one", res.Items)
	}
	f.clk.Advance(24 * time.Hour)
	f.arch.ResetRequests()
	if res := f.sync(t, f.community(2023), false); res.Items != 2 {
		t.Errorf("%d stored with start_year lowered to 2023, want 2023's and 2024's", res.Items)
	}
	got := queryRows(t, f.store, "eeglab", `SELECT message_id FROM mailing_list_messages WHERE year < 2026 ORDER BY message_id`)
	if fmt.Sprint(got) != fmt.Sprint([][]string{{old}, {older}}) {
		t.Errorf("older messages %v", got)
	}
	if m, ok := syncMetaOf(t, f.store, "eeglab", "mailman_volume", "eeglablist:2024"); !ok || m.Items != 1 {
		t.Errorf("(mailman_volume, eeglablist:2024) = %+v, %v; want it read whole", m, ok)
	}
	// Read whole and final: not read again; the current year is.
	f.arch.ResetRequests()
	f.sync(t, f.community(2023), false)
	if n, n26 := len(f.arch.Requests()), f.arch.Count("2026/thread.html"); n != 2 || n26 != 1 {
		t.Errorf("%d requests (%v), want the index and 2026's thread page", n, f.arch.Requests())
	}
}
