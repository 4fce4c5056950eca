// Package toolresults owns the result a browser posts after running a client tool call
// (config.md §8, api.md §6.4): strict decoding and validation of the ClientToolResult and of the
// whole /chat/resume body, and the rendering of a result for the model.
//
// It does three things:
//
//   - Decode and DecodeResume parse JSON with package strictjson (keys match exactly; an
//     unknown or repeated key, trailing data, NaN, nesting deeper than 64 levels and more than
//     1024 values are refused), check every field against the caps of package limits
//     (character caps count code points, as Python's len() does), and collect the problems
//     into one *ValidationError whose items have the shape of FastAPI's 422 detail list, with
//     pydantic's error types and messages: the first limits.MaxErrorItems, and a count of the
//     rest, so the error never grows with the request.
//   - Beyond OSA, each image must really be of its declared media type and size: the PNG IHDR,
//     the JPEG frame header, the GIF logical screen or the WebP VP8/VP8L/VP8X header is read
//     (and nothing more) from the base64 as it is decoded. Image data is kept as the posted
//     base64 string; an image over limits.MaxImageBytes is refused from the string's length,
//     before anything is decoded.
//   - Result.Text, Result.StoredText and Result.LiveBlocks render a result exactly as
//     config.md §8.4 says, cut at limits.MaxToolResultLength code points.
//
// It does not decide HTTP status codes or write response bodies (package routers turns a
// *ValidationError into 422 {"detail": Errors}, followed by OmittedErrors), cap the size of the request body (the HTTP
// layer must, before calling DecodeResume; all work here is linear in the input), look up
// sessions or parked calls (404 and 409), decide whether a provider accepts images, store
// history, or know any provider's wire format beyond the neutral Block.
//
// # Differences from OSA (pydantic)
//
// Integer fields take integral JSON numbers only (1.0 yes, 1.5 no); numeric strings and
// booleans, which pydantic's lax mode converts, are refused with int_type, and elapsed_ms must
// fit in an int64. Invalid UTF-8, too deep a nesting, too many values and NaN/Infinity are
// json_invalid (FastAPI answers 400 to the first two and accepts the last two). Inputs echoed
// in errors are bounded (see FieldError.Input), and so is the value quoted in the media type
// message. Repeated keys are refused ("value_error", after the fields' own errors) where Python
// would keep the last. As in pydantic, a string holding an unpaired UTF-16 surrogate escape is
// refused (string_unicode).
package toolresults
