// Package config owns community definitions: it finds every communities/<id>/config.yaml,
// decodes it strictly, fills defaults, checks every rule of the contract (spec config.md §2–§6),
// and reports every mistake at once as file:line:col: path: message.
//
// Loading runs in phases and stops between them, because errors of a later phase are mostly
// noise caused by an earlier one:
//
//  1. read and syntax (yaml.v3 parses into a node tree; one syntax error ends that file);
//  2. shape (a strict walk of the node tree into typed structs: unknown keys, wrong types,
//     duplicate keys, missing required fields);
//  3. per-file meaning (validator tags, then hand-written rules);
//  4. across files and outside the YAML (folder name = id, unique ids, lockfile inside the
//     community folder, the lock overlay and the Pyodide distribution, prelude compile checks).
//
// It also resolves per-deployment values and reads the client-tool kill switch.
//
// It does not serve anything, does not import echo, redis or wazero, and does not run Python:
// the prelude compile check is a one-method interface (SyntaxChecker) that the caller supplies.
package config
