package routers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// apiError is an error with the status and the detail text a client sees. Handlers return it
// (or a domain error) and handleError renders it; handlers never write an error response
// themselves.
type apiError struct {
	status int
	detail string
}

func (e *apiError) Error() string { return e.detail }

// replyError is a non-streamed chat that ended without an answer: like apiError, but its body
// also names the request (error_id, request_id), as the reference's does.
type replyError struct {
	status int
	detail string
}

func (e *replyError) Error() string { return e.detail }

// The fixed error answers, with the reference's exact texts where the widget or its tests know
// them.
var (
	errNotFound           = &apiError{http.StatusNotFound, "Not Found"}
	errNoRuntimeFile      = &apiError{http.StatusNotFound, "No such runtime file"}
	errRuntimeUnavailable = &apiError{http.StatusServiceUnavailable, "This community's browser runtime is unavailable"}
	errNoLogo             = &apiError{http.StatusNotFound, "No logo found for this community"}
	errAdminKeyRequired   = &apiError{http.StatusUnauthorized, "Admin API key required"}
	errInvalidAdminKey    = &apiError{http.StatusForbidden, "Invalid API key"}
	errBodyTooLarge       = &apiError{http.StatusRequestEntityTooLarge, "Request body too large"}
	errSessionNotFound    = &apiError{http.StatusNotFound, "Session not found or expired."}
	errNoOutstandingCall  = &apiError{http.StatusConflict, "No outstanding browser call with that id for this session."}
	errSessionFull        = &apiError{http.StatusBadRequest, fmt.Sprintf("Session has reached max messages (%d). Start a new session.", limits.MaxSessionMessages)}
	errInternal           = &apiError{http.StatusInternalServerError, "Internal server error. Please contact support if the issue persists."}
	// The session store (Redis) did not answer, or the in-memory store has no session it may
	// evict: temporary, so 503 with a Retry-After.
	errStoreUnavailable = &apiError{http.StatusServiceUnavailable, "The assistant cannot reach its session store right now. Try again in a few seconds."}
	errTooManySessions  = &apiError{http.StatusServiceUnavailable, "Too many conversations are in progress right now. Try again in a few seconds."}
)

// chatErrors are the chat's request errors, returned before a stream opens, with the
// reference's answers.
var chatErrors = []struct {
	err error
	api *apiError
}{
	{chat.ErrSessionNotFound, errSessionNotFound},
	{chat.ErrNoOutstandingCall, errNoOutstandingCall},
	{chat.ErrSessionFull, errSessionFull},
}

// fileStoreErrors are the store's refusals of a session's files, for a route that returns one
// as it is (the upload route answers them with the community's numbers instead).
var fileStoreErrors = []struct {
	err error
	api *apiError
}{
	{store.ErrTooManyFiles, &apiError{http.StatusConflict, "The session holds as many files as it may."}},
	{store.ErrSessionFilesFull, &apiError{http.StatusRequestEntityTooLarge, "The session's files would exceed its size limit."}},
	{store.ErrArtifactBudget, errUploadsStorage},
}

// fileStoreError is the answer to one of fileStoreErrors, or nil.
func fileStoreError(err error) *apiError {
	for _, m := range fileStoreErrors {
		if errors.Is(err, m.err) {
			return m.api
		}
	}
	return nil
}

// chatAPIError is the answer to one of the chat's errors: a refusal gets its code's status and
// its own text, a session error the reference's answer; nil for any other error.
func chatAPIError(err error) *apiError {
	var ref *chat.RefusalError
	if errors.As(err, &ref) {
		return &apiError{refusalStatus(ref.Code), ref.Msg}
	}
	for _, m := range chatErrors {
		if errors.Is(err, m.err) {
			return m.api
		}
	}
	return nil
}

// refusalStatus is the status of a refused chat: before a stream opens, or as the answer of a
// non-streamed chat (whose refusals arrive as the turn's error event).
func refusalStatus(code chat.RefusalCode) int {
	switch code {
	case chat.CodeKeyRequired:
		return http.StatusForbidden
	case chat.CodeUnknownModel:
		return http.StatusBadRequest
	default:
		// An exhausted budget, like any non-streamed reply that could not be given.
		return http.StatusBadGateway
	}
}

// detailItem is one entry of a FastAPI-shaped 422 body: the same type the result decoder
// reports, so both kinds of 422 are rendered and bounded alike.
type detailItem = toolresults.FieldError

// rateLimitBody is the edge proxy's 429 body, in its key order.
type rateLimitBody struct {
	Error      string `json:"error"`
	Details    string `json:"details"`
	RetryAfter int    `json:"retry_after"`
}

// detailBody is {"detail": "..."}.
type detailBody struct {
	Detail string `json:"detail"`
}

// replyBody is a replyError's body.
type replyBody struct {
	Detail    string `json:"detail"`
	ErrorID   string `json:"error_id"`
	RequestID string `json:"request_id"`
}

// validationError is a request body that failed its rules: 422 with every problem at once.
type validationError struct{ items []detailItem }

func (e *validationError) Error() string { return "request validation failed" }

