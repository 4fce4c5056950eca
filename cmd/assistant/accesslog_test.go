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
		s, err := parseServe(tc.args, envWith("ASSISTANT_ACCESS_LOG", tc.env), io.Discard)
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

// TestFastPathFlag: --fast-path and ASSISTANT_FAST_PATH take on, off or a number of event
// loops, on by default; the flag wins; anything else stops the start.
func TestFastPathFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		env   string
		want  string // "on", "off", or "" for an error
		loops int    // 0: the default
	}{
		{nil, "", "on", 0},
		{[]string{"--fast-path", "off"}, "", "off", 0},
		{nil, "OFF", "off", 0},
		{[]string{"--fast-path", "on"}, "off", "on", 0},
		{[]string{"--fast-path", "maybe"}, "", "", 0},
		{nil, "1", "on", 1},
		{[]string{"--fast-path", " 4 "}, "", "on", 4},
		{[]string{"--fast-path", "0"}, "", "", 0},
		{[]string{"--fast-path", "-2"}, "", "", 0},
		{[]string{"--fast-path", "1025"}, "", "", 0},
		{[]string{"--fast-path", "99999999999999999999"}, "", "", 0},
	} {
		s, err := parseServe(tc.args, envWith("ASSISTANT_FAST_PATH", tc.env), io.Discard)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%v, env %q: no error", tc.args, tc.env)
			} else if len(err.Error()) > 120 {
				t.Errorf("%v: error of %d bytes", tc.args, len(err.Error()))
			}
			continue
		}
		if err != nil || s.fastPath != (tc.want == "on") || s.fastLoops != tc.loops {
			t.Errorf("%v, env %q: fast path %v with %d loops, %v; want %s with %d",
				tc.args, tc.env, s.fastPath, s.fastLoops, err, tc.want, tc.loops)
		}
	}
}

// envWith is a getenv that knows one variable.
func envWith(key, value string) func(string) string {
	return func(k string) string {
		if k == key {
			return value
		}
		return ""
	}
}
