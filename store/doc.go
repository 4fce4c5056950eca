// Package store keeps the state a conversation needs between requests, so that any replica can
// serve any request of a session: sessions and their history, the one parked browser call per
// session, the per-session turn lock, rate-limit counters and budget totals, and a session's
// files: those its server runs saved, those its reader attached, and the records of its runs
// (for the manifest and the export).
//
// One interface, two implementations: Memory (the default, one process) and Redis (several
// replicas share one Redis). Every key has a prefix and a TTL; the claim of a parked call is
// atomic in both, so a result is accepted at most once.
//
// It does not know what a message means (history entries are opaque JSON), so it neither caps
// nor trims a history (the caller enforces the 300-message limit); it never calls a model and
// never decides an HTTP status.
package store
