// Package driverbench compares the two pure-Go SQLite drivers on the knowledge store's
// workload: indexing 10,000 documentation sections into an FTS5 table kept by triggers,
// publishing the file with VACUUM INTO, opening it read-only, and bm25 searches with column
// weights. It is its own module so that the main module carries only the chosen driver.
//
// Run it with
//
//	cd knowledge/driverbench && go test -run '^$' -bench . -benchtime 3x -count 1
package driverbench
