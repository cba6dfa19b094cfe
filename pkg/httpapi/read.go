// GET of one object and LIST of a collection, from the store (the watch
// cache), written as JSON or as a Table.

package httpapi

import (
	"errors"
	"net/http"

	"github.com/watchcache/watchcache/pkg/apistatus"
	"github.com/watchcache/watchcache/pkg/encoding"
	"github.com/watchcache/watchcache/pkg/object"
	"github.com/watchcache/watchcache/pkg/storage"
)

func (s *Server) get(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	obj, err := store.Get(r.Context(), req.key(), storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")})
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
		return
	}
	s.writeObject(w, req, http.StatusOK, obj)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, req *request, store storage.Interface) {
	p, aerr := parseListParams(r.URL.Query(), req.res, s.sharding)
	if aerr != nil {
		apistatus.Write(w, aerr, req.res.Subject(""))
		return
	}
	opts := p.opts
	opts.Stream = true // encoded as it is read
	list, err := store.GetList(r.Context(), req.scope(), opts)
	if err != nil {
		apistatus.Write(w, err, req.res.Subject(""))
		return
	}
	s.writeList(w, req, list)
}

// writeObject answers with obj in the request's format; an object that
// cannot be encoded so is a 500.
func (s *Server) writeObject(w http.ResponseWriter, req *request, code int, obj *object.Object) {
	if err := encoding.WriteObject(w, code, req.format, req.res, obj); err != nil {
		apistatus.Write(w, err, req.res.Subject(req.name))
	}
}

// writeList answers with a list in the request's format. A failure before
// the answer began is answered with its Status; one after it aborts the
// answer (encoding.AbortResponse), so that the client sees a broken
// transfer, not a list that looks complete.
func (s *Server) writeList(w http.ResponseWriter, req *request, list *storage.List) {
	started, err := encoding.WriteList(w, req.format, req.res, list)
	switch {
	case err == nil, errors.Is(err, encoding.ErrClientGone):
	case !started:
		apistatus.Write(w, err, req.res.Subject(""))
	default:
		if s.log != nil {
			s.log.Warn("list failed after its response began; aborting the response", "resource", req.res.String(), "scope", req.scope(),
				"resourceVersion", list.ResourceVersion, "err", err)
		}
		encoding.AbortResponse()
	}
}
