// Package ingest fills each community's knowledge database (the knowledge package) from the
// outside sources its config names: GitHub issues and pull requests, papers (OpenAlex,
// Semantic Scholar, PubMed) and the works citing a community's DOIs, code docstrings, Discourse
// forums, Mailman archives, and FAQ entries generated from mailing-list threads
// (knowledge.md §6). Each type is a Source; the runner runs them one at a time per community and
// type (across replicas with a lease), publishes the database once per run, and the scheduler
// runs them from each sync.<type>.cron. Nothing a source fetches is trusted: every text is
// capped and stripped of HTML, every URL taken from a config goes through the knowledge
// package's address guard.
package ingest
