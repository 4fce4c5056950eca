package ingesttest

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// MailmanMessage is one message of a fake archive.
type MailmanMessage struct {
	Subject string
	Author  string
	// Email is the author's address: pipermail shows it as "jdoe at example.org" and (when
	// the archive obscures addresses, the default) links the list's own address.
	Email string
	Body  string
	Date  time.Time
	// ReplyTo is the id of the message this one answers ("" for none); thread.html nests it.
	ReplyTo string
}

// MailmanRequest is one request the fake answered.
type MailmanRequest struct {
	Path   string
	Status int
}

// Mailman is a fake Mailman 2 pipermail archive of one list, served under
// /pipermail/{list}/: the archive index (newest volume first, "2024:" cells and links into
// each volume), each volume's thread.html (threads by their first message's date, replies
// nested in <UL>, as pipermail writes them) and each message page (<TITLE>, the author in
// <B>, the obscured address in a mailto link, the date in <I>, the body in <PRE> with its
// links). Volumes are yearly ("2024") or, with Monthly, monthly ("2024-January").
type Mailman struct {
	// URL is the archive's base URL, with its trailing slash.
	URL string
	srv *httptest.Server

	mu sync.Mutex
	// Monthly makes the volumes of the messages posted after it is set months;
	// ObscureOff links the author's own address (older archives) instead of the list's.
	Monthly, ObscureOff bool
	list                string
	next                int
	msgs                []*mailmanMsg
	gone                map[string]bool
	requests            []MailmanRequest
}

type mailmanMsg struct {
	MailmanMessage
	id, vol string
}

// NewMailman starts a fake archive of the list named list, closed when the test ends.
func NewMailman(tb testing.TB, list string) *Mailman {
	m := &Mailman{list: list, next: 17600, gone: map[string]bool{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = m.srv.URL + "/pipermail/" + list + "/"
	tb.Cleanup(m.srv.Close)
	return m
}

// Post archives a message and returns its id ("017600").
func (m *Mailman) Post(msg MailmanMessage) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg.Author == "" {
		msg.Author = "Jane Doe"
	}
	if msg.Email == "" {
		msg.Email = "jdoe@example.org"
	}
	id := fmt.Sprintf("%06d", m.next)
	m.next++
	m.msgs = append(m.msgs, &mailmanMsg{MailmanMessage: msg, id: id, vol: m.volumeOf(msg.Date)})
	return id
}

// Remove makes a message's page answer 404 while thread.html still lists it.
func (m *Mailman) Remove(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gone[id] = true
}

// Requests returns the requests answered so far.
func (m *Mailman) Requests() []MailmanRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// Count returns how many requests had a path ending with suffix ("" counts all).
func (m *Mailman) Count(suffix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.requests {
		if strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// ResetRequests forgets the requests answered so far.
func (m *Mailman) ResetRequests() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = nil
}

func (m *Mailman) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	status := m.answer(w, r)
	m.requests = append(m.requests, MailmanRequest{Path: r.URL.Path, Status: status})
}

func (m *Mailman) volumeOf(t time.Time) string {
	t = t.UTC()
	if m.Monthly {
		return fmt.Sprintf("%d-%s", t.Year(), t.Month())
	}
	return fmt.Sprint(t.Year())
}

func (m *Mailman) answer(w http.ResponseWriter, r *http.Request) int {
	prefix := "/pipermail/" + m.list + "/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok && r.URL.Path+"/" == prefix {
		rest, ok = "", true
	}
	if !ok || r.Method != http.MethodGet {
		return mmNotFound(w, r.URL.Path)
	}
	w.Header().Set("Content-Type", "text/html; charset=us-ascii")
	if rest == "" || rest == "index.html" {
		return m.index(w)
	}
	vol, file, ok := strings.Cut(rest, "/")
	if !ok {
		return mmNotFound(w, r.URL.Path)
	}
	var in []*mailmanMsg
	for _, msg := range m.msgs {
		if msg.vol == vol {
			in = append(in, msg)
		}
	}
	if len(in) == 0 {
		return mmNotFound(w, r.URL.Path)
	}
	if file == "thread.html" {
		return m.thread(w, vol, in)
	}
	id, ok := strings.CutSuffix(file, ".html")
	for _, msg := range in {
		if ok && msg.id == id && !m.gone[id] {
			return m.message(w, vol, in, msg)
		}
	}
	return mmNotFound(w, r.URL.Path)
}

