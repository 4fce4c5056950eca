package ingest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestParseMatlab(t *testing.T) {
	for _, tc := range []struct {
		name, file, src string
		want            []MatlabSymbol
	}{
		{"above, the reference's rule", "pop_loadset.m", "% POP_LOADSET Load a dataset.\n%   Usage: EEG = pop_loadset(file)\nfunction EEG = pop_loadset(file)\nEEG = [];\n",
			[]MatlabSymbol{{"pop_loadset", "function", 1, "POP_LOADSET Load a dataset.\n  Usage: EEG = pop_loadset(file)"}}},
		{"below, MathWorks' help", "f.m", "function [a, b] = addme(x, y)\n%ADDME Add two values.\n%   [A, B] = ADDME(X, Y)\n\n% not help\na = x + y;\n",
			[]MatlabSymbol{{"addme", "function", 1, "ADDME Add two values.\n  [A, B] = ADDME(X, Y)"}}},
		{"above and below", "g.m", "\n% Copyright 2024 the authors.\n\nfunction out = g(in)\n% G Doubles.\nout = 2*in;\n",
			[]MatlabSymbol{{"g", "function", 2, "Copyright 2024 the authors.\n\nG Doubles."}}},
		{"blank lines inside the block are skipped", "h.m", "%% H\n% First.\n\n%%% Second.\n\nfunction h\nend\n",
			[]MatlabSymbol{{"h", "function", 1, "H\nFirst.\nSecond."}}},
		{"the forms of a function line", "forms.m",
			"function[a]=k(x)\n% K.\nend\n\nfunction a = m(x) % trailing comment\n% M.\nend\n\nfunction noargs\n% N.\nend\n" +
				"  function [x,y,...\n% not a function line: its name is on the next line\n",
			[]MatlabSymbol{{"k", "function", 1, "K."}, {"m", "function", 5, "M."}, {"noargs", "function", 9, "N."}}},
		{"a block under a function line is that function's", "two.m",
			"function one()\n% ONE help.\n\n% TWO help.\nfunction two()\nend\n",
			[]MatlabSymbol{{"one", "function", 1, "ONE help."}, {"two", "function", 4, "TWO help."}}},
		{"only the other function's help above", "three.m", "function a()\n% A help.\nfunction b()\nx = 1;\n",
			[]MatlabSymbol{{"a", "function", 1, "A help."}}},
		{"a script", "run_all.m", "\n% RUN_ALL Runs everything.\n\n% In order.\nx = 1;\n% not help\n",
			[]MatlabSymbol{{"run_all", "script", 1, "RUN_ALL Runs everything.\nIn order."}}},
		{"functions without help make it a script", "lib/helpers.m", "% HELPERS A script of helpers.\nx = 1;\nfunction y = f(x)\ny = x;\nend\n",
			[]MatlabSymbol{{"helpers", "script", 1, "HELPERS A script of helpers."}}},
		{"nothing documented", "bare.m", "x = 1;\nfunction y = f(x)\ny = x;\nend\n", nil},
		{"same name twice keeps the first", "dup.m", "% First f.\nfunction f\nend\n% Second f.\nfunction f\nend\n",
			[]MatlabSymbol{{"f", "function", 1, "First f."}}},
		{"class methods and accessors", "Thing.m",
			"classdef Thing < handle\n  methods\n    % Make a Thing.\n    function obj = Thing(x)\n    end\n    function v = get.Value(obj)\n      % The value.\n    end\n  end\nend\n",
			[]MatlabSymbol{{"Thing", "function", 3, "Make a Thing."}, {"get.Value", "function", 6, "The value."}}},
		{"CRLF and Windows-1252", "w.m", "% Caf\xe9 \x93quoted\x94.\r\nfunction w\r\nend\r\n",
			[]MatlabSymbol{{"w", "function", 1, "Café “quoted”."}}},
		{"not a function line", "notfunc.m", "% Help.\nfunctionality = 3;\nmyfunction(2)\n",
			[]MatlabSymbol{{"notfunc", "script", 1, "Help."}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ParseMatlab(tc.file, []byte(tc.src))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseMatlabCaps(t *testing.T) {
	long := strings.Repeat("% "+strings.Repeat("x", 99)+"\n", 200) + "function f\n"
	got := ParseMatlab("f.m", []byte(long))
	if len(got) != 1 || utf8.RuneCountInString(got[0].Docstring) != 10000 {
		t.Errorf("docstring of %d characters, want the 10,000 cap", utf8.RuneCountInString(got[0].Docstring))
	}
}

func FuzzParseMatlab(f *testing.F) {
	f.Add("% H\nfunction [a,b] = f(x)\n% below\nend\n")
	f.Add("function one()\n% ONE\n\n% TWO\nfunction two()\n")
	f.Add("\n%{\nblock\n%}\n% script help\nx=1;\n")
	f.Add("% \xff\xfe\r\nfunction get.X(o)\r\n")
	f.Add("function\nfunction =\nfunction [ = f(\n%%%%%%\n")
	f.Fuzz(func(t *testing.T, src string) {
		syms := ParseMatlab("dir/name.m", []byte(src))
		lines := strings.Count(src, "\n") + 1
		seen := map[string]bool{}
		for _, s := range syms {
			if s.Docstring == "" || s.Docstring != strings.TrimSpace(s.Docstring) || !utf8.ValidString(s.Docstring) ||
				utf8.RuneCountInString(s.Docstring) > 10000 {
				t.Errorf("docstring %q", s.Docstring)
			}
			if s.Line < 1 || s.Line > lines {
				t.Errorf("line %d of %d", s.Line, lines)
			}
			if seen[s.Name] || s.Name == "" {
				t.Errorf("name %q", s.Name)
			}
			seen[s.Name] = true
			if s.Type == "script" && (len(syms) != 1 || s.Name != "name" || s.Line != 1) {
				t.Errorf("script %+v among %d", s, len(syms))
			}
		}
	})
}
