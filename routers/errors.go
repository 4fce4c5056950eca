package routers

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/limits"
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
)

// detailItem is one entry of a FastAPI-shaped 422 body.
type detailItem struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// rateLimitBody is the edge proxy's 429 body, in its key order.
type rateLimitBody struct {
	Error      string `json:"error"`
	Details    string `json:"details"`
	RetryAfter int    `json:"retry_after"`
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
		body   any
		api    *apiError
		val    *validationError
		tr     *toolresults.ValidationError
		rl     *rateLimited
		he     *echo.HTTPError
		mbe    *http.MaxBytesError
	)
	switch {
	case errors.As(err, &api):
		status, body = api.status, map[string]string{"detail": api.detail}
	case errors.As(err, &val):
		status, body = http.StatusUnprocessableEntity, map[string]any{"detail": val.items}
	case errors.As(err, &tr):
		status, body = http.StatusUnprocessableEntity, map[string]any{"detail": tr.Errors}
	case errors.As(err, &rl):
		// The edge proxy's shape, which the widget reads (api.md §9).
		c.Response().Header().Set("Retry-After", strconv.Itoa(rl.retryAfter))
		status, body = http.StatusTooManyRequests, rateLimitBody{Error: "Rate limit exceeded", Details: rl.details, RetryAfter: rl.retryAfter}
	case errors.As(err, &mbe):
		status, body = errBodyTooLarge.status, map[string]string{"detail": errBodyTooLarge.detail}
	case errors.As(err, &he):
		// echo's own answers (unknown route 404, 405, 413) in the same shape.
		status = he.Code
		detail := http.StatusText(he.Code)
		if he.Code == http.StatusNotFound {
			detail = errNotFound.detail
		}
		body = map[string]string{"detail": detail}
	default:
		status, body = errInternal.status, map[string]string{"detail": errInternal.detail}
	}
	if status >= 500 {
		s.log.Error("request failed", slog.String("request_id", requestID(c)), slog.String("route", c.Path()),
			slog.Int("status", status), slog.Any("error", err))
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, body)
	}
	if err != nil {
		s.log.Debug("writing an error response failed", slog.Any("error", err))
	}
}
