package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressBarPastItsTotal(t *testing.T) {
	var out bytes.Buffer
	p := newProgressBar(&out)
	p.start("seconds", 2)
	p.add(5) // a timed step that ran over
	p.finish()
	if line := out.String(); !strings.Contains(line, "[##############################] 5/2") {
		t.Errorf("%q", line)
	}
}
