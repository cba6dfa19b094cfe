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
	if t := encoding.TableRequest(r); t != nil {
		encoding.WriteRaw(w, http.StatusOK, t.AppendTable(nil, req.res, []*object.Object{obj}, &storage.List{ResourceVersion: obj.ResourceVersion()}))
		return
	}
	encoding.WriteRaw(w, http.StatusOK, obj.JSON())
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
	enc := encoding.JSONList(req.res.ListKind(), req.res.GroupVersion())
	if t := encoding.TableRequest(r); t != nil {
		enc = t.TableList(req.res)
	}
	if err := encoding.StreamList(w, list, enc); err != nil && !errors.Is(err, encoding.ErrClientGone) {
		if s.log != nil {
			s.log.Warn("list failed after its response began; aborting the response", "resource", req.res.String(), "scope", req.scope(),
				"resourceVersion", list.ResourceVersion, "err", err)
		}
		encoding.AbortResponse()
	}
}
