package linearizability

import (
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// numKeys is the number of keys the clients work on: few, so that
// operations on the same key overlap often.
const numKeys = 4

// keyName returns the storage key of key index i.
func keyName(i int) string { return fmt.Sprintf("ns/k%d", i) }

// entry is one key's state in the model: its value (the unique value of
// the write that set it; "" when the key is absent) and the UID it was
// created with (kept by updates).
type entry struct {
	value, uid string
}

// kvState is the model's state: every key's entry. It is comparable, so
// porcupine's default equality (==) applies.
type kvState [numKeys]entry

// opKind is what an operation does.
type opKind uint8

const (
	// opCreate creates the key with a value (its UID derives from the
	// value); AlreadyExists if it exists.
	opCreate opKind = iota
	// opUpdate sets an existing key's value (GuaranteedUpdate), keeping its
	// UID; NotFound if absent, Conflict if a UID precondition fails.
	opUpdate
	// opDelete deletes an existing key; NotFound and Conflict as opUpdate.
	opDelete
	// opGet is a consistent Get of one key through the cache.
	opGet
	// opList is a consistent GetList of all keys through the cache.
	opList
)

// kvInput is an operation's input.
type kvInput struct {
	kind opKind
	key  int
	// value is the value a create or update writes (unique in the run).
	value string
	// precondUID, if not "", is a UID precondition of an update or delete.
	precondUID string
}

// outcome is how an operation ended.
type outcome uint8

const (
	// outOK: the operation succeeded.
	outOK outcome = iota
	// outNotFound: a get found no key (a successful read), or an update or
	// delete failed because the key was absent.
	outNotFound
	// outAlreadyExists: a create failed because the key existed.
	outAlreadyExists
	// outConflict: an update or delete failed its UID precondition.
	outConflict
	// outUnknown: a write failed in a way that does not tell whether it
	// took effect (etcd unavailable, timeout). Such an operation is
	// recorded with Return = math.MaxInt64: it may take effect at any
	// point after its call, or never, which porcupine expresses by
	// linearizing it last.
	outUnknown
)

// kvOutput is an operation's result.
type kvOutput struct {
	result outcome
	// entry is, for a successful get, the key's value and UID; for a
	// successful delete, the state it deleted; for a successful create or
	// update, the state it wrote.
	entry entry
	// list is, for a successful list, every key's state.
	list kvState
}

// uidFor is the UID a create with value v gives the object.
func uidFor(v string) string { return "uid-" + v }

// allowed reports whether a UID precondition holds for e.
func allowed(e entry, precondUID string) bool {
	return precondUID == "" || e.uid == precondUID
}

// step is the sequential specification of the key-value store as the
// clients see it through the cache. Reads never change the state. Writes
// change it when they succeed; a definite failure is legal only in a state
// that explains it (AlreadyExists: the key exists; NotFound: it is absent;
// Conflict: it exists with another UID); a write of unknown outcome is
// always legal and does what it would do in the state it is linearized
// in (linearizing it after everything else stands for "never happened").
func step(st kvState, in kvInput, out kvOutput) (bool, kvState) {
	if in.kind == opList {
		return out.result == outOK && out.list == st, st
	}
	cur := st[in.key]
	exists := cur.value != ""
	switch in.kind {
	case opGet:
		switch out.result {
		case outOK:
			return exists && out.entry == cur, st
		case outNotFound:
			return !exists, st
		}
		return false, st
	case opCreate:
		written := entry{value: in.value, uid: uidFor(in.value)}
		switch out.result {
		case outOK:
			if exists || out.entry != written {
				return false, st
			}
		case outAlreadyExists:
			return exists, st
		case outUnknown:
			if exists {
				return true, st
			}
		default:
			return false, st
		}
		st[in.key] = written
		return true, st
	case opUpdate, opDelete:
		next := entry{}
		if in.kind == opUpdate {
			next = entry{value: in.value, uid: cur.uid}
		}
		switch out.result {
		case outOK:
			if !exists || !allowed(cur, in.precondUID) {
				return false, st
			}
			if in.kind == opUpdate && out.entry != next || in.kind == opDelete && out.entry != cur {
				return false, st
			}
		case outNotFound:
			return !exists, st
		case outConflict:
			return exists && !allowed(cur, in.precondUID), st
		case outUnknown:
			if !exists || !allowed(cur, in.precondUID) {
				return true, st
			}
		default:
			return false, st
		}
		st[in.key] = next
		return true, st
	}
	return false, st
}

// kvModel is the porcupine model of step. There is no partition function:
// a list reads every key, so the history cannot be split by key.
var kvModel = porcupine.Model{
	Init: func() any { return kvState{} },
	Step: func(state, input, output any) (bool, any) {
		return step(state.(kvState), input.(kvInput), output.(kvOutput))
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		for _, e := range state.(kvState) {
			h.Write([]byte(e.value))
			h.Write([]byte{0})
			h.Write([]byte(e.uid))
			h.Write([]byte{0})
		}
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		return describeOp(input.(kvInput), output.(kvOutput))
	},
	DescribeState: func(state any) string { return describeState(state.(kvState)) },
}

func describeEntry(e entry) string {
	if e.value == "" {
		return "absent"
	}
	return fmt.Sprintf("%s (%s)", e.value, e.uid)
}

func describeState(st kvState) string {
	var parts []string
	for i, e := range st {
		if e.value != "" {
			parts = append(parts, fmt.Sprintf("k%d=%s", i, describeEntry(e)))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (o outcome) String() string {
	switch o {
	case outOK:
		return "ok"
	case outNotFound:
		return "NotFound"
	case outAlreadyExists:
		return "AlreadyExists"
	case outConflict:
		return "Conflict"
	case outUnknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

func describeOp(in kvInput, out kvOutput) string {
	pre := ""
	if in.precondUID != "" {
		pre = ", uid=" + in.precondUID
	}
	switch in.kind {
	case opCreate:
		return fmt.Sprintf("create(k%d=%s) -> %s", in.key, in.value, out.result)
	case opUpdate:
		return fmt.Sprintf("update(k%d=%s%s) -> %s", in.key, in.value, pre, out.result)
	case opDelete:
		if out.result == outOK {
			return fmt.Sprintf("delete(k%d%s) -> ok, was %s", in.key, pre, describeEntry(out.entry))
		}
		return fmt.Sprintf("delete(k%d%s) -> %s", in.key, pre, out.result)
	case opGet:
		if out.result == outOK {
			return fmt.Sprintf("get(k%d) -> %s", in.key, describeEntry(out.entry))
		}
		return fmt.Sprintf("get(k%d) -> %s", in.key, out.result)
	case opList:
		return "list() -> " + describeState(out.list)
	}
	return fmt.Sprintf("%v -> %v", in, out)
}

// TestModel checks the model on small histories, so that the
// linearizability test cannot pass because the model accepts anything.
func TestModel(t *testing.T) {
	a := entry{value: "a", uid: uidFor("a")}
	b := entry{value: "b", uid: a.uid}
	create := kvInput{kind: opCreate, key: 0, value: "a"}
	update := kvInput{kind: opUpdate, key: 0, value: "b"}
	get := kvInput{kind: opGet, key: 0}
	list := kvInput{kind: opList}
	op := func(client int, in kvInput, out kvOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	listOf := func(e entry) kvOutput { var st kvState; st[0] = e; return kvOutput{list: st} }
	tests := []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"read after acknowledged write", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(1, get, kvOutput{entry: a}, 20, 30),
		}, true},
		{"stale read after acknowledged write", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(1, get, kvOutput{result: outNotFound}, 20, 30),
		}, false},
		{"stale list after acknowledged update", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(0, update, kvOutput{entry: b}, 11, 20),
			op(1, list, listOf(a), 21, 30),
		}, false},
		{"concurrent read may see either state", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(0, update, kvOutput{entry: b}, 11, 30),
			op(1, list, listOf(a), 20, 25),
			op(2, get, kvOutput{entry: b}, 21, 26),
		}, true},
		{"reads must not go back in time", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(0, update, kvOutput{entry: b}, 11, 50),
			op(1, get, kvOutput{entry: b}, 20, 25),
			op(2, list, listOf(a), 30, 35),
		}, false},
		{"write of unknown outcome that happened", []porcupine.Operation{
			op(0, create, kvOutput{result: outUnknown}, 0, math.MaxInt64),
			op(1, get, kvOutput{entry: a}, 20, 30),
		}, true},
		{"write of unknown outcome that did not happen", []porcupine.Operation{
			op(0, create, kvOutput{result: outUnknown}, 0, math.MaxInt64),
			op(1, get, kvOutput{result: outNotFound}, 20, 30),
			op(1, get, kvOutput{result: outNotFound}, 40, 50),
		}, true},
		{"write of unknown outcome seen, then unseen", []porcupine.Operation{
			op(0, create, kvOutput{result: outUnknown}, 0, math.MaxInt64),
			op(1, get, kvOutput{entry: a}, 20, 30),
			op(1, get, kvOutput{result: outNotFound}, 40, 50),
		}, false},
		{"AlreadyExists needs the key", []porcupine.Operation{
			op(0, create, kvOutput{result: outAlreadyExists}, 0, 10),
		}, false},
		{"NotFound update leaves the state", []porcupine.Operation{
			op(0, update, kvOutput{result: outNotFound}, 0, 10),
			op(1, list, kvOutput{}, 20, 30),
		}, true},
		{"Conflict needs another UID", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(0, kvInput{kind: opDelete, key: 0, precondUID: a.uid}, kvOutput{result: outConflict}, 20, 30),
		}, false},
		{"delete returns the deleted state", []porcupine.Operation{
			op(0, create, kvOutput{entry: a}, 0, 10),
			op(0, kvInput{kind: opDelete, key: 0, precondUID: "uid-other"}, kvOutput{result: outConflict}, 20, 30),
			op(0, kvInput{kind: opDelete, key: 0, precondUID: a.uid}, kvOutput{entry: a}, 40, 50),
			op(1, get, kvOutput{result: outNotFound}, 60, 70),
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(kvModel, tc.history); got != tc.want {
				t.Fatalf("CheckOperations = %v, want %v", got, tc.want)
			}
		})
	}
}
