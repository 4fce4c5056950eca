// Package fastpath serves HTTP/1.1 connections ahead of net/http on one listener, answering the
// requests whose answers are fixed bytes (a community's public config, the listing, wheels,
// logos) without net/http's per-request machinery, and handing every other connection to an
// http.Server unchanged.
//
// Why it exists: on loopback net/http answers a small precomputed body at about 0.6× nginx's
// rate, whatever the handler does (its goroutine hand-offs, a background read per request, a
// header map per response and the garbage they make). A connection loop that reads the head
// from its buffer, answers from precomputed bytes in one writev and allocates nothing runs at
// nginx's rate (BENCHMARKS.md, issue 16).
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
