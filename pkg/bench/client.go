// The benchmark's HTTPS client of one API server, from a kubeconfig: as
// another user, on its own connection, requests and their status errors.

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiClient speaks HTTPS to one API server, as any Kubernetes client does.
type apiClient struct {
	base string
	http *http.Client
	// token, if not empty, is sent as a bearer token (by clients without a
	// client certificate: see as).
	token string
	// anonymous speaks TLS trusting the server's CA with no certificate;
	// the clients of as share it.
	anonymous *http.Client
	// retried, if not nil, makes the client retry a request answered 429
	// Too Many Requests after the answer's Retry-After, as client-go does,
	// and counts the retries; without it a 429 is an error.
	retried *atomic.Int64
	// accept, if not empty, is sent as the Accept header (see accepting);
	// without it the server answers in JSON.
	accept string
	// config is the kubeconfig's client configuration, for client-go's
	// clientsets (the protobuf scenario's informers).
	config *rest.Config
}

// newAPIClient is a client of the server at base with the credentials of
// the kubeconfig the server wrote (its CA and administrator certificate).
// It speaks HTTP/1.1, each client and watcher on a connection of its own
// kept alive, as the benchmark's clients did before TLS.
func newAPIClient(base, kubeconfig string) (*apiClient, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	admin, err := httpClient(cfg)
	if err != nil {
		return nil, err
	}
	anonymous, err := httpClient(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return nil, err
	}
	// A kubeconfig's bearer token, if it has one, goes with every request
	// (rest.TLSConfigFor carries only the certificates).
	return &apiClient{base: base, http: admin, token: cfg.BearerToken, anonymous: anonymous, config: cfg}, nil
}

// accepting returns a client of the same server, with the same
// credentials and connections, that asks for answers in mediaType.
func (c *apiClient) accepting(mediaType string) *apiClient {
	cp := *c
	cp.accept = mediaType
	return &cp
}

// httpClient speaks TLS as cfg says, HTTP/1.1, connections kept alive.
func httpClient(cfg *rest.Config) (*http.Client, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}, nil
}

// as returns a client of the same server without the administrator's
// certificate, authenticating with the bearer token (none: anonymous).
func (c *apiClient) as(token string) *apiClient {
	return &apiClient{base: c.base, http: c.anonymous, token: token, anonymous: c.anonymous, retried: c.retried}
}

// ownConnection returns a client of the same server with the same
// credentials that speaks HTTP/2 on a connection of its own: its requests
// and watches are streams of that one connection, as a kubelet's are. It
// retries 429s, counting them in retried.
func (c *apiClient) ownConnection(retried *atomic.Int64) *apiClient {
	tlsConfig := c.http.Transport.(*http.Transport).TLSClientConfig.Clone()
	return &apiClient{base: c.base, token: c.token, anonymous: c.anonymous, retried: retried, http: &http.Client{Transport: &http.Transport{
		TLSClientConfig:    tlsConfig,
		ForceAttemptHTTP2:  true,
		IdleConnTimeout:    time.Minute,
		DisableCompression: true,
	}}}
}

// closeIdle closes the client's idle connections (an ownConnection's one
// connection once its watches have ended).
func (c *apiClient) closeIdle() { c.http.CloseIdleConnections() }

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
	return c.doJSON(ctx, http.MethodGet, path, "", nil, into)
}

// doJSON sends a request and decodes the response into into.
func (c *apiClient) doJSON(ctx context.Context, method, path, contentType string, body []byte, into any) error {
	resp, err := c.send(ctx, method, path, contentType, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// send sends a request and returns the response of a 2xx status; the caller
// closes its body. An error's status, if the server answered, is
// statusOf's.
func (c *apiClient) send(ctx context.Context, method, path, contentType string, body []byte) (*http.Response, error) {
	for {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusTooManyRequests || c.retried == nil {
			return checkStatus(method, path, resp)
		}
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || wait <= 0 {
			wait = 1
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.retried.Add(1)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(wait) * time.Second):
		}
	}
}

// statusError is a response with a status other than 2xx.
type statusError struct {
	status int
	msg    string
}

// Error is the method, path, status and the server's message.
func (e *statusError) Error() string { return e.msg }

// statusOf returns the HTTP status of an error of send, or 0.
func statusOf(err error) int {
	var s *statusError
	if errors.As(err, &s) {
		return s.status
	}
	return 0
}

// checkStatus returns resp if its status is 2xx, or else an error carrying
// the server's message.
func checkStatus(method, path string, resp *http.Response) (*http.Response, error) {
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		resp.Body.Close()
		return nil, &statusError{status: resp.StatusCode, msg: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, msg)}
	}
	return resp, nil
}

// create POSTs a JSON object to a collection path.
func (c *apiClient) create(ctx context.Context, collection string, object []byte) (int64, error) {
	return c.do(ctx, http.MethodPost, collection, "application/json", object)
}

// listMeta is the part of a list response or of an object the benchmark
// decodes: its resourceVersion (the paginated pass finds continue tokens
// without decoding; see continueToken).
type listMeta struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}
