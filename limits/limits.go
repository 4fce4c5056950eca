package limits

// CodePoints counts Unicode code points, as Python's len() of a str does (not bytes, not UTF-16
// units). Every character cap below is in code points.
type CodePoints int

// Bytes counts octets.
type Bytes int

// Pixels counts image pixels along one edge.
type Pixels int

// Server caps on one posted ClientToolResult (config.md §5.1). Over a cap, the whole request is
// refused; nothing is truncated at the edge.
const (
	// MaxStdoutChars caps the stdout of one result.
	MaxStdoutChars CodePoints = 16384
	// MaxStderrChars caps the stderr of one result.
	MaxStderrChars CodePoints = 8192
	// MaxSummaryChars caps the deterministic summary of one result.
	MaxSummaryChars CodePoints = 8192
	// MaxImages caps the number of images in one result.
	MaxImages = 3
	// MaxImageBytes caps the decoded size of one image.
	MaxImageBytes Bytes = 2_000_000
	// MaxImageEdgePx caps the width and the height of one image.
	MaxImageEdgePx Pixels = 8192
	// MaxArtifacts caps how many artifact names one result lists.
	MaxArtifacts = 32
	// MaxArtifactNameChars caps one artifact name.
	MaxArtifactNameChars CodePoints = 512
	// MaxCallIDChars caps a tool call id.
	MaxCallIDChars CodePoints = 256
	// MaxToolResultLength caps the rendered text of a stored tool result; longer text is cut
	// and marked, not refused.
	MaxToolResultLength CodePoints = 65536
)

// Chat-loop caps (api.md §4.2, §6.7).
const (
	// MaxBrowserRunsPerReply caps the browser executions one reply may chain. Communities cannot
	// change it.
	MaxBrowserRunsPerReply = 20
	// PendingCallTTLSeconds is how long a parked browser call waits for its result.
	PendingCallTTLSeconds = 900
	// MaxDeclaredClientTools caps the tool names one /chat or /chat/resume request may declare.
	MaxDeclaredClientTools = 8
	// MaxMessageChars caps one chat message.
	MaxMessageChars CodePoints = 10000
	// MaxSessionMessages caps the messages one session may hold.
	MaxSessionMessages = 300
	// MaxSessionIDChars caps a session id.
	MaxSessionIDChars CodePoints = 256
	// MaxPageURLChars caps page_context.url.
	MaxPageURLChars CodePoints = 2048
	// MaxPageTitleChars caps page_context.title.
	MaxPageTitleChars CodePoints = 500
	// MaxWidgetInstructionChars caps page_context.widget_instructions.
	MaxWidgetInstructionChars CodePoints = 2000
	// MaxModelChars caps the model a /chat or /chat/resume request names (the reference's
	// ChatRequest.model max_length); both routes refuse a longer one with the same 422 item.
	MaxModelChars CodePoints = 200
)

// Error-body caps. An error answer must never grow with its request: a hostile body of a few
// megabytes could otherwise be echoed back many times over (long keys in loc, every "missing"
// error echoing its parent object, one item per unknown key).
const (
	// MaxErrorBodyBytes bounds the encoded body of every error response, whatever the request:
	// each is smaller than this.
	// The validators bound what they echo so a 422 stays well under it; the one error mapping
	// in routers enforces it as a last guard, dropping trailing 422 items or clipping a detail
	// string.
	MaxErrorBodyBytes Bytes = 64 << 10
	// MaxErrorItems caps the items of one 422 body. Past it, one final item of type
	// "too_many_errors" says how many more were found. It is above what any body that is
	// wrong in the ordinary ways produces (every declared field of a resume body is 28).
	MaxErrorItems = 40
)

// Community config caps (config.md §3.1, §4.1).
const (
	// ReservedClientTools is how many tool names the server reserves for itself
	// (get_full_output).
	ReservedClientTools = 1
	// MaxConfiguredClientTools caps extensions.client_tools.
	MaxConfiguredClientTools = MaxDeclaredClientTools - ReservedClientTools
	// MaxPreludeChars caps each deployment's prelude.
	MaxPreludeChars CodePoints = 4000
	// MaxImportBeforeSeal caps runtime.python.import_before_seal.
	MaxImportBeforeSeal = 16
	// MaxImportNameChars caps one import_before_seal entry.
	MaxImportNameChars CodePoints = 200
	// MaxModelInstructionChars caps one model_instructions text.
	MaxModelInstructionChars CodePoints = 4000
)

