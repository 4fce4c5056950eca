package ingesttest

import (
	"fmt"
	"net/http"
)

// cannedQueue is a fake API's queued answers (CannedReply), taken in order; the fake's own
// mutex guards it.
type cannedQueue []CannedReply

// serveNext answers w with the next queued reply and reports its status, or reports false
// when none is queued. The reply's headers are set first, then contentType when not "" (the
// fake's own type, as its real answers carry).
func (q *cannedQueue) serveNext(w http.ResponseWriter, contentType string) (int, bool) {
	if len(*q) == 0 {
		return 0, false
	}
	r := (*q)[0]
	*q = (*q)[1:]
	for k, v := range r.Header {
		w.Header().Set(k, v)
	}
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.WriteHeader(r.Status)
	fmt.Fprint(w, r.Body)
	return r.Status, true
}
