package protojson

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// marshalsItself writes its own JSON, unknown to this package.
type marshalsItself string

func (marshalsItself) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

// textItself writes its own text (encoding/json quotes it).
type textItself struct{ A string }

func (textItself) MarshalText() ([]byte, error) { return []byte("x"), nil }

// ownProtobuf is a slice read from a message of its own, as ExtraValue.
type ownProtobuf []string

func (*ownProtobuf) Unmarshal([]byte) error { return nil }

// Inlined is inlined in TestForRefuses, with a name the outer struct has.
type Inlined struct {
	A string `json:"a" protobuf:"bytes,1,opt,name=a"`
}

// For refuses the types it cannot write exactly: a field of a type with
// a JSON or text marshaller of its own, omitzero where IsZero decides,
// JSON options and shapes it does not know, a field without a protobuf
// number, JSON names twice.
func TestForRefuses(t *testing.T) {
	for _, c := range []struct {
		typ  any
		want string
	}{
		{struct {
			A marshalsItself `json:"a" protobuf:"bytes,1,opt,name=a"`
		}{}, "JSON marshaller"},
		{struct {
			A textItself `json:"a" protobuf:"bytes,1,opt,name=a"`
		}{}, "JSON marshaller"},
		{struct {
			A map[string]marshalsItself `json:"a" protobuf:"bytes,1,rep,name=a"`
		}{}, "JSON marshaller"},
		{struct {
			A *metav1.Time `json:"a,omitzero" protobuf:"bytes,1,opt,name=a"`
		}{}, "IsZero"},
		{struct {
			A int64 `json:"a,string" protobuf:"varint,1,opt,name=a"`
		}{}, "json option"},
		{struct {
			A any `json:"a" protobuf:"bytes,1,opt,name=a"`
		}{}, "interface"},
		{struct {
			A int `json:"a" protobuf:"varint,1,opt,name=a"`
		}{}, "a int"},
		{struct {
			A time.Duration `json:"a"`
		}{}, "no protobuf tag"},
		{struct {
			A       string `json:"a" protobuf:"bytes,1,opt,name=a"`
			Inlined `json:",inline" protobuf:"bytes,2,opt,name=inline"`
		}{}, "twice"},
		{struct {
			A string `json:"a" protobuf:"bytes,1,opt,name=a"`
			B string `json:"b" protobuf:"bytes,1,opt,name=b"`
		}{}, "twice"},
		{struct {
			A [2]string `json:"a" protobuf:"bytes,1,opt,name=a"`
		}{}, "[2]string"},
		{struct {
			A ownProtobuf `json:"a" protobuf:"bytes,1,rep,name=a"`
		}{}, "protobuf encoding of its own"},
		{struct {
			A *ownProtobuf `json:"a" protobuf:"bytes,1,opt,name=a"`
		}{}, "protobuf encoding of its own"},
	} {
		_, err := For(reflect.TypeOf(c.typ))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%T: %v, want an error with %q", c.typ, err, c.want)
		}
	}
}
