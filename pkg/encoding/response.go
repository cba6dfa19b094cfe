// WriteJSON and WriteRaw: a JSON response of a value or of ready bytes.

package encoding

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	WriteRaw(w, code, data)
}

// WriteRaw writes ready JSON bytes.
func WriteRaw(w http.ResponseWriter, code int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}
