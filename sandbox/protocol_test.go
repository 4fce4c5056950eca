package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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

// TestFrameRunData: a run frame's attached files cross as raw frames (empty ones, several, one
// larger than a JSON frame could carry in base64) and come back as Request.Data, with the
// stream in step for the frames after them.
func TestFrameRunData(t *testing.T) {
	big := make([]byte, 60<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	reqs := []Request{
		{Source: "print(1)"},
		{Source: "pass", Data: map[string][]byte{"empty.txt": {}}},
		{Source: "pass", Session: "s", Data: map[string][]byte{"a.csv": []byte("x,y\n1,2\n"), "b.json": []byte(`{}`), "z.bin": {0, 1, 2}, "e": {}}},
		{Source: "pass", Data: map[string][]byte{"big.bin": big}},
	}
	pr, pw := io.Pipe() // no buffer of the whole stream: it is read as it is written
	go func() {
		for i, req := range reqs {
			files, err := announceData(req.Data)
			if err == nil {
				err = writeRun(pw, uint64(i+1), req, files)
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(writeFrame(pw, &frame{Type: frameCancel, ID: 9}))
	}()
	for i, want := range reqs {
		got, err := readFrame(pr)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got.Type != frameRun || got.ID != uint64(i+1) || got.Data != nil || got.Request == nil {
			t.Fatalf("run %d: got %+v", i, got)
		}
		if len(got.Request.Data) != len(want.Data) {
			t.Fatalf("run %d: %d files, want %d", i, len(got.Request.Data), len(want.Data))
		}
		for name, b := range want.Data {
			if g, ok := got.Request.Data[name]; !ok || !bytes.Equal(g, b) {
				t.Errorf("run %d: file %q: %d bytes (present %v), want %d", i, name, len(g), ok, len(b))
			}
		}
		got.Request.Data, want.Data = nil, nil
		if !reflect.DeepEqual(*got.Request, want) {
			t.Errorf("run %d: request %+v, want %+v", i, *got.Request, want)
		}
	}
	if f, err := readFrame(pr); err != nil || f.Type != frameCancel || f.ID != 9 {
		t.Fatalf("the frame after the files: %+v, %v", f, err)
	}
	if _, err := readFrame(pr); err != io.EOF {
		t.Errorf("at the end: err = %v, want io.EOF", err)
	}
}

// rawFrame is a raw frame of a hand-built stream: its length field and its bytes.
type rawFrame struct {
	n    uint32
	body []byte
}

// dataStream is f as a JSON frame (announcement and all) followed by raws.
func dataStream(t *testing.T, f *frame, raws ...rawFrame) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeJSON(&buf, f); err != nil {
		t.Fatal(err)
	}
	for _, r := range raws {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], r.n)
		buf.Write(hdr[:])
		buf.Write(r.body)
	}
	return buf.Bytes()
}

