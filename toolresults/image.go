package toolresults

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// imageFormats maps each accepted media type (Anthropic's set, config.md §8.1) to the name used
// in messages.
var imageFormats = map[string]string{
	"image/jpeg": "JPEG",
	"image/png":  "PNG",
	"image/gif":  "GIF",
	"image/webp": "WebP",
}

// base64Alphabet is 1 for the 64 characters of the standard alphabet and 0 for every other
// byte.
var base64Alphabet = func() (t [256]byte) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		t[c] = 1
	}
	return t
}()

// base64Len checks s as Python's b64decode(s, validate=True) does and returns the decoded
// length without decoding: only the standard alphabet, length a multiple of four, and "=" only
// as one or two final padding characters. Whitespace of any kind (which Go's decoders skip) and
// the URL-safe "-_" are refused. Like Python, and unlike Go's Strict mode, it does not insist
// that the unused bits before the padding are zero. It allocates nothing.
func base64Len(s string) (int, bool) {
	if len(s)%4 != 0 {
		return 0, false
	}
	pad := 0
	if strings.HasSuffix(s, "==") {
		pad = 2
	} else if strings.HasSuffix(s, "=") {
		pad = 1
	}
	// Branch-free: AND the table entries together, eight at a time.
	t := &base64Alphabet
	all := byte(1)
	body := s[:len(s)-pad]
	for ; len(body) >= 8; body = body[8:] {
		all &= t[body[0]] & t[body[1]] & t[body[2]] & t[body[3]] & t[body[4]] & t[body[5]] & t[body[6]] & t[body[7]]
	}
	for i := 0; i < len(body); i++ {
		all &= t[body[i]]
	}
	if all == 0 {
		return 0, false
	}
	return len(s)/4*3 - pad, true
}

// headerError says what is wrong with an image's bytes. Its text follows "Value error, ".
type headerError struct{ msg string }

func (e *headerError) Error() string { return e.msg }

func headerErrorf(format string, args ...any) error {
	return &headerError{msg: fmt.Sprintf(format, args...)}
}

// checkImageHeader reads just enough of the image in data (strict base64, already checked by
// base64Len, n decoded bytes) to learn its format and size, and compares them with what the
// result declared. It never decodes pixels and never holds the whole image: bytes are decoded
// as they are read, and the JPEG marker scan skips segments without keeping them.
func checkImageHeader(mime, data string, n, width, height int) error {
	r := bufio.NewReaderSize(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)), 512)
	head, _ := r.Peek(16)
	got := sniff(head)
	want := imageFormats[mime]
	if got != want {
		if got == "" {
			return headerErrorf("declared %s but the bytes are not a %s image", mime, want)
		}
		return headerErrorf("declared %s but the bytes are a %s image", mime, got)
	}
	var w, h int
	var err error
	switch got {
	case "PNG":
		w, h, err = pngSize(r)
	case "GIF":
		w, h, err = gifSize(r)
	case "WebP":
		w, h, err = webpSize(r, n)
	default:
		w, h, err = jpegSize(r)
	}
	if err != nil {
		return headerErrorf("the %s header cannot be read: %v", got, err)
	}
	if w != width || h != height {
		return headerErrorf("declared %dx%d but the image header says %dx%d", width, height, w, h)
	}
	return nil
}

// sniff names the format whose signature starts b, or "".
func sniff(b []byte) string {
	s := string(b)
	switch {
	case strings.HasPrefix(s, "\x89PNG\r\n\x1a\n"):
		return "PNG"
	case strings.HasPrefix(s, "\xff\xd8\xff"):
		return "JPEG"
	case strings.HasPrefix(s, "GIF87a"), strings.HasPrefix(s, "GIF89a"):
		return "GIF"
	case len(s) >= 12 && s[:4] == "RIFF" && s[8:12] == "WEBP":
		return "WebP"
	}
	return ""
}

var errShort = errors.New("the data ends inside the header")

func readFull(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, errShort
	}
	return b, nil
}

// pngSize reads the signature and the IHDR chunk, which the PNG specification requires to come
// first, and checks the chunk's CRC.
func pngSize(r io.Reader) (int, int, error) {
	b, err := readFull(r, 8+8+13+4)
	if err != nil {
		return 0, 0, err
	}
	chunk := b[8:]
	if binary.BigEndian.Uint32(chunk) != 13 || string(chunk[4:8]) != "IHDR" {
		return 0, 0, errors.New("the first chunk is not a 13-byte IHDR")
	}
	if crc32.ChecksumIEEE(chunk[4:21]) != binary.BigEndian.Uint32(chunk[21:25]) {
		return 0, 0, errors.New("the IHDR checksum is wrong")
	}
	w, h := binary.BigEndian.Uint32(chunk[8:]), binary.BigEndian.Uint32(chunk[12:])
	if w == 0 || h == 0 || w > 1<<31-1 || h > 1<<31-1 {
		return 0, 0, errors.New("IHDR gives an impossible size")
	}
	return int(w), int(h), nil
}

