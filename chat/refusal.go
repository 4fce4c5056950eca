package chat

import "errors"

// RefusalCode says why a turn was refused before any model call. The HTTP layer maps each code
// to its status; chat knows none.
type RefusalCode int

// The refusals.
const (
	// CodeKeyRequired: the platform will not pay for this request (its Origin is not allowed,
	// or the model it names has no key here) and it brought no key of its own.
	CodeKeyRequired RefusalCode = iota + 1
	// CodeUnknownModel: the model the request names is not served here, or not with the key
	// it brought.
	CodeUnknownModel
	// CodeBudget: the community spent its daily or monthly budget for platform-paid replies.
	CodeBudget
)

// RefusalError is a turn refused before any model call. Msg is the reader-facing text: the
// error event's message inside a stream, the detail of a non-streamed answer.
type RefusalError struct {
	Code RefusalCode
	Msg  string
}

func (e *RefusalError) Error() string { return e.Msg }

func refuse(code RefusalCode, msg string) error { return &RefusalError{Code: code, Msg: msg} }

// refusalOf returns err's refusal, or nil.
func refusalOf(err error) *RefusalError {
	var r *RefusalError
	if errors.As(err, &r) {
		return r
	}
	return nil
}