// handleError is the one place where errors become responses. It runs once per failed request.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return // a stream already started; its own error event was sent
	}
	var (
		status int
		body   []byte
		api    *apiError
		reply  *replyError
		val    *validationError
		tr     *toolresults.ValidationError
		rl     *rateLimited
		he     *echo.HTTPError
		mbe    *http.MaxBytesError
	)
	if a := chatAPIError(err); a != nil {
		err = a
	} else if a := fileStoreError(err); a != nil {
		err = a
	}
	switch {
	case errors.As(err, &api):
		status, body = api.status, detailJSON(api.detail)
	case errors.As(err, &reply):
		id := requestID(c)
		status, body = reply.status, boundedDetail(reply.detail, func(d string) any { return replyBody{Detail: d, ErrorID: id, RequestID: id} })
	case errors.As(err, &val):
		status, body = http.StatusUnprocessableEntity, itemsJSON(val.items, 0)
	case errors.As(err, &tr):
		status, body = http.StatusUnprocessableEntity, itemsJSON(tr.Errors, tr.Omitted)
	case errors.As(err, &rl):
		// The edge proxy's shape, which the widget reads (api.md §9).
		c.Response().Header().Set("Retry-After", strconv.Itoa(rl.retryAfter))
		status, body = http.StatusTooManyRequests, encodeJSON(rateLimitBody{Error: "Rate limit exceeded", Details: rl.details, RetryAfter: rl.retryAfter})
	case errors.As(err, &mbe):
		status, body = errBodyTooLarge.status, detailJSON(errBodyTooLarge.detail)
	case errors.As(err, &he):
		// echo's own answers (unknown route 404, 405, 413) in the same shape.
		status = he.Code
		detail := http.StatusText(he.Code)
		if he.Code == http.StatusNotFound {
			detail = errNotFound.detail
		}
		body = detailJSON(detail)
	case errors.Is(err, store.ErrFull):
		c.Response().Header().Set("Retry-After", "5")
		status, body = errTooManySessions.status, detailJSON(errTooManySessions.detail)
	case errors.Is(err, store.ErrUnavailable):
		c.Response().Header().Set("Retry-After", "2")
		status, body = errStoreUnavailable.status, detailJSON(errStoreUnavailable.detail)
	default:
		status, body = errInternal.status, detailJSON(errInternal.detail)
	}
	if status >= 500 {
		s.log.Error("request failed", slog.String("request_id", requestID(c)), slog.String("route", c.Path()),
			slog.Int("status", status), slog.Any("error", err))
	}
	if c.Request().Method == http.MethodHead {
		// The headers a GET would get, without the body.
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
		err = c.NoContent(status)
	} else {
		err = c.Blob(status, echo.MIMEApplicationJSON, body)
	}
	if err != nil {
		s.log.Debug("writing an error response failed", slog.Any("error", err))
	}
}

// maxErrorBody is limits.MaxErrorBodyBytes as an int.
const maxErrorBody = int(limits.MaxErrorBodyBytes)

// encodeJSON writes v as c.JSON would, one line of compact JSON, except that <, > and & are
// not escaped: an error body is application/json and never HTML, and escaping made each of
// them six bytes in an echoed input.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Every value here is built from strings, numbers and the decoders' echoes.
		return []byte(`{"detail":"` + errInternal.detail + `"}` + "\n")
	}
	return b.Bytes()
}

// detailJSON is a {"detail": "..."} body.
func detailJSON(detail string) []byte {
	return boundedDetail(detail, func(d string) any { return detailBody{Detail: d} })
}

// boundedDetail encodes the body that holds detail, with the text cut (as an echoed input is)
// if the body would reach limits.MaxErrorBodyBytes: no fixed text comes near, but a text
// built from a request might.
func boundedDetail(detail string, body func(string) any) []byte {
	b := encodeJSON(body(detail))
	if len(b) < maxErrorBody {
		return b
	}
	return encodeJSON(body(toolresults.Echo(detail).(string)))
}

// itemsJSON is a 422 body {"detail": [items...]}, ending with an OmittedErrors item when the
// decoder left omitted errors out. It is the last guard of limits.MaxErrorBodyBytes: the
// validators bound every item and their number, and if the items still do not fit, the
// trailing ones are left out too and counted in the final item.
func itemsJSON(items []detailItem, omitted int) []byte {
	const head, tail = `{"detail":[`, "]}\n"
	root := []any{"body"}
	enc := make([][]byte, len(items))
	size := len(head) + len(tail)
	for i, it := range items {
		enc[i] = bytes.TrimSuffix(encodeJSON(it), []byte("\n"))
		size += len(enc[i]) + 1
	}
	keep := len(items)
	if omitted > 0 { // the final item is part of the body too
		size += len(encodeJSON(toolresults.OmittedErrors(root, omitted))) + 1
	}
	if size >= maxErrorBody {
		// Room for the final item with any count it may carry.
		size = len(head) + len(tail) + len(encodeJSON(toolresults.OmittedErrors(root, math.MaxInt))) + 1
		keep = 0
		for keep < len(items) && size+len(enc[keep])+1 < maxErrorBody {
			size += len(enc[keep]) + 1
			keep++
		}
		omitted += len(items) - keep
	}
	out := make([]byte, 0, size)
	out = append(out, head...)
	for i := range keep {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, enc[i]...)
	}
	if omitted > 0 {
		if keep > 0 {
			out = append(out, ',')
		}
		out = append(out, bytes.TrimSuffix(encodeJSON(toolresults.OmittedErrors(root, omitted)), []byte("\n"))...)
	}
	return append(out, tail...)
}
