// Package limits holds the server's hard caps as typed constants with their units, and the
// bounds that a community's runtime.python.limits must stay within.
//
// It is the single source of truth for config (which bounds the per-community numbers at load)
// and for toolresults (which refuses a posted result over a cap). It imports only the standard
// library so both can depend on it. It does not hold rate limiting or any state.
package limits
