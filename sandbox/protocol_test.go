package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []*frame{
		{Type: frameReady, Hello: &hello{PID: 7, SHA256: "ab", Python: "3.13.5", Mode: "fast"}},
		{Type: frameRun, ID: 1, Request: &Request{Source: "print('é\\x00')\n", Timeout: 2 * time.Second}},
		{Type: frameStart, ID: 1},
		{Type: frameResult, ID: 1, Result: &Result{Status: StatusOK, Stdout: "é\x00\n", Elapsed: time.Millisecond}},
		{Type: frameError, ID: 2, Error: "boom"},
		{Type: frameCancel, ID: 3},
	}
	for _, f := range in {
		if err := writeFrame(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range in {
		got, err := readFrame(&buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("frame %d: got %+v, want %+v", i, got, want)
		}
	}
	if _, err := readFrame(&buf); err != io.EOF {
		t.Errorf("after the last frame: err = %v, want io.EOF", err)
	}
}

func TestFrameBounds(t *testing.T) {
	hdr := func(n uint32) []byte {
		b := make([]byte, 4)
		binary.BigEndian.PutUint32(b, n)
		return b
	}
	for _, tc := range []struct {
		name  string
		input []byte
		want  func(error) bool
	}{
		{"too large", hdr(maxFrameBytes + 1), func(err error) bool { return errors.Is(err, errFrameTooLarge) }},
		{"cut header", []byte{0, 0}, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"cut body", append(hdr(10), `{"type"`...), func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"not JSON", append(hdr(3), "abc"...), func(err error) bool { return err != nil && strings.Contains(err.Error(), "decoding") }},
		{"no type", append(hdr(2), "{}"...), func(err error) bool { return err != nil && strings.Contains(err.Error(), "without a type") }},
		{"text", []byte("assistant dev (unknown)\n"), func(err error) bool { return errors.Is(err, errFrameTooLarge) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readFrame(bytes.NewReader(tc.input))
			if !tc.want(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
	big := &frame{Type: frameResult, Result: &Result{Stdout: strings.Repeat("x", maxFrameBytes)}}
	if err := writeFrame(io.Discard, big); !errors.Is(err, errFrameTooLarge) {
		t.Errorf("writing an oversized frame: err = %v", err)
	}
}

// TestRequestResultSurviveJSON guards the protocol against fields that JSON cannot carry: every
// field of Request and Result, filled with a non-zero value, must come back equal.
func TestRequestResultSurviveJSON(t *testing.T) {
	for _, v := range []any{&Request{}, &Result{}} {
		rv := reflect.ValueOf(v).Elem()
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if !fill(rv.Field(i), 0) {
				t.Errorf("%s.%s (%s): cannot check that it survives JSON; make it a JSON-friendly type or teach fill", rv.Type().Name(), f.Name, f.Type)
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T does not encode as JSON, so the worker protocol cannot carry it: %v", v, err)
		}
		back := reflect.New(rv.Type())
		if err := json.Unmarshal(b, back.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), rv.Interface()) {
			t.Errorf("%T changes in a JSON round trip:\n got %+v\nwant %+v", v, back.Elem().Interface(), rv.Interface())
		}
	}
}

// fill sets v to a non-zero value; false when it does not know how.
func fill(v reflect.Value, depth int) bool {
	if depth > 5 {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s\u00e9\n")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		if !fill(s.Index(0), depth+1) {
			return false
		}
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return false
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		if !fill(e, depth+1) {
			return false
		}
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !fill(p.Elem(), depth+1) {
			return false
		}
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return true
		}
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if !fill(v.Field(i), depth+1) {
				return false
			}
		}
	default:
		return false
	}
	return true
}
