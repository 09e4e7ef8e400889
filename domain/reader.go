package domain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineLen is the longest import line Reader accepts by default.
const DefaultMaxLineLen = 4096

// Line is one non-skipped line of an import file.
type Line struct {
	// Num is the 1-based line number in the file.
	Num int
	// Raw is the line as read (without its end of line), cut to
	// DefaultMaxLineLen bytes for a line that was too long.
	Raw string
	// Entry is the parsed entry when Err is nil.
	Entry Entry
	// Err says why the line is invalid (an EInvalid *baton.Error), or nil.
	Err error
}

// Reader streams an import file line by line in constant memory: each line
// is parsed with ParseImportLine; blank, comment and header lines are
// skipped; a line longer than the limit is reported as invalid and the
// reader goes on with the next one. A UTF-8 byte order mark at the start is
// ignored, and lines may end in "\n" or "\r\n".
//
// bufio.Scanner is not used: after ErrTooLong it cannot resume, and an
// import must report a bad line, not abandon the file.
type Reader struct {
	br     *bufio.Reader
	maxLen int
	num    int
	line   Line
	err    error
}

// NewReader returns a Reader of r with lines of at most DefaultMaxLineLen
// bytes.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, DefaultMaxLineLen) }

// NewReaderSize returns a Reader of r with lines of at most maxLen bytes
// (DefaultMaxLineLen when maxLen < 16).
func NewReaderSize(r io.Reader, maxLen int) *Reader {
	if maxLen < 16 {
		maxLen = DefaultMaxLineLen
	}
	return &Reader{br: bufio.NewReaderSize(r, maxLen+2), maxLen: maxLen}
}

// Next advances to the next entry or invalid line and reports whether there
// is one; at the end of input or on a read error it returns false, and Err
// says which.
func (r *Reader) Next() bool {
	for r.err == nil {
		raw, tooLong, err := r.readLine()
		if err != nil && !(errors.Is(err, io.EOF) && (len(raw) > 0 || tooLong)) {
			if !errors.Is(err, io.EOF) {
				r.err = fmt.Errorf("read import line %d: %w", r.num+1, err)
			} else {
				r.err = io.EOF
			}
			return false
		}
		r.num++
		if tooLong {
			r.line = Line{Num: r.num, Raw: truncate(string(raw), r.maxLen), Err: invalid("line too long (over %d bytes)", r.maxLen)}
			return true
		}
		if r.num == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\uFEFF"))
		}
		e, perr := ParseImportLine(string(raw))
		if errors.Is(perr, ErrSkip) {
			continue
		}
		r.line = Line{Num: r.num, Raw: string(raw), Entry: e, Err: perr}
		return true
	}
	return false
}

// readLine returns the next line without its end of line. A line longer than
// maxLen is drained to its end and returned cut, with tooLong set.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	b, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		line = append([]byte(nil), b[:r.maxLen]...)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = r.br.ReadSlice('\n')
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return line, true, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) > r.maxLen {
		return append([]byte(nil), b[:r.maxLen]...), true, err
	}
	return b, false, err
}

// Line returns the line Next advanced to. It is valid until the next call
// to Next.
func (r *Reader) Line() Line { return r.line }

// Err returns the read error that stopped the Reader, or nil at a clean end
// of input.
func (r *Reader) Err() error {
	if errors.Is(r.err, io.EOF) {
		return nil
	}
	return r.err
}
