// Package limits holds the server's hard caps as typed constants with their units, and the
// bounds that a community's runtime.python.limits and runtime.python.uploads must stay within.
//
// It is the single source of truth for config (which bounds the per-community numbers at load),
// for toolresults (which refuses a posted result over a cap), for sandbox (the server's runtime:
// output, workspace) and for web (the demo page and the browser's runtime, which get these values
// in the page's config JSON rather than as copies of their own). It imports only the standard
// library so all of them can depend on it. It does not hold rate limiting or any state.
package limits
