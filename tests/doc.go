// Package tests holds end-to-end tests that build the assistant binary and drive it as an
// operator would: flags, environment, signals, and HTTP on loopback.
package tests
