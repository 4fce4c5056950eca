// Package strictjson parses one JSON document into a tree that keeps what encoding/json's
// decoding throws away, so that a caller can check a document exactly: every object keeps its
// members in input order with their keys as written (encoding/json matches struct fields
// case-insensitively), a repeated key is kept and marked (encoding/json lets the last one win
// silently), and a string says whether it held an unpaired UTF-16 surrogate escape.
//
// It is the one strict JSON reader of the server. Package toolresults checks /chat/resume
// bodies with it, package runtimelock lock overlays, and package routers the other request
// bodies. It imports nothing but the standard library, so every package may use it.
//
// Parse accepts exactly one value (RFC 8259) surrounded by optional white space and refuses
// everything else with a *SyntaxError at a byte offset: invalid UTF-8 anywhere, anything after
// the value (a second value, a stray "}" or "]"), NaN, Infinity, comments, single quotes,
// trailing commas, control characters in strings, and documents deeper or larger than the
// caller's Limits. LineCol turns an offset into a line and column for a person. The error's
// Code says what went wrong; Code.Msg words it as Python's json module does, which is what
// FastAPI's clients read in a 422.
//
// Parse does not decide what a repeated key means (Member.Dup marks it; each caller refuses it
// in its own error shape), convert numbers (a number keeps its literal), cap the size of the
// input (the caller reads at most what it allows; all work here is linear in the input), or
// know any schema.
package strictjson
