package server

import "net/http"

// serveOpenAPI is a placeholder until OpenAPI documents are served.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	writeError(w, notFoundPath(), nil, "")
}
