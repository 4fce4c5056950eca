package main

import (
	"io"
	"testing"

	"github.com/osc-assistant/assistant/routers"
)

// TestAccessLogFlag: --access-log and ASSISTANT_ACCESS_LOG take on, off or a share; the flag
// wins; anything else stops the start.
func TestAccessLogFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string // what routers.ParseAccessLog makes of it, or "" for an error
	}{
		{nil, "", "on"},
		{[]string{"--access-log", "off"}, "", "off"},
		{nil, "off", "off"},
		{[]string{"--access-log", "on"}, "off", "on"},
		{[]string{"--access-log", "0.1"}, "", "0.1"},
		{[]string{"--access-log", "often"}, "", ""},
		{nil, "1.5", ""},
	} {
		getenv := func(k string) string {
			if k == "ASSISTANT_ACCESS_LOG" {
				return tc.env
			}
			return ""
		}
		s, err := parseServe(tc.args, getenv, io.Discard)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%v, env %q: no error", tc.args, tc.env)
			}
			continue
		}
		want, _ := routers.ParseAccessLog(tc.want)
		if err != nil || s.accessLog != want {
			t.Errorf("%v, env %q: %v, %v; want %v", tc.args, tc.env, s.accessLog, err, want)
		}
	}
}

// TestFastPathFlag: --fast-path and ASSISTANT_FAST_PATH take on or off, on by default; the
// flag wins; anything else stops the start.
func TestFastPathFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string // "on", "off", or "" for an error
	}{
		{nil, "", "on"},
		{[]string{"--fast-path", "off"}, "", "off"},
		{nil, "OFF", "off"},
		{[]string{"--fast-path", "on"}, "off", "on"},
		{[]string{"--fast-path", "maybe"}, "", ""},
		{nil, "1", ""},
	} {
		getenv := func(k string) string {
			if k == "ASSISTANT_FAST_PATH" {
				return tc.env
			}
			return ""
		}
		s, err := parseServe(tc.args, getenv, io.Discard)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%v, env %q: no error", tc.args, tc.env)
			}
			continue
		}
		if err != nil || s.fastPath != (tc.want == "on") {
			t.Errorf("%v, env %q: fast path %v, %v; want %s", tc.args, tc.env, s.fastPath, err, tc.want)
		}
	}
}
