package ha

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// numKeys is how many config maps a phase's clients write and read: few,
// so that operations on one key overlap often.
const numKeys = 3

// initialValue is every key's value when a phase starts.
const initialValue = "init"

// registers is the model's state: every key's value.
type registers [numKeys]string

// opKind is what a client operation does.
type opKind uint8

const (
	// opPut sets a key's value (an update without resourceVersion).
	opPut opKind = iota
	// opGet is a consistent get of one key (resourceVersion unset).
	opGet
	// opList is a consistent list of the phase's keys.
	opList
)

// input is an operation's input.
type input struct {
	kind opKind
	key  int
	// value is what a put writes: unique in the test.
	value string
}

// output is an operation's result: a get's value or a list's values.
// Failed reads are not recorded; a failed put is recorded with an unknown
// outcome (Return = MaxInt64, so porcupine may place it anywhere after
// its call, including never).
type output struct {
	value string
	list  registers
}

// registersModel is the sequential specification: puts set a value, reads
// see the current ones.
var registersModel = porcupine.Model{
	Init: func() any {
		var st registers
		for i := range st {
			st[i] = initialValue
		}
		return st
	},
	Step: func(state, in, out any) (bool, any) {
		st, i, o := state.(registers), in.(input), out.(output)
		switch i.kind {
		case opPut:
			st[i.key] = i.value
			return true, st
		case opGet:
			return o.value == st[i.key], st
		default:
			return o.list == st, st
		}
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(input), out.(output)
		switch i.kind {
		case opPut:
			return fmt.Sprintf("put(k%d, %s)", i.key, i.value)
		case opGet:
			return fmt.Sprintf("get(k%d) -> %s", i.key, o.value)
		default:
			return fmt.Sprintf("list() -> %v", o.list)
		}
	},
}

// history records the operations of a phase for porcupine.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// acknowledged counts the puts that succeeded, unknown those that
	// failed.
	acknowledged, unknown int
}

func newHistory() *history { return &history{start: time.Now()} }

// now is the time since the phase started, in nanoseconds (monotonic).
func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records an operation that returned (call and ret from now).
func (h *history) add(client int, in input, out output, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in.kind == opPut {
		h.acknowledged++
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
}

// addUnknown records a put whose outcome is unknown.
func (h *history) addUnknown(client int, in input, call int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unknown++
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: output{}, Call: call, Return: math.MaxInt64})
}

// operations returns what was recorded.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// TestModelFindsStaleReadsAndLostWrites checks the checker: a read that
// misses an acknowledged write, or a list older than a get before it, is
// not linearizable; a put of unknown outcome may or may not have happened.
func TestModelFindsStaleReadsAndLostWrites(t *testing.T) {
	put := func(client int, key int, value string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: input{kind: opPut, key: key, value: value}, Output: output{}, Call: call, Return: ret}
	}
	get := func(client int, key int, value string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: input{kind: opGet, key: key}, Output: output{value: value}, Call: call, Return: ret}
	}
	list := func(client int, values registers, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: input{kind: opList}, Output: output{list: values}, Call: call, Return: ret}
	}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"read after acknowledged write", []porcupine.Operation{put(0, 0, "a", 0, 10), get(1, 0, "a", 20, 30)}, true},
		{"stale read after acknowledged write", []porcupine.Operation{put(0, 0, "a", 0, 10), get(1, 0, initialValue, 20, 30)}, false},
		{"list back in time after a get", []porcupine.Operation{put(0, 1, "a", 0, 10), get(1, 1, "a", 5, 15),
			list(2, registers{initialValue, initialValue, initialValue}, 20, 30)}, false},
		{"concurrent read sees either", []porcupine.Operation{put(0, 0, "a", 0, 10), get(1, 0, initialValue, 5, 8), get(2, 0, "a", 6, 9)}, true},
		{"unknown put that happened", []porcupine.Operation{put(0, 2, "a", 0, math.MaxInt64), get(1, 2, "a", 20, 30)}, true},
		{"unknown put that did not happen", []porcupine.Operation{put(0, 2, "a", 0, math.MaxInt64), get(1, 2, initialValue, 20, 30)}, true},
		{"lost write: seen, then unseen", []porcupine.Operation{put(0, 2, "a", 0, 10), get(1, 2, "a", 20, 30), get(1, 2, initialValue, 40, 50)}, false},
	} {
		if got := porcupine.CheckOperations(registersModel, tc.history); got != tc.want {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
