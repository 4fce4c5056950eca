// Package mcp connects a community's MCP servers (extensions.mcp_servers) with the official Go
// SDK (github.com/modelcontextprotocol/go-sdk) and offers their tools to the chat.
//
// A Manager holds one client per configured server: a url server over the streamable HTTP
// transport (the URL of the serving deployment, with the headers named in headers_env read from
// the environment), a command server as a child process over stdio with an explicit minimal
// environment, in a process group of its own that ends with it. Each client connects in the
// background and keeps trying with backoff, so an unreachable server never stops the start; its
// tools/list is read on connect and again on notifications/tools/list_changed. Apply replaces
// every client (start and reload), Close stops them all and ends the child processes' groups.
//
// Tools are bound as "<server>__<tool>" (at most 64 characters of [A-Za-z0-9_-]), filtered by
// the community's mcp_tools_allow and mcp_tools_deny globs; a tool whose input schema is not a
// JSON Schema object, or is over MaxSchemaBytes, is skipped and logged. At most
// MaxToolsPerServer tools of a server are bound, each described to the model as third-party
// text of that server in at most MaxDescriptionChars. Call checks the arguments against the
// schema (the SDK's own validator, github.com/google/jsonschema-go), waits for one of the
// server's Options.MaxCallsInFlight places, bounds the call by the server's
// call_timeout_seconds, and clips the result text as a browser run's stdout is clipped.
//
// Whatever a server sends is read bounded: each message (a JSON value of a stdio child, however
// many lines it spans; an SSE event; any other HTTP body) at most MaxMessageBytes, past which
// reading stops with a *TooLargeError for the call it answers. A stdio child's connection ends
// with it, and the other calls under way on it fail with a *ResetError, which may be retried;
// when the message's first bytes do not name its call (a server that writes the id after the
// result), every call under way is told it was too large. A url
// server's requests carry the headers of headers_env to its own origin only, and follow
// redirects only within that origin (a *RedirectError otherwise).
package mcp