// Workspace caps: what one run may save with osa.save_script and osa.save_artifact, in the
// server's runtime and in the browser's alike (the community's tool description promises them to
// the model). A save over a cap is refused with osa.SaveRefused; nothing is cut.
const (
	// MaxSavedFiles caps the files one run may save; a result lists each as an artifact, so it
	// is the artifact cap.
	MaxSavedFiles = MaxArtifacts
	// MaxSavedFileBytes caps one saved file: 10 MiB.
	MaxSavedFileBytes Bytes = 10 << 20
	// MaxSavedBytes caps all the files of one run together: 25 MiB.
	MaxSavedBytes Bytes = 25 << 20
)

// The browser's store of full outputs, which get_full_output pages through (api.md §6.6).
const (
	// MaxCapturedChars caps what a runtime keeps of one stream of one run: the first and the
	// last this many characters, and the count.
	MaxCapturedChars CodePoints = 262144
	// FullOutputRuns is how many runs' full output the page keeps.
	FullOutputRuns = 16
	// FullOutputTotalChars caps the characters the page keeps for all those runs together (the
	// oldest go first).
	FullOutputTotalChars CodePoints = 16_000_000
)

// SealedImportRoots are the top-level modules that reach JavaScript in the browser's runtime:
// its seal removes and refuses them, and importing one before the seal gains nothing (config.md
// §4.1). Callers must not modify it.
var SealedImportRoots = []string{"micropip", "js", "pyodide", "pyodide_js", "pyodide_http", "ctypes"}

// Bound is an inclusive range for one RuntimeLimits field. Max 0 means no upper bound.
type Bound struct {
	Default int
	Min     int
	Max     int
}

// Runtime holds the bounds of runtime.python.limits (config.md §5.2). The upper bounds are the
// server caps above, so a community's numbers can never exceed what the server accepts.
var Runtime = struct {
	MemoryMB    Bound
	StdoutChars Bound
	StderrChars Bound
	Images      Bound
	ImagePx     Bound
	ExecSeconds Bound
}{
	MemoryMB:    Bound{Default: 1536, Min: 64},
	StdoutChars: Bound{Default: int(MaxStdoutChars), Min: 256, Max: int(MaxStdoutChars)},
	StderrChars: Bound{Default: int(MaxStderrChars), Min: 256, Max: int(MaxStderrChars)},
	Images:      Bound{Default: MaxImages, Min: 0, Max: MaxImages},
	ImagePx:     Bound{Default: 1024, Min: 16, Max: int(MaxImageEdgePx)},
	ExecSeconds: Bound{Default: 120, Min: 1},
}

// Uploads holds the bounds of runtime.python.uploads: the files a reader may attach to one
// session. The maxima are the server's caps; the upload routes enforce a community's numbers,
// which can never exceed them.
var Uploads = struct {
	MaxFileMB    Bound
	MaxSessionMB Bound
	MaxFiles     Bound
}{
	MaxFileMB:    Bound{Default: 25, Min: 1, Max: 100},
	MaxSessionMB: Bound{Default: 100, Min: 1, Max: 500},
	MaxFiles:     Bound{Default: 16, Min: 1, Max: 64},
}

// UploadTypes is the fixed set of file types (extensions, lower case) runtime.python.uploads.types
// may list; workspace.CheckUpload knows how to verify each. Callers must not modify it.
var UploadTypes = []string{"csv", "tsv", "txt", "json", "xlsx", "parquet"}

// DefaultUploadTypes is runtime.python.uploads.types when a community does not set it: every
// type but parquet. Callers must not modify it.
var DefaultUploadTypes = []string{"csv", "tsv", "txt", "json", "xlsx"}

// Knowledge caps (knowledge.md §3.2, §4.3): what a community's documentation may bring into the
// server and into the model's prompt.
const (
	// MaxDocumentBytes bounds one documentation document as fetched or read from source_path.
	MaxDocumentBytes Bytes = 4 << 20
	// MaxDocumentChars bounds one document in the prompt and in retrieve_{id}_docs.
	MaxDocumentChars CodePoints = 50000
	// PreloadBudgetChars bounds the preloaded documents of one prompt together; past it the
	// rest are offered on demand.
	PreloadBudgetChars CodePoints = 150000
	// MaxPageChars bounds what fetch_current_page returns.
	MaxPageChars CodePoints = 30000
)
