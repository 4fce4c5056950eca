// Package osa holds the Python source of the osa module, the one file that both runtimes run:
// the server's (package sandbox mounts it in every run, with its device-file transport) and the
// browser's (package web serves it to the demo page's worker, which installs its JavaScript
// bridge). It lives in a package of its own, with nothing but the file, so that sandbox can
// embed it without depending on the web page, and web without depending on sandbox.
package osa

import _ "embed"

// Module is the source of osa.py. A runtime executes it as the module osa and then calls
// its _install(transport) before any code runs; see the comment at the top of the file for
// what a transport is.
//
//go:embed osa.py
var Module []byte
