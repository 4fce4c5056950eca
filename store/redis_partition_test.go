package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/osc-assistant/assistant/store/storetest"
)

// partitionProxy forwards TCP connections to Redis and can cut the store off from it as a
// network partition would: once armed with a script's SHA, the first command that carries it
// reaches Redis (so the script runs), its reply and everything after are dropped, every
// connection is closed and new ones are closed at once, until heal.
type partitionProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	trigger []byte
	cut     bool
	cutAt   chan struct{} // closed when the partition begins
	clients map[net.Conn]bool
	servers []net.Conn
}

func newPartitionProxy(t *testing.T, target string) *partitionProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partitionProxy{ln: ln, target: target, clients: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for c := range p.clients {
			c.Close()
		}
		for _, s := range p.servers {
			s.Close()
		}
	})
	return p
}

func (p *partitionProxy) addr() string { return p.ln.Addr().String() }

// arm makes the next command carrying sha start a partition; it returns a channel closed then.
func (p *partitionProxy) arm(sha string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger, p.cutAt = []byte(sha), make(chan struct{})
	return p.cutAt
}

func (p *partitionProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *partitionProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.clients[c] = true
		p.servers = append(p.servers, s)
		p.mu.Unlock()
		go p.up(c, s)
		go p.down(s, c)
	}
}

// up copies the client's commands to Redis, watching for the trigger (also across two reads).
func (p *partitionProxy) up(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := c.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				return
			}
			fire := p.trigger != nil && bytes.Contains(seen, p.trigger)
			if fire {
				p.cut, p.trigger = true, nil // nothing from Redis reaches the client from now on
			}
			p.mu.Unlock()
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
			if fire {
				p.mu.Lock()
				for cc := range p.clients {
					cc.Close()
				}
				clear(p.clients)
				close(p.cutAt)
				p.mu.Unlock()
				return
			}
			tail = append(tail[:0], seen[max(0, len(seen)-64):]...)
		}
		if err != nil {
			return
		}
	}
}

// down copies Redis's replies to the client, dropping them during a partition. Redis's side of
// the connection stays open, so the command that started the partition runs.
func (p *partitionProxy) down(s, c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cut
			p.mu.Unlock()
			if !cut {
				if _, werr := c.Write(buf[:n]); werr != nil {
					_, _ = io.Copy(io.Discard, s)
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// TestRedisPartitionUndoesAFailedWrite (issue 22, review item 6): a write of attached files
// whose script ran but whose reply was lost, with Redis then unreachable past the settle window
// (a partition), is answered with an error; once Redis answers again the store undoes it in
// the background, so what is stored is what the answer said: a new file is gone, a replaced
// one is back as it was, a deleted one is back, and the client counts and the community's
// total are as before. (Before, the files stayed though the answer was 503.)
func TestRedisPartitionUndoesAFailedWrite(t *testing.T) {
	addr := storetest.RedisAddr(t)
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Addr: addr})
	defer raw.Close()
	for _, sc := range []*redis.Script{putFilesScript, deleteFileScript, undoFilesScript, ensureScript} {
		if err := sc.Load(ctx, raw).Err(); err != nil { // the proxy watches EVALSHA, never EVAL
			t.Fatal(err)
		}
	}
	lim := FileLimits{MaxFiles: 4, MaxSessionBytes: 1 << 20, MaxClientBytes: 1 << 20}
	as := func(client string) FileLimits { l := lim; l.Client = client; return l }
	v1 := []NewFile{{Name: "a.csv", Type: "csv", Data: []byte("a,b\n1,2\n")}}
	v2 := []NewFile{{Name: "a.csv", Type: "csv", Data: []byte("a,b\n3,4\n5,6\n")}, {Name: "b.csv", Type: "csv", Data: []byte("x\n")}}
	for _, tc := range []struct {
		name   string
		before []NewFile // the session's file, put by 192.0.2.1
		sha    string
		write  func(s *Redis, id string) error
	}{
		{"a new file", nil, putFilesScript.Hash(), func(s *Redis, id string) error {
			_, err := s.PutFiles(ctx, "hed", id, v2[1:], as("192.0.2.2"))
			return err
		}},
		{"a replaced file and a new one", v1, putFilesScript.Hash(), func(s *Redis, id string) error {
			_, err := s.PutFiles(ctx, "hed", id, v2, as("192.0.2.2"))
			return err
		}},
		{"a deleted file", v1, deleteFileScript.Hash(), func(s *Redis, id string) error {
			ok, err := s.DeleteFile(ctx, "hed", id, "a.csv")
			if err == nil && !ok {
				return errors.New("DeleteFile found no file")
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := testPrefix()
			proxy := newPartitionProxy(t, addr)
			u := fmt.Sprintf("redis://%s/0?read_timeout=300ms&write_timeout=300ms&dial_timeout=300ms&min_retry_backoff=8ms&max_retry_backoff=10ms", proxy.addr())
			s, err := NewRedis(ctx, RedisOptions{URL: u, Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.window = time.Second // settled for about 2 s, then answered
			direct, err := NewRedis(ctx, RedisOptions{URL: "redis://" + addr + "/0", Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			mustEnsure(t, s, "hed", "u")
			if tc.before != nil {
				if _, err := s.PutFiles(ctx, "hed", "u", tc.before, as("192.0.2.1")); err != nil {
					t.Fatal(err)
				}
			}
			want := snapshot(t, direct, raw, "u")

			cut := proxy.arm(tc.sha)
			err = tc.write(s, "u")
			select {
			case <-cut:
			default:
				t.Fatalf("the write never reached the proxy: %v", err)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("a write cut off past its settle window: %v, want ErrUnavailable", err)
			}
			if snapshot(t, direct, raw, "u") == want {
				t.Fatal("the write did not run: the test reproduces nothing")
			}
			proxy.heal()
			var got string
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if got = snapshot(t, direct, raw, "u"); got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("15 s after Redis answered again, the write answered as failed is still stored:\n got %s\nwant %s", got, want)
				}
			}
			// The record is consumed: nothing is left to undo twice.
			if n, err := raw.Keys(ctx, prefix+"*:undo").Result(); err != nil || len(n) != 0 {
				t.Errorf("undo records left: %q, %v", n, err)
			}
		})
	}
}

// snapshot is what the session u of hed holds and what it counts, as one comparable text: its
// files (name, size, sha256) and bytes, the community's total for files, each client's count
// and the session's counted bytes.
func snapshot(t *testing.T, s *Redis, raw *redis.Client, id string) string {
	t.Helper()
	ctx := context.Background()
	var b bytes.Buffer
	files, err := s.Files(ctx, "hed", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, data, err := s.File(ctx, "hed", id, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %s %q; ", f.Name, f.Bytes, f.SHA256[:12], data)
	}
	a := s.artifactKeys("hed")
	total, _ := raw.Get(ctx, a.ftotal).Result()
	if total == "" {
		total = "0"
	}
	clients, _ := raw.HGetAll(ctx, a.base+"fclient").Result()
	size, _ := raw.HGet(ctx, a.fsize, enc(id)).Result()
	fmt.Fprintf(&b, "total %s; clients %v; counted %q", total, clients, size)
	return b.String()
}
