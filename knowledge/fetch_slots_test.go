package knowledge

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestTimeoutStartsWithTheSlot: a round of more documents than one host's slots, at a server
// that holds every request a while, queues most of them behind the others for longer than
// the document timeout; none fails for it, since each has the whole timeout once it holds its
// slots, and no more than maxPerHost requests reach the host at once.
func TestTimeoutStartsWithTheSlot(t *testing.T) {
	const (
		docs    = 16
		timeout = time.Second
		// hold is how long the server keeps each request: well inside the timeout, while
		// the last of the docs/maxPerHost waves waits (docs/maxPerHost-1)*hold, past it.
		hold = 150 * time.Millisecond
	)
	s := newSite(t)
	var inFlight, most atomic.Int64
	var list []Doc
	for i := range docs {
		u := fmt.Sprintf("https://docs.example.org/slow/%d.md", i)
		s.handle(u, func(w http.ResponseWriter, r *http.Request) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			select { // a slow server, not synchronisation: the queue must outlast the timeout
			case <-time.After(hold):
			case <-r.Context().Done():
			}
			io.WriteString(w, fmt.Sprintf("# Doc %d\n\ntext %d\n", i, i))
		})
		list = append(list, Doc{Title: fmt.Sprint("Doc ", i), URL: u, Type: "markdown"})
	}
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.docs.timeout = timeout
	if (docs/maxPerHost-1)*hold <= timeout {
		t.Fatal("the queue would not outlast the timeout")
	}
	if err := l.Apply([]Community{{ID: "slow", Name: "Slow", Docs: list}}); err != nil {
		t.Fatal(err)
	}
	for _, d := range ready(t, l, "slow").Docs {
		if !d.HasContent || d.LastError != "" {
			t.Errorf("%s: content %v, error %q", d.URL, d.HasContent, d.LastError)
		}
	}
	if n := most.Load(); n > maxPerHost {
		t.Errorf("%d requests at the host at once, want at most %d", n, maxPerHost)
	}
}
