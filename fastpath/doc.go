// Package fastpath serves HTTP/1.1 connections ahead of net/http on one listener, answering the
// requests whose answers are fixed bytes (a community's public config, the listing, wheels,
// logos) without net/http's per-request machinery, and handing every other connection to an
// http.Server unchanged.
//
// Why it exists: on loopback net/http answers a small precomputed body at about 0.6× nginx's
// rate, whatever the handler does (its goroutine hand-offs, a background read per request, a
// header map per response and the garbage they make). Reading the head from a buffer and
// answering from precomputed bytes in one writev, allocating nothing, runs faster than nginx.
//
// Why event loops and not a goroutine per connection: goroutines run on every P the runtime
// has, so under load all of the process's threads stay busy answering, and whatever else
// needs those cores (the load generator beside the server in the benchmark; in production the
// server's own Python runs and chats) waits for the scheduler's tick, 4 ms on this kernel,
// which was the p99. Event loops bound that work to Server.Loops threads (half the Ps by
// default), each blocking in its own epoll set as nginx's workers do, so it never takes more
// than its share of the cores and gives a core back whenever nothing is ready. On 2 cores with
// one loop, p99 fell from 4 ms to 0.1–0.7 ms, a fifth or less of nginx's, at 1.2–1.3× its
// rate; two loops brought the 4 ms back (BENCHMARKS.md, issue 16). Connections leave the
// netpoller for a loop on accept (a duplicate of their descriptor) and go back to it, through
// net.FileConn, when they are handed to net/http.
//
// What it understands is deliberately narrow: a GET or HEAD in origin form, HTTP/1.1, CRLF
// line ends, a head that fits its 4 KB buffer, one Host, and no body, range, upgrade or
// expectation. Anything else — and any request the Answer function declines — is handed to
// net/http with every byte still unread, so net/http parses it from its first byte, as if the
// fast path were not there, and keeps the connection from then on. The parser is fuzzed against
// net/http's own (http.ReadRequest): whatever it accepts, net/http reads the same way.
//
// Why not a library server in front of everything (fasthttp): its net/http adaptor reads every
// request body into memory before the handler runs, which would undo the uploads' bounded,
// streamed reading, and its parser would then front the chat routes too. Here net/http stays
// the server of everything but five GET routes.
//
// It knows nothing of routes: the Answer function (routers.Server.AnswerFast) decides.
package fastpath
