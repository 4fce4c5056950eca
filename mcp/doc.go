// Package mcp connects a community's MCP servers (extensions.mcp_servers) with the official Go
// SDK (github.com/modelcontextprotocol/go-sdk) and offers their tools to the chat.
//
// A Manager holds one client per configured server: a url server over the streamable HTTP
// transport (the URL of the serving deployment, with the headers named in headers_env read from
// the environment), a command server as a child process over stdio with an explicit minimal
// environment. Each client connects in the background and keeps trying with backoff, so an
// unreachable server never stops the start; its tools/list is read on connect and again on
// notifications/tools/list_changed. Apply replaces every client (start and reload), Close stops
// them all and kills the child processes.
//
// Tools are bound as "<server>__<tool>" (at most 64 characters of [A-Za-z0-9_-]), filtered by
// the community's mcp_tools_allow and mcp_tools_deny globs; a tool whose input schema is not a
// JSON Schema object is skipped and logged. Call checks the arguments against the schema (the
// SDK's own validator, github.com/google/jsonschema-go), bounds the call by the server's
// call_timeout_seconds, and clips the result text as a browser run's stdout is clipped.
package mcp
