// A progress bar for long steps such as loading data.

package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressBar shows how far a long step (loading data) has come. On a
// terminal it redraws one line five times a second; otherwise (CI logs) it
// prints a line every ten seconds.
type progressBar struct {
	w        io.Writer
	terminal bool

	label string
	total int64
	done  atomic.Int64
	began time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	terminal := false
	if ok {
		if info, err := f.Stat(); err == nil {
			terminal = info.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progressBar{w: w, terminal: terminal}
}

// start shows a new bar of total steps.
func (p *progressBar) start(label string, total int) {
	p.label, p.total, p.began, p.stop = label, int64(total), time.Now(), make(chan struct{})
	p.done.Store(0)
	every := 10 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	p.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.draw(false)
			}
		}
	})
}

// add records n more steps done; safe for concurrent use.
func (p *progressBar) add(n int) { p.done.Add(int64(n)) }

// finish draws the final state and ends the line.
func (p *progressBar) finish() {
	close(p.stop)
	p.wg.Wait()
	p.draw(true)
}

const progressWidth = 30

func (p *progressBar) draw(final bool) {
	done := p.done.Load()
	filled := progressWidth
	if p.total > 0 {
		filled = int(min(done, p.total) * progressWidth / p.total)
	}
	line := fmt.Sprintf("%-28s [%s%s] %s/%s  %.1f s", p.label, strings.Repeat("#", filled), strings.Repeat("-", progressWidth-filled),
		FormatValue(Count, float64(done)), FormatValue(Count, float64(p.total)), time.Since(p.began).Seconds())
	switch {
	case p.terminal && final:
		fmt.Fprintf(p.w, "\r%s\n", line)
	case p.terminal:
		fmt.Fprintf(p.w, "\r%s", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}
