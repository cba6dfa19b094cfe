package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// apiClient speaks HTTP to one API server, as any Kubernetes client does.
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(base string) *apiClient {
	return &apiClient{base: base, http: &http.Client{Transport: &http.Transport{
		// Every benchmark client and watcher keeps its own connection.
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}}
}

// do sends a request and reads the whole response, returning its size. A
// status other than 2xx is an error carrying the server's message.
func (c *apiClient) do(ctx context.Context, method, path, contentType string, body []byte) (int64, error) {
	resp, err := c.send(ctx, method, path, contentType, body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// getJSON reads path and decodes the response into into.
func (c *apiClient) getJSON(ctx context.Context, path string, into any) error {
	resp, err := c.send(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(into)
}

// send sends a request and returns the response of a 2xx status; the caller
// closes its body.
func (c *apiClient) send(ctx context.Context, method, path, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	return resp, nil
}

// create POSTs a JSON object to a collection path.
func (c *apiClient) create(ctx context.Context, collection string, object []byte) (int64, error) {
	return c.do(ctx, http.MethodPost, collection, "application/json", object)
}

// listMeta is the part of a list response the benchmark decodes (the
// paginated pass finds continue tokens without decoding; see continueToken).
type listMeta struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}