func (m *Mailman) index(w http.ResponseWriter) int {
	var vols []string
	for _, msg := range m.msgs {
		if !slices.Contains(vols, msg.vol) {
			vols = append(vols, msg.vol)
		}
	}
	slices.Reverse(vols) // newest first, as pipermail lists them
	name := mmTitle(m.list)
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2//EN">
<HTML>
  <HEAD>
     <title>The %s Archives</title>
     <META NAME="robots" CONTENT="noindex,follow">
     <META http-equiv="Content-Type" content="text/html; charset=us-ascii">
  </HEAD>
  <BODY BGCOLOR="#ffffff">
     <h1>The %s Archives </h1>
     <p>
      You can get <a href="/mailman/listinfo/%s">more information about this list</a>
      or you can <a href="%s.mbox/%s.mbox">download the full raw archive</a>
      (2917 KB).
     </p>
     <p>
     <table border=3>
          <tr><td>Archive</td>
          <td>View by:</td>
          <td>Downloadable version</td></tr>
`, name, name, m.list, m.list, m.list)
	for _, v := range vols {
		cell := v + ":"
		if y, mon, ok := strings.Cut(v, "-"); ok {
			cell = mon + " " + y + ":"
		}
		fmt.Fprintf(&b, `
	    <tr>
            <td>%s</td>
            <td>
              <A href="%s/thread.html">[ Thread ]</a>
              <A href="%s/subject.html">[ Subject ]</a>
              <A href="%s/author.html">[ Author ]</a>
              <A href="%s/date.html">[ Date ]</a>
            </td>
                        <td><A href="%s.txt.gz">[ Gzip'd Text 41 KB ]</a></td>
            </tr>
`, cell, v, v, v, v, v)
	}
	b.WriteString("\n     </table>\n  </BODY>\n</HTML>\n")
	w.Write([]byte(b.String()))
	return http.StatusOK
}

// thread writes thread.html: threads in the order of their first message, replies nested.
func (m *Mailman) thread(w http.ResponseWriter, vol string, in []*mailmanMsg) int {
	children := map[string][]*mailmanMsg{}
	ids := map[string]bool{}
	for _, msg := range in {
		ids[msg.id] = true
	}
	var roots []*mailmanMsg
	for _, msg := range in {
		if msg.ReplyTo != "" && ids[msg.ReplyTo] {
			children[msg.ReplyTo] = append(children[msg.ReplyTo], msg)
		} else {
			roots = append(roots, msg)
		}
	}
	name := mmTitle(m.list)
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2//EN">
<HTML>
  <HEAD>
     <title>The %s %s Archive by thread</title>
     <META NAME="robots" CONTENT="noindex,follow">
     <META http-equiv="Content-Type" content="text/html; charset=us-ascii">
  </HEAD>
  <BODY BGCOLOR="#ffffff">
      <a name="start"></A>
      <h1>%s Archives by thread</h1>
      <ul>
         <li> <b>Messages sorted by:</b>
	        [ thread ]
		<a href="subject.html#start">[ subject ]</a>
		<a href="author.html#start">[ author ]</a>
		<a href="date.html#start">[ date ]</a>

	     <li><b><a href="/mailman/listinfo/%s">More info on this list...
                    </a></b></li>
      </ul>
      <p><b>Starting:</b> <i>%s</i><br>
         <b>Ending:</b> <i>%s</i><br>
         <b>Messages:</b> %d<p>
     <ul>
`, name, vol, vol, m.list, mmDate(in[0].Date), mmDate(in[len(in)-1].Date), len(in))
	var walk func(msg *mailmanMsg, depth int)
	walk = func(msg *mailmanMsg, depth int) {
		fmt.Fprintf(&b, "\n<!--%d %d.%s- -->\n<LI><A HREF=\"%s.html\">[%s] %s\n</A><A NAME=\"%s\">&nbsp;</A>\n<I>%s\n</I>\n",
			depth, msg.Date.Unix(), msg.id, msg.id, name, html.EscapeString(msg.Subject), strings.TrimLeft(msg.id, "0"), html.EscapeString(msg.Author))
		if kids := children[msg.id]; len(kids) > 0 {
			b.WriteString("<UL>\n")
			for _, k := range kids {
				walk(k, depth+1)
			}
			b.WriteString("</UL>\n")
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	fmt.Fprintf(&b, `    </ul>
    <p>
      <a name="end"><b>Last message date:</b></a>
       <i>%s</i><br>
    <b>Archived on:</b> <i>%s</i>
    <p>
   <ul>
         <li> <b>Messages sorted by:</b>
	        [ thread ]
		<a href="subject.html#start">[ subject ]</a>
		<a href="author.html#start">[ author ]</a>
		<a href="date.html#start">[ date ]</a>
	     <li><b><a href="/mailman/listinfo/%s">More info on this list...
                    </a></b></li>
     </ul>
     <p>
     <hr>
     <i>This archive was generated by
     Pipermail 0.09 (Mailman edition).</i>
  </BODY>
</HTML>
`, mmDate(in[len(in)-1].Date), mmDate(in[len(in)-1].Date), m.list)
	w.Write([]byte(b.String()))
	return http.StatusOK
}

// message writes a message page as pipermail does.
func (m *Mailman) message(w http.ResponseWriter, vol string, in []*mailmanMsg, msg *mailmanMsg) int {
	name := mmTitle(m.list)
	subject := "[" + name + "] " + msg.Subject
	listAddr := m.list + "@lists.example.org"
	href := "mailto:" + url.PathEscape(listAddr) + "?Subject=" + url.QueryEscape("Re: "+subject) + "&In-Reply-To=" + url.QueryEscape("<"+msg.id+"@mail.example.org>")
	shown := strings.Replace(msg.Email, "@", " at ", 1)
	if m.ObscureOff {
		href = "mailto:" + url.PathEscape(msg.Email) + "?Subject=" + url.QueryEscape("Re: "+subject)
		shown = msg.Email
	}
	prev, next := "", ""
	for i, x := range in {
		if x == msg {
			if i > 0 {
				prev = fmt.Sprintf("<LINK REL=\"Previous\"  HREF=\"%s.html\">\n   ", in[i-1].id)
			}
			if i+1 < len(in) {
				next = fmt.Sprintf("<LINK REL=\"Next\"  HREF=\"%s.html\">\n", in[i+1].id)
			}
		}
	}
	fmt.Fprintf(w, `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2//EN">
<HTML>
 <HEAD>
   <TITLE> %s
   </TITLE>
   <LINK REL="Index" HREF="index.html" >
   <LINK REL="made" HREF="%s">
   <META NAME="robots" CONTENT="index,nofollow">
   <style type="text/css">
       pre {
           white-space: pre-wrap;       /* css-2.1, curent FF, Opera, Safari */
           }
   </style>
   <META http-equiv="Content-Type" content="text/html; charset=us-ascii">
   %s%s </HEAD>
 <BODY BGCOLOR="#ffffff">
   <H1>%s</H1>
    <B>%s</B>
    <A HREF="%s"
       TITLE="%s">%s
       </A><BR>
    <I>%s</I>
    <P><UL>
        <LI>Next message: <A HREF="017001.html">[%s] Other</A></li>
         <LI> <B>Messages sorted by:</B>
              <a href="date.html#%s">[ date ]</a>
              <a href="thread.html#%s">[ thread ]</a>
              <a href="subject.html#%s">[ subject ]</a>
              <a href="author.html#%s">[ author ]</a>
         </LI>
       </UL>
    <HR>
<!--beginarticle-->
<PRE>%s
</PRE>

<!--endarticle-->
    <HR>
    <P><UL>
        <LI>Next message: <A HREF="017001.html">[%s] Other</A></li>
         <LI> <B>Messages sorted by:</B>
              <a href="date.html#%s">[ date ]</a>
              <a href="thread.html#%s">[ thread ]</a>
         </LI>
       </UL>

<hr>
<a href="/mailman/listinfo/%s">More information about the %s
mailing list</a><br>
</body></html>
`, html.EscapeString(subject), html.EscapeString(href), prev, next, html.EscapeString(subject), html.EscapeString(msg.Author),
		html.EscapeString(href), html.EscapeString(subject), html.EscapeString(shown), mmDate(msg.Date),
		name, msg.id, msg.id, msg.id, msg.id, mmBody(msg.Body), name, msg.id, msg.id, m.list, name)
	return http.StatusOK
}

// mmBody escapes a body for <PRE> and links its URLs, as pipermail does.
func mmBody(s string) string {
	var out []string
	for _, word := range strings.SplitAfter(s, " ") {
		trimmed := strings.TrimRight(word, " \n")
		if strings.HasPrefix(trimmed, "http://") || strings.HasPrefix(trimmed, "https://") {
			e := html.EscapeString(trimmed)
			out = append(out, `<A HREF="`+e+`">`+e+`</A>`+word[len(trimmed):])
			continue
		}
		out = append(out, html.EscapeString(word))
	}
	return strings.Join(out, "")
}

// mmDate is a date as pipermail writes it ("Mon Jan  8 10:15:42 UTC 2024").
func mmDate(t time.Time) string { return t.UTC().Format("Mon Jan _2 15:04:05 MST 2006") }

func mmTitle(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func mmNotFound(w http.ResponseWriter, path string) int {
	w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n<p>The requested URL %s was not found on this server.</p>\n</body></html>\n", html.EscapeString(path))
	return http.StatusNotFound
}
