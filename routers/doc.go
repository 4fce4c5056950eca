// Package routers is the HTTP API: echo construction, the one route table (routes.go), thin
// handlers, CORS, request logging and metrics, and the one place where errors become status
// codes and the bodies the widget parses (errors.go).
//
// Everything a handler serves was computed when the communities were loaded: the public
// config of each community (both with and without its client tools, for the live kill
// switch), its verified wheels and its logo. A reload builds a new catalog and swaps it in
// atomically, so a request sees either the old communities or the new ones, never a mix.
//
// Echo types never leave this package. It does not decode configs, verify wheels or run code;
// it calls the packages that do.
package routers