// gifSize reads the logical screen descriptor that follows the six-byte signature.
func gifSize(r io.Reader) (int, int, error) {
	b, err := readFull(r, 10)
	if err != nil {
		return 0, 0, err
	}
	return int(binary.LittleEndian.Uint16(b[6:])), int(binary.LittleEndian.Uint16(b[8:])), nil
}

// webpSize reads the RIFF header and the first chunk, which gives the canvas size: "VP8 "
// (lossy key frame header), "VP8L" (lossless header) or "VP8X" (extended format). n is the
// decoded length of the whole file.
func webpSize(r io.Reader, n int) (int, int, error) {
	b, err := readFull(r, 30)
	if err != nil {
		return 0, 0, err
	}
	riff := binary.LittleEndian.Uint32(b[4:])
	if int64(riff)+8 > int64(n) {
		return 0, 0, fmt.Errorf("the RIFF header promises %d bytes but there are %d", int64(riff)+8, n)
	}
	fourcc, size := string(b[12:16]), binary.LittleEndian.Uint32(b[16:])
	p := b[20:]
	switch fourcc {
	case "VP8 ":
		if size < 10 {
			return 0, 0, errors.New("the VP8 chunk is too short")
		}
		if p[0]&1 != 0 {
			return 0, 0, errors.New("the VP8 frame is not a key frame")
		}
		if p[3] != 0x9d || p[4] != 0x01 || p[5] != 0x2a {
			return 0, 0, errors.New("the VP8 start code is missing")
		}
		return int(binary.LittleEndian.Uint16(p[6:]) & 0x3fff), int(binary.LittleEndian.Uint16(p[8:]) & 0x3fff), nil
	case "VP8L":
		if size < 5 {
			return 0, 0, errors.New("the VP8L chunk is too short")
		}
		if p[0] != 0x2f {
			return 0, 0, errors.New("the VP8L signature is missing")
		}
		bits := binary.LittleEndian.Uint32(p[1:])
		if bits>>29 != 0 {
			return 0, 0, errors.New("the VP8L version is not 0")
		}
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, nil
	case "VP8X":
		if size < 10 {
			return 0, 0, errors.New("the VP8X chunk is too short")
		}
		le24 := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
		return le24(p[4:]) + 1, le24(p[7:]) + 1, nil
	}
	return 0, 0, fmt.Errorf("the first chunk is %q, not VP8, VP8L or VP8X", fourcc)
}

// jpegSize scans the marker segments after SOI up to the first frame header (SOF0..SOF15 other
// than DHT C4, JPG C8 and DAC CC) and reads its height and width. Segments before it are
// skipped by their length without being kept, so the scan is linear and bounded by the data.
func jpegSize(r *bufio.Reader) (int, int, error) {
	if _, err := r.Discard(2); err != nil { // SOI
		return 0, 0, errShort
	}
	for {
		c, err := r.ReadByte()
		if err != nil {
			return 0, 0, errors.New("the data ends before a frame header")
		}
		if c != 0xff {
			return 0, 0, fmt.Errorf("expected a marker, found byte 0x%02x", c)
		}
		m := byte(0xff)
		for m == 0xff { // fill bytes
			if m, err = r.ReadByte(); err != nil {
				return 0, 0, errors.New("the data ends before a frame header")
			}
		}
		switch {
		case m == 0x01 || m >= 0xd0 && m <= 0xd7: // TEM, RSTn: no length
			continue
		case m == 0x00 || m == 0xd8 || m == 0xd9 || m == 0xda:
			return 0, 0, fmt.Errorf("marker 0x%02x comes before a frame header", m)
		}
		lb, err := readFull(r, 2)
		if err != nil {
			return 0, 0, err
		}
		length := int(binary.BigEndian.Uint16(lb))
		if length < 2 {
			return 0, 0, fmt.Errorf("marker 0x%02x has a length of %d", m, length)
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			if length < 8 {
				return 0, 0, errors.New("the frame header is too short")
			}
			b, err := readFull(r, 5) // precision, height, width
			if err != nil {
				return 0, 0, err
			}
			return int(binary.BigEndian.Uint16(b[3:])), int(binary.BigEndian.Uint16(b[1:])), nil
		}
		if _, err := r.Discard(length - 2); err != nil {
			return 0, 0, errors.New("the data ends inside a marker segment")
		}
	}
}
