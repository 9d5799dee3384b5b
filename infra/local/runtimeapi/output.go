package runtimeapi

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// maxLine bounds a line held back while waiting for its newline, so a
// process that never writes one cannot grow the buffer without end.
const maxLine = 64 << 10

// output writes a function's log lines, each prefixed with the name of the
// execution environment it came from and written whole, so lines of
// concurrent processes never interleave.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *output) line(prefix string, b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	buf := make([]byte, 0, len(prefix)+len(b)+1)
	buf = append(append(buf, prefix...), b...)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		buf = append(buf, '\n')
	}
	_, _ = o.w.Write(buf)
}

// logf writes a line of the local runtime's own.
func (o *output) logf(prefix, format string, args ...any) {
	o.line(prefix, []byte(fmt.Sprintf(format, args...)))
}

// writer returns a writer for one stream of one process.
func (o *output) writer(prefix string) *lineWriter { return &lineWriter{out: o, prefix: prefix} }

// lineWriter splits a stream into lines. os/exec calls Write from a single
// goroutine per stream, and flush only after the stream has ended.
type lineWriter struct {
	out    *output
	prefix string
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.out.line(l.prefix, l.buf[:i+1])
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	if len(l.buf) > maxLine {
		l.flush()
	}
	return len(p), nil
}

// flush writes a last line that has no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.out.line(l.prefix, l.buf)
		l.buf = l.buf[:0]
	}
}
