//go:build linux

package fastpath

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net/http"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeal: small bodies get no file; a large one is sealed against any change, so the bytes
// sendfile reads are the bytes given.
func TestSeal(t *testing.T) {
	if Seal(make([]byte, MinSealed-1)) != nil {
		t.Error("a body under MinSealed was given a memory file")
	}
	data := make([]byte, 3*MinSealed+17)
	_, _ = rand.Read(data)
	f := Seal(data)
	if f == nil {
		t.Fatal("no memory file for a large body")
	}
	if f.size != int64(len(data)) {
		t.Fatalf("size %d, want %d", f.size, len(data))
	}
	got := make([]byte, len(data))
	if n, err := unix.Pread(f.fd, got, 0); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("pread: %d bytes, %v, equal %v", n, err, bytes.Equal(got, data))
	}
	if _, err := unix.Pwrite(f.fd, []byte("x"), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("a write into the sealed file: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(f.fd, 1); !errors.Is(err, unix.EPERM) {
		t.Errorf("shrinking the sealed file: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(f.fd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); !errors.Is(err, unix.EPERM) {
		t.Errorf("changing the seals: %v, want EPERM", err)
	}
}

// TestSealedAnswers: a sealed body sent with sendfile arrives whole, on many connections at
// once (they share the file's pages, each from offset 0), pipelined behind small answers, and
// a HEAD gets its length and no bytes.
func TestSealedAnswers(t *testing.T) {
	data := make([]byte, 1<<20+123)
	_, _ = rand.Read(data)
	sealed := Seal(data)
	if sealed == nil {
		t.Fatal("no memory file")
	}
	ts := svStart(t, func(s *Server) {
		next := s.Answer
		s.Answer = func(r *Request, w *Response) bool {
			if r.Path == "/sealed" {
				w.Header("Content-Type", "application/octet-stream")
				w.SendSealed(http.StatusOK, data, sealed)
				return true
			}
			return next(r, w)
		}
	})
	sendsBefore := sealedSends.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := ts.dial(t)
			for range 5 {
				c.write(svGet("/sealed") + svGet("/fast") + svReq("HEAD", "/sealed"))
				resp, body := c.read("GET")
				if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(data)) || !bytes.Equal(body, data) {
					t.Errorf("sealed: %d, length %d, %d bytes, equal %v", resp.StatusCode, resp.ContentLength, len(body), bytes.Equal(body, data))
					return
				}
				if _, body := c.read("GET"); !bytes.Equal(body, svFastBody) {
					t.Errorf("the answer after a sealed one: %q", body)
					return
				}
				if resp, body := c.read("HEAD"); resp.ContentLength != int64(len(data)) || len(body) != 0 {
					t.Errorf("HEAD: length %d, %d bytes", resp.ContentLength, len(body))
					return
				}
			}
		})
	}
	wg.Wait()
	if n := sealedSends.Load() - sendsBefore; n != 8*5 {
		t.Errorf("%d answers went with sendfile, want %d (one per GET)", n, 8*5)
	}
	if answered, handed := ts.s.Stats(); answered != 8*5*3 || handed != 0 {
		t.Errorf("stats %d answered, %d handed off; want %d, 0", answered, handed, 8*5*3)
	}
}