// TestFrameDataBounds: every attached-files message out of bounds or out of step is refused,
// before the reader allocates what it announces.
func TestFrameDataBounds(t *testing.T) {
	run := func(files ...dataFile) *frame {
		return &frame{Type: frameRun, ID: 1, Request: &Request{Source: "pass"}, Data: files}
	}
	raw := func(s string) rawFrame { return rawFrame{uint32(len(s)), []byte(s)} }
	many := make([]dataFile, maxDataFiles+1)
	for i := range many {
		many[i] = dataFile{Name: fmt.Sprintf("f%d", i)}
	}
	var huge []dataFile // each within the per-file bound, too many bytes in all
	for i := range int(maxDataBytes/maxDataFileBytes) + 1 {
		huge = append(huge, dataFile{Name: fmt.Sprintf("h%d", i), Bytes: maxDataFileBytes})
	}
	isBad := func(err error) bool { return errors.Is(err, errBadData) }
	isCut := func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }
	for _, tc := range []struct {
		name  string
		input []byte
		want  func(error) bool
	}{
		{"shorter than announced", dataStream(t, run(dataFile{"a.csv", 4}), raw("abc")), isBad},
		{"longer than announced", dataStream(t, run(dataFile{"a.csv", 2}), raw("abc")), isBad},
		{"oversize raw frame", dataStream(t, run(dataFile{"a.csv", 1}), rawFrame{n: math.MaxUint32}), isBad},
		{"oversize announcement", dataStream(t, run(dataFile{"a.csv", maxDataFileBytes + 1})), isBad},
		{"negative size", dataStream(t, run(dataFile{"a.csv", -1})), isBad},
		{"too much in all", dataStream(t, run(huge...)), isBad},
		{"too many files", dataStream(t, run(many...)), isBad},
		{"dotdot path", dataStream(t, run(dataFile{"../x.csv", 1}), raw("x")), isBad},
		{"slash", dataStream(t, run(dataFile{"a/b.csv", 1}), raw("x")), isBad},
		{"dot", dataStream(t, run(dataFile{".", 1}), raw("x")), isBad},
		{"dotdot", dataStream(t, run(dataFile{"..", 1}), raw("x")), isBad},
		{"empty name", dataStream(t, run(dataFile{"", 1}), raw("x")), isBad},
		{"long name", dataStream(t, run(dataFile{strings.Repeat("a", 129), 1}), raw("x")), isBad},
		{"space", dataStream(t, run(dataFile{"a b.csv", 1}), raw("x")), isBad},
		{"twice", dataStream(t, run(dataFile{"a.csv", 1}, dataFile{"a.csv", 1}), raw("x"), raw("y")), isBad},
		{"no raw frame", dataStream(t, run(dataFile{"a.csv", 3})), isCut},
		{"second raw frame missing", dataStream(t, run(dataFile{"a.csv", 1}, dataFile{"b.csv", 1}), raw("x")), isCut},
		{"cut raw header", append(dataStream(t, run(dataFile{"a.csv", 3})), 0, 0), isCut},
		{"cut raw body", dataStream(t, run(dataFile{"a.csv", 3}), rawFrame{3, []byte("ab")}), isCut},
		{"on a result frame", dataStream(t, &frame{Type: frameResult, ID: 1, Result: &Result{}, Data: []dataFile{{"a.csv", 1}}}, raw("x")), isBad},
		{"on a run without a request", dataStream(t, &frame{Type: frameRun, ID: 1, Data: []dataFile{{"a.csv", 1}}}, raw("x")), isBad},
		{"base64 in the JSON", dataStream(t, &frame{Type: frameRun, ID: 1, Request: &Request{Data: map[string][]byte{"a.csv": []byte("x")}}}), isBad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := readFrame(bytes.NewReader(tc.input))
			if !tc.want(err) {
				t.Errorf("readFrame = %+v, %v", f, err)
			}
		})
	}

	// The writer refuses what a reader would, before it writes anything.
	for name, data := range map[string]map[string][]byte{
		"bad name": {"../x.csv": []byte("x")},
		"too many": func() map[string][]byte {
			m := map[string][]byte{}
			for i := range maxDataFiles + 1 {
				m[fmt.Sprint(i)] = nil
			}
			return m
		}(),
		"dot": {".": nil},
	} {
		if files, err := announceData(data); !isBad(err) {
			t.Errorf("%s: announceData = %v, %v", name, files, err)
		}
	}
	req := Request{Source: "pass", Data: map[string][]byte{"a.csv": []byte("x")}}
	if err := writeFrame(io.Discard, &frame{Type: frameRun, ID: 1, Request: &req}); !isBad(err) {
		t.Errorf("writeFrame with Data in the Request: err = %v", err)
	}
	if err := writeRun(io.Discard, 1, req, nil); !isBad(err) {
		t.Errorf("writeRun with files it does not announce: err = %v", err)
	}
	if err := writeRun(io.Discard, 1, req, []dataFile{{"a.csv", 2}}); !isBad(err) {
		t.Errorf("writeRun with a wrong announcement: err = %v", err)
	}
}

// FuzzReadFrame: whatever the stream, readFrame does not panic, and what it accepts is in
// bounds and survives being written again.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x10{\"type\":\"ready\"}"))
	var buf bytes.Buffer
	req := Request{Source: "pass", Data: map[string][]byte{"a.csv": []byte("x,y\n"), "e": {}}}
	files, _ := announceData(req.Data)
	_ = writeRun(&buf, 1, req, files)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := readFrame(bytes.NewReader(in))
		if err != nil {
			return
		}
		if fr.Data != nil {
			t.Fatalf("a returned frame still announces files: %+v", fr.Data)
		}
		if fr.Request == nil || fr.Request.Data == nil {
			return
		}
		files, err := announceData(fr.Request.Data)
		if err != nil {
			t.Fatalf("accepted files a writer refuses: %v", err)
		}
		var out bytes.Buffer
		if err := writeRun(&out, fr.ID, *fr.Request, files); err != nil {
			t.Fatal(err)
		}
		back, err := readFrame(&out)
		if err != nil || !reflect.DeepEqual(back.Request.Data, fr.Request.Data) {
			t.Fatalf("written again: %v, %v", back, err)
		}
	})
}

// TestWorkerFramesCarryNoData: the pool's side refuses a frame from a worker that announces
// files, before reading (or allocating for) any of them.
func TestWorkerFramesCarryNoData(t *testing.T) {
	var b bytes.Buffer
	body := `{"type":"run","id":1,"request":{},"data":[{"name":"a","bytes":104857600}]}`
	_ = binary.Write(&b, binary.BigEndian, uint32(len(body)))
	b.WriteString(body)
	_ = binary.Write(&b, binary.BigEndian, uint32(104857600)) // then nothing: a stall
	raw := b.Bytes()
	if _, err := readWorkerFrame(bytes.NewReader(raw)); !errors.Is(err, errBadData) {
		t.Errorf("readWorkerFrame: %v, want errBadData", err)
	}
	if _, err := readFrame(bytes.NewReader(raw)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("readFrame of a cut data frame: %v, want io.ErrUnexpectedEOF", err)
	}
}
