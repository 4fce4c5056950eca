package knowledge

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
)

// A generated Python package for measuring search_{id}_code_docs: "neurosig", an invented
// EEG/MEG signal-processing library of 20 subpackages, written programmatically from tables of
// the things such a library does (file formats, filters, preprocessing steps, statistics, …).
// Each concept gets one file with a main function or class documented in numpydoc style (a
// summary, an extended description, parameters drawn from the concept and from the
// parameters every such function shares, returns, notes, examples), a class or function
// counterpart, the methods an estimator has, and private helpers: about 2,200 symbols, many
// sharing words (every docstring mentions channels, data, picks, verbose, …), as in a real
// package. The questions (codeDocsQuestions) ask for the main symbol of a concept in a
// user's words.

// concept is one thing the package does.
type concept struct {
	module string
	// name is the main symbol: a function (snake_case) or a class (CamelCase).
	name string
	// noun names the thing in the counterparts' docstrings ("notch filter").
	noun string
	// summary is the first paragraph; extended the second ("" for none).
	summary, extended string
	// params are the concept's own parameters: "name : type : description".
	params []string
	// returns is "name : type : description".
	returns string
	note    string
}

// sharedParams are the parameters most functions of the package take.
var sharedParams = []string{
	"picks : str | list | slice | None : Channels to include. Slices and lists of integers are interpreted as channel indices; strings as channel types (e.g. 'eeg') or names. None picks all good data channels.",
	"n_jobs : int | None : The number of jobs to run in parallel. None means 1 unless set in the configuration.",
	"verbose : bool | str | int | None : Control verbosity of the logging output. If None, use the default verbosity level.",
	"copy : bool : If True (default), operate on a copy of the data and leave the input unchanged.",
	"reject_by_annotation : bool : Whether to omit segments annotated as bad.",
	"on_missing : 'raise' | 'warn' | 'ignore' : What to do when a requested item is missing from the data.",
}

var dataParams = []string{
	"raw : Raw : The continuous data, with its measurement info.",
	"inst : Raw | Epochs | Evoked : The data to process. Epochs and Evoked are handled channel by channel.",
	"epochs : Epochs : The epoched data, one epoch per event.",
	"evoked : Evoked : The averaged data of one condition.",
}

// formats are the file formats of neurosig.io: name, description, extension.
var formats = [][3]string{
	{"edf", "European Data Format (EDF and EDF+) files, common for clinical and sleep recordings", ".edf"},
	{"bdf", "BioSemi Data Format (BDF) files written by ActiveTwo amplifiers, with 24-bit samples", ".bdf"},
	{"brainvision", "BrainVision Recorder files: a .vhdr header, a .vmrk marker file and the binary .eeg data", ".vhdr"},
	{"eeglab", "EEGLAB datasets saved as .set files, with the data inside or in a separate .fdt file", ".set"},
	{"fif", "FIF files, the native format of Neuromag and Elekta MEG systems", ".fif"},
	{"csv", "comma-separated text files with one column per channel and an optional time column", ".csv"},
	{"nwb", "Neurodata Without Borders (NWB) files stored in HDF5", ".nwb"},
	{"xdf", "Extensible Data Format (XDF) files recorded with Lab Streaming Layer (LabRecorder)", ".xdf"},
	{"gdf", "General Data Format (GDF) files used by BCI2000 and BioSig", ".gdf"},
	{"cnt", "Neuroscan continuous .cnt recordings (16 or 32 bit)", ".cnt"},
	{"snirf", "Shared Near Infrared Spectroscopy Format (SNIRF) files for fNIRS", ".snirf"},
	{"curry", "Curry 7 and 8 recordings (.dat, .dap and .rs3 files, or .cdt)", ".cdt"},
	{"nihon", "Nihon Kohden EEG-1200 clinical recordings with their .pnt and .log files", ".eeg"},
	{"persyst", "Persyst recordings: a .lay layout file and its .dat data file", ".lay"},
}

// filterKinds are the filters of neurosig.filter: kind, what it does, example cutoffs.
var filterKinds = [][3]string{
	{"lowpass", "Keep frequencies below a cutoff and attenuate higher ones, for example to suppress muscle activity above 40 Hz", "h_freq=40."},
	{"highpass", "Remove slow drifts and DC offsets below a cutoff frequency, such as sweat artifacts below 0.1 Hz", "l_freq=0.1"},
	{"bandpass", "Keep a band of frequencies between a lower and an upper edge, for example 1 to 40 Hz for ERPs", "l_freq=1., h_freq=40."},
	{"bandstop", "Attenuate a band of frequencies between two edges and keep the rest of the spectrum", "l_freq=48., h_freq=52."},
	{"notch", "Remove power line noise at 50 or 60 Hz and its harmonics with narrow band-stop filters", "freqs=(60, 120, 180)"},
}

var filterDesigns = [][2]string{
	{"fir", "a linear-phase finite impulse response (FIR) filter designed with a Hamming window, applied once and compensated for its delay"},
	{"iir", "an infinite impulse response (IIR) Butterworth filter in second-order sections, applied forward and backward for zero phase"},
}

// handConcepts are the rest of the package, module by module.
var handConcepts = []concept{
	// preprocessing
	{module: "preprocessing", name: "set_eeg_reference", noun: "EEG reference", summary: "Re-reference EEG channels to the average of all electrodes, to a single electrode such as Cz, or to linked mastoids.", extended: "The reference is applied as a projector when projection=True, so it can be undone before source modelling.", params: []string{"ref_channels : list of str | 'average' | 'REST' : The new reference: channel names, the average of all EEG channels, or the reference electrode standardization technique.", "projection : bool : Add the average reference as an SSP projector instead of applying it."}, returns: "inst : instance of Raw | Epochs | Evoked : The data re-referenced."},
	{module: "preprocessing", name: "interpolate_bads", noun: "bad channel interpolation", summary: "Repair bad channels by replacing their signals with spherical spline interpolation from the neighbouring electrodes.", extended: "Channels listed in info['bads'] are interpolated; electrode positions must be set with a montage.", params: []string{"reset_bads : bool : Clear info['bads'] after the interpolation.", "origin : array-like, shape (3,) | 'auto' : The head origin used by the spherical splines."}, returns: "inst : instance : The data with the bad channels interpolated."},
	{module: "preprocessing", name: "find_bad_channels", noun: "bad channel detector", summary: "Detect noisy and flat channels automatically from their variance, their correlation with neighbouring channels and their high-frequency noise.", params: []string{"threshold : float : The robust z-score above which a channel is marked bad.", "flat_threshold : float : Peak-to-peak amplitude below which a channel counts as flat."}, returns: "bads : list of str : The names of the channels found bad."},
	{module: "preprocessing", name: "fit_ica", noun: "independent component analysis", summary: "Decompose the recording into independent components with FastICA, Infomax or Picard, to separate eye blinks, heartbeats and other artifacts from brain activity.", extended: "High-pass filter the data at 1 Hz first; components can then be excluded and the data reconstructed without them.", params: []string{"n_components : int | float | None : The number of components, or the fraction of variance to keep.", "method : 'fastica' | 'infomax' | 'picard' : The ICA algorithm.", "random_state : int | None : Seed for reproducible decompositions."}, returns: "ica : instance of ICA : The fitted decomposition."},
	{module: "preprocessing", name: "find_eog_events", noun: "EOG event detector", summary: "Detect eye blinks in the EOG channels and return them as events.", params: []string{"ch_name : str | None : The EOG channel; None uses every channel of type eog.", "thresh : float | None : Amplitude threshold of a blink."}, returns: "eog_events : array, shape (n_events, 3) : The blink events."},
	{module: "preprocessing", name: "find_ecg_events", noun: "ECG event detector", summary: "Detect heartbeats (R peaks of the QRS complex) in an ECG channel, or synthesize one from the magnetometers when there is none.", params: []string{"ch_name : str | None : The ECG channel.", "qrs_threshold : float | 'auto' : Threshold of the QRS detection."}, returns: "ecg_events : array : The heartbeat events, and the average pulse."},
	{module: "preprocessing", name: "annotate_muscle_zscore", noun: "muscle artifact annotation", summary: "Mark segments contaminated by muscle activity by thresholding the z-scored envelope of the 110-140 Hz band.", params: []string{"threshold : float : The z-score above which a segment is annotated.", "min_length_good : float : Shortest good segment kept between two bad ones, in seconds."}, returns: "annot : instance of Annotations : Segments described as BAD_muscle."},
	{module: "preprocessing", name: "annotate_flat", noun: "flat signal annotation", summary: "Mark segments and channels where the signal is flat, such as disconnected electrodes or amplifier saturation.", params: []string{"bad_percent : float : Percentage of flat time above which a whole channel is marked bad."}, returns: "annot : instance of Annotations : The flat segments."},
	{module: "preprocessing", name: "apply_baseline", noun: "baseline correction", summary: "Subtract the mean of a baseline interval, usually the period before the stimulus, from each epoch and channel.", params: []string{"baseline : tuple of (float | None, float | None) : The start and end of the baseline in seconds; None means the beginning or the end of the data."}, returns: "inst : instance : The baseline-corrected data."},
	{module: "preprocessing", name: "detrend", noun: "detrending", summary: "Remove a constant or a linear trend from each channel.", params: []string{"order : int : 0 removes the mean, 1 a straight line."}, returns: "x : array : The detrended data."},
	{module: "preprocessing", name: "resample", noun: "resampler", summary: "Change the sampling rate of the data, applying an anti-aliasing low-pass filter before downsampling.", extended: "Resampling continuous data before epoching avoids jitter of the events; the events are moved to the new rate as well.", params: []string{"sfreq : float : The new sampling frequency in Hz.", "npad : int | 'auto' : Padding added before the FFT."}, returns: "inst : instance : The data at the new sampling rate."},
	{module: "preprocessing", name: "crop", noun: "cropping", summary: "Keep only the data between a start time and an end time, in seconds.", params: []string{"tmin : float : The first time kept.", "tmax : float | None : The last time kept; None keeps the end."}, returns: "inst : instance : The cropped data."},
	{module: "preprocessing", name: "compute_current_source_density", noun: "surface Laplacian", summary: "Compute the surface Laplacian (current source density) of EEG to sharpen its spatial resolution and reduce volume conduction.", params: []string{"lambda2 : float : Regularization of the spline fit.", "stiffness : float : Stiffness of the spline."}, returns: "inst : instance : The current source density, in V/m²."},
	{module: "preprocessing", name: "regress_artifact", noun: "artifact regression", summary: "Remove EOG artifacts by regressing the EOG channels out of the EEG, with weights estimated by ordinary least squares.", params: []string{"picks_artifact : str | list : The reference channels of the artifact."}, returns: "inst : instance : The cleaned data, and the regression betas."},
	{module: "preprocessing", name: "maxwell_filter", noun: "Maxwell filter", summary: "Suppress external magnetic interference and sensor noise in MEG data with signal space separation (SSS), or temporal SSS for nearby sources.", params: []string{"int_order : int : Order of the internal multipole expansion.", "st_duration : float | None : Buffer length of tSSS in seconds; None applies plain SSS."}, returns: "raw_sss : instance of Raw : The MEG data with interference removed."},
	{module: "preprocessing", name: "compute_proj_eog", noun: "EOG projector", summary: "Compute signal-space projection (SSP) vectors that remove eye movement and blink artifacts.", params: []string{"n_eeg : int : Number of EEG projection vectors."}, returns: "projs : list of Projection : The projectors."},
	// epochs
	{module: "epochs", name: "Epochs", noun: "epochs", summary: "Cut the continuous recording into epochs time-locked to events, from tmin to tmax seconds around each event.", extended: "Each event of the events array yields one epoch; event_id maps condition names to event codes.", params: []string{"events : array, shape (n_events, 3) : The events.", "event_id : dict | int | None : The conditions to keep.", "tmin : float : Start of each epoch relative to its event.", "tmax : float : End of each epoch.", "baseline : tuple | None : The baseline interval."}, returns: ""},
	{module: "epochs", name: "reject_by_amplitude", noun: "amplitude rejection", summary: "Drop epochs whose peak-to-peak amplitude exceeds a threshold on any channel, and epochs that are flat.", params: []string{"reject : dict : Peak-to-peak thresholds by channel type, e.g. dict(eeg=100e-6).", "flat : dict | None : Minimum peak-to-peak amplitude by channel type."}, returns: "epochs : instance of Epochs : The epochs kept."},
	{module: "epochs", name: "average_epochs", noun: "epoch averaging", summary: "Average the epochs of each condition to obtain the evoked response (event-related potential or field).", params: []string{"method : 'mean' | 'median' | callable : How to average."}, returns: "evoked : instance of Evoked : The average."},
	{module: "epochs", name: "equalize_event_counts", noun: "event count equalization", summary: "Drop epochs so that every condition has the same number of trials, keeping the epochs closest in time across conditions.", params: []string{"event_ids : list : The conditions to equalize."}, returns: "epochs : instance of Epochs : The equalized epochs, and the indices dropped."},
	{module: "epochs", name: "concatenate_epochs", noun: "epoch concatenation", summary: "Join several Epochs objects with the same channels and sampling rate into one.", params: []string{"epochs_list : list of Epochs : The epochs to join.", "add_offset : bool : Shift event samples so they do not overlap."}, returns: "epochs : instance of Epochs : The joined epochs."},
	{module: "epochs", name: "make_fixed_length_epochs", noun: "fixed-length epochs", summary: "Cut the recording into consecutive epochs of equal duration without events, for example for resting-state analysis.", params: []string{"duration : float : The length of each epoch in seconds.", "overlap : float : The overlap between consecutive epochs in seconds."}, returns: "epochs : instance of Epochs : The segments."},
	{module: "epochs", name: "estimate_rejection_thresholds", noun: "rejection threshold estimation", summary: "Estimate per-channel peak-to-peak rejection thresholds with cross-validation instead of fixing them by hand.", params: []string{"cv : int : Number of cross-validation folds."}, returns: "reject : dict : The thresholds by channel type."},
	{module: "epochs", name: "epochs_to_dataframe", noun: "data frame export", summary: "Convert epochs to a pandas DataFrame in long format, one row per time point, epoch and channel.", params: []string{"index : str | list | None : Columns to use as the index.", "long_format : bool : One row per observation."}, returns: "df : instance of pandas.DataFrame : The data frame."},
	// events
	{module: "events", name: "find_events", noun: "event finder", summary: "Find events in a stimulus (trigger) channel: the onsets in samples with their event codes.", extended: "Transitions of the stim channel from zero to a positive value mark events; use min_duration to ignore glitches.", params: []string{"stim_channel : str | list | None : The trigger channel, e.g. 'STI 014'.", "min_duration : float : The shortest step that counts, in seconds.", "shortest_event : int : Minimum number of samples of an event."}, returns: "events : array, shape (n_events, 3) : Sample, previous value and event code of each event."},
	{module: "events", name: "merge_events", noun: "event merging", summary: "Give several event codes one new code, for example to pool the conditions of a factor.", params: []string{"ids : array-like : The codes to merge.", "new_id : int : The new code."}, returns: "new_events : array : The events with merged codes."},
	{module: "events", name: "shift_time_events", noun: "event shifting", summary: "Shift event onsets by a fixed delay in seconds, such as the input lag of the screen or of the sound card.", params: []string{"ids : array-like | None : The codes to shift.", "tshift : float : The delay in seconds."}, returns: "new_events : array : The shifted events."},
	{module: "events", name: "events_from_annotations", noun: "annotation conversion", summary: "Convert annotations, such as BrainVision or EDF+ markers, into an events array and a mapping of their descriptions to event codes.", params: []string{"event_id : dict | callable | 'auto' : How descriptions map to codes.", "regexp : str | None : Keep only descriptions matching this regular expression."}, returns: "events : array : The events, and the event_id mapping."},
	{module: "events", name: "read_events", noun: "event file reader", summary: "Read events from a .eve or text event file, or from a FIF file.", params: []string{"filename : path-like : The event file.", "include : int | list | None : The codes to keep."}, returns: "events : array : The events read."},
	{module: "events", name: "pick_events", noun: "event picking", summary: "Keep only the events with the given codes, or drop the ones listed in exclude.", params: []string{"include : int | list | None : Codes to keep.", "exclude : int | list | None : Codes to drop."}, returns: "events : array : The events kept."},
	{module: "events", name: "define_target_events", noun: "target event definition", summary: "Find target events that follow a reference event within a time window, for example button presses after a stimulus, and code them as new events.", params: []string{"reference_id : int : The code of the reference event.", "target_id : int : The code of the target.", "tmin : float : Earliest lag.", "tmax : float : Latest lag."}, returns: "new_events : array : The events found, and the lags."},
	// channels
	{module: "channels", name: "pick_types", noun: "channel selection", summary: "Select channels by type, such as EEG, MEG magnetometers and gradiometers, EOG, ECG or stimulus channels.", params: []string{"meg : bool | 'mag' | 'grad' : Which MEG channels.", "eeg : bool : EEG channels.", "eog : bool : EOG channels.", "stim : bool : Stimulus channels."}, returns: "sel : array of int : The indices of the channels picked."},
	{module: "channels", name: "rename_channels", noun: "channel renaming", summary: "Rename channels with a dictionary of old and new names or a function applied to every name.", params: []string{"mapping : dict | callable : The new names."}, returns: "inst : instance : The data with renamed channels."},
	{module: "channels", name: "set_channel_types", noun: "channel type setter", summary: "Change the type of channels, for example mark a channel recorded as EEG as an EOG or ECG channel.", params: []string{"mapping : dict : Channel names mapped to their new types."}, returns: "inst : instance : The data with the new types."},
	{module: "channels", name: "drop_channels", noun: "channel dropping", summary: "Remove channels from the data by name.", params: []string{"ch_names : str | list of str : The channels to remove."}, returns: "inst : instance : The data without them."},
	{module: "channels", name: "find_ch_adjacency", noun: "channel adjacency", summary: "Compute which channels are neighbours from their positions or a template, as needed by cluster statistics.", params: []string{"ch_type : str | None : The channel type."}, returns: "adjacency : scipy.sparse.csr_matrix : The adjacency matrix, and the channel names."},
	{module: "channels", name: "equalize_channels", noun: "channel equalization", summary: "Keep only the channels present in all of several instances, in the same order.", params: []string{"instances : list : The instances to equalize."}, returns: "instances : list : The instances with equal channels."},
	{module: "channels", name: "combine_channels", noun: "channel combination", summary: "Average groups of channels into regions of interest, creating one virtual channel per group.", params: []string{"groups : dict : Names of the new channels mapped to the indices they combine.", "method : 'mean' | 'median' | 'std' | callable : How to combine."}, returns: "combined_inst : instance : The data with one channel per group."},
	// montage
	{module: "montage", name: "make_standard_montage", noun: "standard montage", summary: "Load a standard electrode layout, such as the international 10-20 or 10-05 system, with 3D positions of every electrode.", params: []string{"kind : str : The name of the montage, e.g. 'standard_1020' or 'biosemi64'.", "head_size : float : The head radius in meters."}, returns: "montage : instance of DigMontage : The montage."},
	{module: "montage", name: "set_montage", noun: "montage assignment", summary: "Assign electrode positions from a montage to the channels of a recording.", params: []string{"montage : str | DigMontage | None : The montage, or None to remove positions.", "match_case : bool : Match channel names case-sensitively."}, returns: "inst : instance : The data with sensor positions."},
	{module: "montage", name: "read_custom_montage", noun: "montage file reader", summary: "Read digitized electrode positions from a file in a supported format (.elc, .sfp, .loc, .bvef, .csd).", params: []string{"fname : path-like : The montage file.", "coord_frame : str | None : The coordinate frame of the points."}, returns: "montage : instance of DigMontage : The positions read."},
	{module: "montage", name: "make_dig_montage", noun: "custom montage", summary: "Create a montage from positions you give for each channel and for the nasion and the left and right preauricular fiducials.", params: []string{"ch_pos : dict : Channel names mapped to xyz positions in meters.", "nasion : array-like : The nasion.", "lpa : array-like : The left preauricular point.", "rpa : array-like : The right preauricular point."}, returns: "montage : instance of DigMontage : The montage."},
	{module: "montage", name: "get_builtin_montages", noun: "builtin montage list", summary: "List the names of the standard montages that ship with the package, with a description of each.", params: []string{"descriptions : bool : Return the descriptions too."}, returns: "montages : list of str : The montage names."},
	// spectral
	{module: "spectral", name: "psd_welch", noun: "Welch spectrum", summary: "Estimate the power spectral density with Welch's method, averaging the periodograms of overlapping windowed segments.", params: []string{"fmin : float : The lowest frequency of interest.", "fmax : float : The highest frequency of interest.", "n_fft : int : The length of the FFT.", "n_overlap : int : Samples of overlap between segments."}, returns: "psds : array : The power spectral densities, and the frequencies."},
	{module: "spectral", name: "psd_multitaper", noun: "multitaper spectrum", summary: "Estimate the power spectral density with DPSS (Slepian) tapers, for spectra of low variance from short data.", params: []string{"bandwidth : float | None : The frequency bandwidth of the tapers.", "adaptive : bool : Use adaptive weights to combine the tapered spectra."}, returns: "psds : array : The power spectral densities, and the frequencies."},
	{module: "spectral", name: "band_power", noun: "band power", summary: "Compute the average power within frequency bands such as delta, theta, alpha, beta and gamma, for each channel.", params: []string{"bands : dict : Band names mapped to (fmin, fmax).", "relative : bool : Divide by the total power to get relative band power."}, returns: "power : DataFrame : The power of each band and channel."},
	{module: "spectral", name: "find_alpha_peak", noun: "alpha peak", summary: "Find the individual alpha peak frequency, the frequency of maximal power between 7 and 13 Hz, per channel or averaged over occipital channels.", params: []string{"fmin : float : Lower edge of the search.", "fmax : float : Upper edge of the search."}, returns: "peak_freq : float | array : The peak frequency in Hz."},
	{module: "spectral", name: "fit_aperiodic", noun: "aperiodic fit", summary: "Fit the aperiodic 1/f component of a power spectrum, its offset and exponent (slope), separating it from oscillatory peaks.", params: []string{"freq_range : tuple : The frequency range of the fit.", "knee : bool : Fit a knee in the spectrum."}, returns: "params : DataFrame : Offset, exponent and goodness of fit per channel."},
	{module: "spectral", name: "spectrogram", noun: "spectrogram", summary: "Compute a short-time Fourier transform spectrogram of each channel, with windows sliding over time.", params: []string{"window_length : float : Length of each window in seconds."}, returns: "power : array : The spectrogram, and its times and frequencies."},
	// timefreq
	{module: "timefreq", name: "tfr_morlet", noun: "Morlet wavelet transform", summary: "Compute time-frequency power and inter-trial coherence of epochs with Morlet wavelets.", params: []string{"freqs : array : The frequencies of interest.", "n_cycles : float | array : Cycles of each wavelet.", "return_itc : bool : Also return the inter-trial coherence.", "decim : int : Decimation factor of the output."}, returns: "power : AverageTFR : The power, and the ITC."},
	{module: "timefreq", name: "tfr_stockwell", noun: "Stockwell transform", summary: "Compute the Stockwell (S) transform of epochs, a time-frequency representation with frequency-dependent resolution.", params: []string{"width : float : Width of the Gaussian window."}, returns: "power : AverageTFR : The power."},
	{module: "timefreq", name: "hilbert_envelope", noun: "Hilbert envelope", summary: "Compute the amplitude envelope (and instantaneous phase) of band-limited signals with the analytic signal of the Hilbert transform.", params: []string{"envelope : bool : Return the magnitude instead of the complex analytic signal."}, returns: "inst : instance : The envelope."},
	{module: "timefreq", name: "inter_trial_coherence", noun: "inter-trial coherence", summary: "Measure the consistency of phase across trials at each time and frequency, from 0 (random) to 1 (identical phases).", params: []string{"freqs : array : The frequencies."}, returns: "itc : array : The inter-trial coherence."},
	{module: "timefreq", name: "morlet", noun: "Morlet wavelet", summary: "Build complex Morlet wavelets for a set of frequencies and numbers of cycles.", params: []string{"sfreq : float : Sampling frequency.", "freqs : array : Frequencies.", "n_cycles : float | array : Number of cycles."}, returns: "Ws : list of array : The wavelets."},
	// connectivity
	{module: "connectivity", name: "spectral_coherence", noun: "coherence", summary: "Estimate the magnitude-squared coherence between all pairs of channels as a function of frequency.", params: []string{"fmin : float : Lowest frequency.", "fmax : float : Highest frequency."}, returns: "con : array : The coherence of each pair and frequency."},
	{module: "connectivity", name: "phase_locking_value", noun: "phase locking value", summary: "Compute the phase locking value (PLV) between pairs of channels across trials: how constant their phase difference is.", params: []string{"indices : tuple of array | None : The pairs of channels."}, returns: "plv : array : The phase locking values."},
	{module: "connectivity", name: "weighted_phase_lag_index", noun: "weighted phase lag index", summary: "Estimate the weighted phase lag index (wPLI), a connectivity measure insensitive to volume conduction and zero-lag coupling.", params: []string{"debiased : bool : Use the debiased squared estimator."}, returns: "wpli : array : The index of each pair."},
	{module: "connectivity", name: "granger_causality", noun: "Granger causality", summary: "Estimate directed connectivity between signals with spectral Granger causality from a vector autoregressive model.", params: []string{"order : int : The model order (lags)."}, returns: "gc : array : Granger causality from seed to target."},
	{module: "connectivity", name: "envelope_correlation", noun: "envelope correlation", summary: "Correlate the amplitude envelopes of orthogonalized signals, a measure of amplitude coupling between regions.", params: []string{"orthogonalize : 'pairwise' | False : Remove zero-lag leakage first."}, returns: "corr : array : The correlation matrix."},
	{module: "connectivity", name: "degree", noun: "node degree", summary: "Count, for each node of a connectivity matrix, the connections above a threshold.", params: []string{"threshold_prop : float : The proportion of connections kept."}, returns: "degree : array : The degree of each node."},
	// stats
	{module: "stats", name: "permutation_cluster_test", noun: "cluster permutation test", summary: "Find clusters of adjacent time points, frequencies or sensors that differ between conditions, with a cluster-level permutation test that controls the family-wise error rate.", extended: "Cluster-forming statistics are F values by default; use threshold to set the cluster-forming threshold and adjacency for the spatial neighbours.", params: []string{"X : list of array : The data of each condition.", "threshold : float | dict | None : The cluster-forming threshold.", "n_permutations : int : Number of permutations.", "adjacency : scipy.sparse matrix | None : Spatial adjacency."}, returns: "F_obs : array : The statistic, the clusters, their p-values and the permutation distribution."},
	{module: "stats", name: "permutation_t_test", noun: "permutation t-test", summary: "One-sample t-test with a permutation null distribution of the maximum statistic, correcting across tests.", params: []string{"n_permutations : int : Number of permutations.", "tail : int : 0 for two-tailed, 1 or -1 for one-tailed."}, returns: "T_obs : array : The t values, the p-values and the null distribution."},
	{module: "stats", name: "fdr_correction", noun: "FDR correction", summary: "Correct p-values for multiple comparisons by controlling the false discovery rate with the Benjamini-Hochberg or Benjamini-Yekutieli procedure.", params: []string{"pvals : array : The p-values.", "alpha : float : The error rate.", "method : 'indep' | 'negcorr' : The procedure."}, returns: "reject : array of bool : The tests rejected, and the corrected p-values."},
	{module: "stats", name: "bonferroni_correction", noun: "Bonferroni correction", summary: "Correct p-values for multiple comparisons by multiplying them by the number of tests.", params: []string{"pvals : array : The p-values.", "alpha : float : The error rate."}, returns: "reject : array of bool : The tests rejected, and the corrected p-values."},
	{module: "stats", name: "bootstrap_confidence_interval", noun: "bootstrap confidence interval", summary: "Estimate the confidence interval of the mean (or another statistic) by bootstrap resampling of the observations.", params: []string{"ci : float : The coverage, e.g. 0.95.", "n_bootstraps : int : Number of resamplings."}, returns: "ci : array : The lower and upper bounds."},
	{module: "stats", name: "linear_regression", noun: "mass-univariate regression", summary: "Fit a linear model at every time point and channel of epochs, with one beta, t value and p-value per predictor.", params: []string{"design_matrix : array : The predictors, one row per epoch.", "names : list of str : Names of the predictors."}, returns: "results : dict : Beta, standard error, t and p values per predictor."},
	// source
	{module: "source", name: "make_forward_solution", noun: "forward solution", summary: "Compute the forward solution (the leadfield) from a source space, a BEM head model and the sensor positions.", params: []string{"trans : path-like | Transform : The head to MRI transform.", "src : SourceSpaces : The source space.", "bem : ConductorModel : The head model."}, returns: "fwd : instance of Forward : The forward solution."},
	{module: "source", name: "make_bem_model", noun: "BEM head model", summary: "Build a boundary element model of the head from the inner skull, outer skull and scalp surfaces of a FreeSurfer subject, for source localization.", params: []string{"subject : str : The FreeSurfer subject.", "conductivity : tuple of float : Conductivities of the layers."}, returns: "surfs : list of dict : The BEM surfaces."},
	{module: "source", name: "make_inverse_operator", noun: "inverse operator", summary: "Assemble the inverse operator from the forward solution and the noise covariance, with depth weighting and loose orientation constraints.", params: []string{"loose : float | 'auto' : Loose orientation constraint.", "depth : float | None : Depth weighting exponent."}, returns: "inv : instance of InverseOperator : The operator."},
	{module: "source", name: "apply_inverse", noun: "inverse solution", summary: "Estimate the sources of evoked data in the brain with minimum norm (MNE), dSPM, sLORETA or eLORETA.", params: []string{"inverse_operator : InverseOperator : The operator.", "lambda2 : float : Regularization, 1 / SNR².", "method : 'MNE' | 'dSPM' | 'sLORETA' | 'eLORETA' : The method."}, returns: "stc : SourceEstimate : The source time courses."},
	{module: "source", name: "lcmv_beamformer", noun: "LCMV beamformer", summary: "Compute a linearly constrained minimum variance (LCMV) beamformer from the data covariance, and apply it to localize sources.", params: []string{"data_cov : Covariance : The data covariance.", "reg : float : Regularization of the covariance."}, returns: "filters : Beamformer : The spatial filters."},
	{module: "source", name: "fit_dipole", noun: "dipole fit", summary: "Fit equivalent current dipoles to evoked data at each time point, with their positions, orientations and goodness of fit.", params: []string{"cov : Covariance : The noise covariance."}, returns: "dip : instance of Dipole : The dipoles."},
	{module: "source", name: "compute_covariance", noun: "noise covariance", summary: "Estimate the noise covariance matrix from the baseline of epochs or from an empty-room recording, with shrinkage regularization.", params: []string{"method : str | list : 'empirical', 'shrunk', 'ledoit_wolf', or a list to pick the best.", "tmax : float : End of the baseline."}, returns: "cov : instance of Covariance : The covariance."},
	// viz
	{module: "viz", name: "plot_raw", noun: "raw browser", summary: "Browse the continuous signals in a scrollable window, where you can mark bad channels and annotate bad segments interactively.", params: []string{"duration : float : Seconds shown at once.", "n_channels : int : Channels shown at once.", "scalings : dict | 'auto' : Vertical scaling by channel type."}, returns: "fig : Figure : The browser."},
	{module: "viz", name: "plot_topomap", noun: "topographic map", summary: "Draw a scalp topography: values at the sensor positions interpolated over a head outline.", params: []string{"data : array : One value per channel.", "pos : Info | array : The positions.", "cmap : str : The colormap."}, returns: "im : Image : The image, and the contour lines."},
	{module: "viz", name: "plot_psd", noun: "spectrum plot", summary: "Plot the power spectral density of each channel on a logarithmic scale, with the mean and standard deviation across channels.", params: []string{"average : bool : Plot the mean and spread instead of each channel."}, returns: "fig : Figure : The figure."},
	{module: "viz", name: "plot_evoked_joint", noun: "joint plot", summary: "Plot the evoked response of all channels on top of each other (a butterfly plot) with topographic maps at the peak times.", params: []string{"times : float | array | 'peaks' : The times of the maps."}, returns: "fig : Figure : The figure."},
	{module: "viz", name: "plot_epochs_image", noun: "ERP image", summary: "Show the single trials of a channel as an image (an ERP image), sorted by a variable such as reaction time, with the average below.", params: []string{"order : array | callable | None : The order of the trials.", "sigma : float : Smoothing across trials."}, returns: "figs : list of Figure : The figures."},
	{module: "viz", name: "plot_sensors", noun: "sensor plot", summary: "Show the positions of the sensors in 2D from above or in 3D, with their names.", params: []string{"kind : 'topomap' | '3d' | 'select' : The kind of plot.", "show_names : bool : Label the sensors."}, returns: "fig : Figure : The figure."},
	{module: "viz", name: "plot_ica_components", noun: "component maps", summary: "Plot the scalp maps of independent components, to decide which ones are artifacts.", params: []string{"picks : int | list | None : The components."}, returns: "fig : Figure : The figure."},
	{module: "viz", name: "plot_connectivity_circle", noun: "connectivity circle", summary: "Draw the strongest connections between regions as arcs on a circle.", params: []string{"n_lines : int | None : The number of connections drawn."}, returns: "fig : Figure : The figure."},
	// datasets
	{module: "datasets", name: "fetch_sample_data", noun: "sample dataset", summary: "Download the sample dataset (MEG and EEG responses to auditory and visual stimuli, with MRI) to the cache directory, once.", params: []string{"path : path-like | None : Where to put it.", "force_update : bool : Download again."}, returns: "path : Path : The dataset's folder."},
	{module: "datasets", name: "fetch_sleep_physionet", noun: "sleep recordings", summary: "Download polysomnography recordings of the Sleep-EDF database from PhysioNet, with their sleep stage annotations (hypnograms).", params: []string{"subjects : list of int : The subjects.", "recording : list of int : The nights."}, returns: "paths : list : The PSG and hypnogram files."},
	{module: "datasets", name: "fetch_eegbci", noun: "motor imagery recordings", summary: "Download runs of the EEG Motor Movement/Imagery dataset (BCI2000), with real and imagined hand and foot movements.", params: []string{"subject : int : The subject.", "runs : list of int : The runs."}, returns: "paths : list : The EDF files."},
	{module: "datasets", name: "get_cache_dir", noun: "dataset cache", summary: "Return the folder where downloaded datasets are stored, set by the NEUROSIG_DATA environment variable or the configuration, else ~/neurosig_data.", params: []string{"key : str : The configuration key of a dataset."}, returns: "path : Path : The folder."},
	// utils
	{module: "utils", name: "set_log_level", noun: "log level", summary: "Set how much the package logs: DEBUG, INFO, WARNING or ERROR, or True and False for INFO and WARNING.", params: []string{"verbose : bool | str | int | None : The level."}, returns: "old_level : int : The previous level, when asked."},
	{module: "utils", name: "get_config", noun: "configuration reader", summary: "Read a configuration value from the JSON configuration file in the user's home folder, or from the environment.", params: []string{"key : str | None : The key; None returns all.", "default : str | None : The value when it is not set."}, returns: "value : str | dict | None : The value."},
	{module: "utils", name: "set_config", noun: "configuration writer", summary: "Store a configuration value in the JSON configuration file so it persists between sessions.", params: []string{"key : str : The key.", "value : str | None : The value; None removes the key."}, returns: ""},
	{module: "utils", name: "sys_info", noun: "system information", summary: "Print the versions of Python, the package and its dependencies, the platform and the CPU, to include in bug reports.", params: []string{"dependencies : 'user' | 'developer' : Which dependencies."}, returns: ""},
	{module: "utils", name: "init_cuda", noun: "CUDA initialization", summary: "Enable GPU (CUDA) acceleration of filtering and resampling through CuPy, when a GPU is available.", params: []string{"ignore_config : bool : Initialize even when the configuration disables it."}, returns: ""},
	{module: "utils", name: "check_random_state", noun: "random state", summary: "Turn a seed into a numpy random number generator, passing generators through.", params: []string{"seed : None | int | Generator : The seed."}, returns: "rng : RandomState : The generator."},
	{module: "utils", name: "ProgressBar", noun: "progress bar", summary: "Show a text progress bar for long loops, in the terminal or in a notebook.", params: []string{"iterable : iterable | None : What to iterate.", "max_value : int | None : The number of steps."}, returns: ""},
	// decoding
	{module: "decoding", name: "CSP", noun: "common spatial patterns", summary: "Common spatial patterns: spatial filters that maximize the difference in variance between two classes, as used to decode motor imagery.", params: []string{"n_components : int : The number of filters kept.", "log : bool | None : Log-transform the variances."}, returns: ""},
	{module: "decoding", name: "SlidingEstimator", noun: "sliding estimator", summary: "Fit a classifier at each time point separately, to find when the conditions can be decoded from the sensors.", params: []string{"base_estimator : object : A scikit-learn estimator.", "scoring : str | callable | None : The score."}, returns: ""},
	{module: "decoding", name: "GeneralizingEstimator", noun: "generalizing estimator", summary: "Train a classifier at each time point and test it at every other time point (temporal generalization), giving a train-by-test time matrix.", params: []string{"base_estimator : object : A scikit-learn estimator."}, returns: ""},
	{module: "decoding", name: "cross_val_multiscore", noun: "cross-validation", summary: "Evaluate an estimator by cross-validation when it returns one score per time point or per fold.", params: []string{"cv : int | splitter : The folds.", "scoring : str | callable | None : The score."}, returns: "scores : array : The scores of each fold."},
	{module: "decoding", name: "Scaler", noun: "channel scaler", summary: "Standardize the data of each channel type, with the mean and standard deviation, the median and interquartile range, or fixed scalings.", params: []string{"scalings : dict | 'mean' | 'median' : How to scale."}, returns: ""},
	{module: "decoding", name: "ReceptiveField", noun: "receptive field", summary: "Estimate temporal response functions (encoding models) that predict the signal from time-lagged stimulus features, with ridge regression.", params: []string{"tmin : float : First lag.", "tmax : float : Last lag.", "alpha : float : Ridge regularization."}, returns: ""},
	// bids
	{module: "bids", name: "write_raw_bids", noun: "BIDS writer", summary: "Write a recording into a BIDS dataset, with its sidecar JSON, channels.tsv, events.tsv and the dataset description.", params: []string{"bids_path : BIDSPath : Where to write it.", "events : array | None : Events to write to events.tsv.", "overwrite : bool : Replace existing files."}, returns: "bids_path : BIDSPath : The path written."},
	{module: "bids", name: "read_raw_bids", noun: "BIDS reader", summary: "Read a recording from a BIDS dataset, applying the channel types, bad channels and events of its sidecar files.", params: []string{"bids_path : BIDSPath : The file to read."}, returns: "raw : Raw : The recording."},
	{module: "bids", name: "BIDSPath", noun: "BIDS path", summary: "Build the paths of files in the BIDS layout from the subject, session, task, run, datatype and suffix entities.", params: []string{"subject : str : The subject label.", "session : str | None : The session.", "task : str | None : The task."}, returns: ""},
	{module: "bids", name: "make_dataset_description", noun: "dataset description", summary: "Write dataset_description.json with the dataset's name, authors, license and BIDS version.", params: []string{"name : str : The dataset name.", "authors : list of str : The authors."}, returns: ""},
	// annotations
	{module: "annotations", name: "Annotations", noun: "annotations", summary: "Labelled time segments (onset, duration, description), such as bad segments, sleep stages or stimulus markers, attached to a recording.", params: []string{"onset : array of float : Start of each segment in seconds.", "duration : array of float : Length of each segment.", "description : array of str : The labels."}, returns: ""},
	{module: "annotations", name: "read_annotations", noun: "annotation reader", summary: "Read annotations from a file: a CSV or text file, an EDF+ or BrainVision marker file, or an EEGLAB dataset.", params: []string{"fname : path-like : The file."}, returns: "annot : Annotations : The annotations."},
	{module: "annotations", name: "annotations_from_events", noun: "event annotations", summary: "Create annotations from an events array and a mapping of event codes to descriptions.", params: []string{"events : array : The events.", "event_desc : dict | callable | None : The descriptions."}, returns: "annot : Annotations : The annotations."},
	// report
	{module: "report", name: "Report", noun: "HTML report", summary: "Collect figures, data summaries and text into a single HTML report that can be saved and shared.", params: []string{"title : str : The title of the report."}, returns: ""},
	{module: "report", name: "add_figure", noun: "report figure", summary: "Add a matplotlib figure or an image file to a report, with a title and a caption.", params: []string{"fig : Figure | path-like : The figure.", "title : str : The title."}, returns: ""},
	// realtime
	{module: "realtime", name: "LSLClient", noun: "LSL client", summary: "Receive EEG data in real time from a Lab Streaming Layer (LSL) stream on the network.", params: []string{"host : str : The stream's name or source id.", "wait_max : float : Seconds to wait for the stream."}, returns: ""},
	{module: "realtime", name: "MockLSLStream", noun: "mock stream", summary: "Replay a recording as a fake LSL stream, to test real-time code without an amplifier.", params: []string{"raw : Raw : The recording replayed.", "time_dilation : float : Slow down the replay."}, returns: ""},
	{module: "realtime", name: "RingBuffer", noun: "ring buffer", summary: "Keep the most recent seconds of a stream in a fixed-size circular buffer.", params: []string{"size : int : Samples kept."}, returns: ""},
}

// codeDocsQuestions ask, in a user's words, for the main symbol of a concept.
var codeDocsQuestions = []struct{ q, symbol string }{
	{"How do I open a BrainVision recording with its vhdr and vmrk files?", "read_raw_brainvision"},
	{"Can I load an EEGLAB .set dataset?", "read_raw_eeglab"},
	{"read sleep recordings stored as EDF", "read_raw_edf"},
	{"How can I import data recorded with LabRecorder?", "read_raw_xdf"},
	{"How do I get rid of 60 Hz power line noise?", "notch_filter"},
	{"remove slow drifts from my signals", "highpass_filter"},
	{"keep only 1 to 40 Hz", "bandpass_filter"},
	{"re-reference my EEG to the average of all electrodes", "set_eeg_reference"},
	{"How can I repair bad electrodes using their neighbours?", "interpolate_bads"},
	{"separate eye blink artifacts from brain activity", "fit_ica"},
	{"detect heartbeats in the ECG", "find_ecg_events"},
	{"change the sampling rate of my data", "resample"},
	{"cut continuous data into trials around the triggers", "Epochs"},
	{"drop trials with huge peak-to-peak amplitude", "reject_by_amplitude"},
	{"average the trials to get the ERP", "average_epochs"},
	{"make every condition have the same number of trials", "equalize_event_counts"},
	{"split a resting-state recording into 2 second segments", "make_fixed_length_epochs"},
	{"How do I read event onsets from the trigger channel?", "find_events"},
	{"turn my BrainVision markers into events", "events_from_annotations"},
	{"correct event times for the screen delay", "shift_time_events"},
	{"select only the EEG channels", "pick_types"},
	{"use standard 10-20 electrode positions", "make_standard_montage"},
	{"power spectrum with Welch's method", "psd_welch"},
	{"alpha band power of each channel", "band_power"},
	{"What is my participant's individual alpha peak frequency?", "find_alpha_peak"},
	{"fit the 1/f slope of the spectrum", "fit_aperiodic"},
	{"time-frequency power with wavelets", "tfr_morlet"},
	{"amplitude envelope via the Hilbert transform", "hilbert_envelope"},
	{"phase synchrony between two channels across trials", "phase_locking_value"},
	{"a connectivity measure that is robust to volume conduction", "weighted_phase_lag_index"},
	{"cluster-based permutation test between two conditions", "permutation_cluster_test"},
	{"correct my p-values with the false discovery rate", "fdr_correction"},
	{"build a head model for source localization", "make_bem_model"},
	{"estimate brain sources with dSPM", "apply_inverse"},
	{"noise covariance from an empty room recording", "compute_covariance"},
	{"scroll through the raw signals and mark bad channels", "plot_raw"},
	{"draw a scalp map of my values", "plot_topomap"},
	{"ERP image of single trials sorted by reaction time", "plot_epochs_image"},
	{"download the Sleep-EDF recordings from PhysioNet", "fetch_sleep_physionet"},
	{"Where are downloaded datasets stored on disk?", "get_cache_dir"},
	{"make the package print less output", "set_log_level"},
	{"Which versions of the dependencies are installed, for a bug report?", "sys_info"},
	{"decode motor imagery with spatial filters", "CSP"},
	{"At which time points can the condition be decoded?", "SlidingEstimator"},
	{"temporal generalization of a classifier", "GeneralizingEstimator"},
	{"save my recording as a BIDS dataset", "write_raw_bids"},
	{"stream EEG in real time from LSL", "LSLClient"},
	{"build an HTML report with my figures", "Report"},
	{"remove external magnetic interference from MEG with SSS", "maxwell_filter"},
	{"speed up filtering on the GPU", "init_cuda"},
}

// camel is snake_case as CamelCase.
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// snake is CamelCase as snake_case.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// allConcepts expands the tables into concepts.
func allConcepts() []concept {
	var cs []concept
	for _, f := range formats {
		name, desc, ext := f[0], f[1], f[2]
		cs = append(cs,
			concept{module: "io", name: "read_raw_" + name, noun: name + " reader",
				summary:  "Read " + desc + ".",
				extended: "The data are loaded lazily unless preload=True; channel names, types and the sampling frequency are taken from the header.",
				params:   []string{"input_fname : path-like : Path to the " + ext + " file.", "preload : bool | str : Load the data into memory, or into a memory-mapped file of that name.", "eog : list | tuple : Names of channels to mark as EOG.", "misc : list | tuple : Names of channels to mark as miscellaneous."},
				returns:  "raw : instance of Raw : The recording.", note: "Annotations stored in the file are read as well."},
			concept{module: "io", name: "export_raw_" + name, noun: name + " export",
				summary: "Export a recording to " + desc + ".",
				params:  []string{"fname : path-like : The " + ext + " file to write.", "overwrite : bool : Replace an existing file.", "physical_range : 'auto' | tuple : The range of the stored values."},
				returns: "", note: "Annotations are written as markers where the format allows."})
		cs = append(cs, concept{module: "io", name: "read_" + name + "_header", noun: name + " header",
			summary: "Read only the header of " + desc + ": channel names, sampling frequency, measurement date and recording length, without the data.",
			params:  []string{"input_fname : path-like : Path to the " + ext + " file.", "encoding : str : The text encoding of the header."},
			returns: "info : dict : The header fields."})
	}
	for _, k := range filterKinds {
		kind, what, ex := k[0], k[1], k[2]
		cs = append(cs, concept{module: "filter", name: kind + "_filter", noun: kind + " filter",
			summary:  what + ".",
			extended: "The filter is applied to the selected channels in place; the transition bandwidths and the filter length are chosen automatically unless given.",
			params:   []string{"l_freq : float | None : The low cutoff frequency in Hz.", "h_freq : float | None : The high cutoff frequency in Hz.", "method : 'fir' | 'iir' : The kind of filter.", "phase : 'zero' | 'minimum' : The phase of the filter."},
			returns:  "inst : instance : The filtered data.", note: "Example cutoffs: " + ex + "."})
		for _, d := range filterDesigns {
			cs = append(cs, concept{module: "filter", name: "design_" + kind + "_" + d[0], noun: kind + " " + d[0] + " design",
				summary: "Design " + d[1] + " for a " + kind + " filter.",
				params:  []string{"sfreq : float : The sampling frequency.", "l_trans_bandwidth : float | 'auto' : Width of the lower transition band.", "filter_length : str | int : Length of the filter."},
				returns: "h : array | dict : The filter coefficients."})
		}
	}
	return append(cs, handConcepts...)
}

// paramBlock renders "name : type : desc" as numpydoc.
func paramBlock(ps []string) string {
	var b strings.Builder
	for _, p := range ps {
		parts := strings.SplitN(p, " : ", 3)
		fmt.Fprintf(&b, "%s : %s\n    %s\n", parts[0], parts[1], parts[2])
	}
	return b.String()
}

// pyDocstrings generates the package: every concept's file with its symbols.
func pyDocstrings() []Docstring {
	r := rand.New(rand.NewPCG(24, 2024))
	var out []Docstring
	add := func(file, sym, typ, doc string, line int) {
		out = append(out, Docstring{Repo: "example/neurosig", FilePath: file, Language: "python", Symbol: sym, SymbolType: typ, Docstring: doc, Line: line, Branch: "main"})
	}
	modules := map[string]bool{}
	for ci, c := range allConcepts() {
		if !modules[c.module] {
			modules[c.module] = true
			add("neurosig/"+c.module+"/__init__.py", "__init__", "module", fmt.Sprintf("The %s subpackage of neurosig.\n\nImport its functions from neurosig.%s.", c.module, c.module), 1)
		}
		isClass := unicode.IsUpper(rune(c.name[0]))
		file := fmt.Sprintf("neurosig/%s/_%s.py", c.module, snake(c.name))
		add(file, "_"+snake(c.name), "module", fmt.Sprintf("Implementation of %s.", c.noun), 1)

		// The main symbol's numpydoc docstring.
		params := append([]string{}, dataParams[r.IntN(len(dataParams))])
		params = append(params, c.params...)
		for _, i := range r.Perm(len(sharedParams))[:2+r.IntN(3)] {
			params = append(params, sharedParams[i])
		}
		var doc strings.Builder
		doc.WriteString(c.summary + "\n")
		if c.extended != "" {
			doc.WriteString("\n" + c.extended + "\n")
		}
		doc.WriteString("\nParameters\n----------\n" + paramBlock(params))
		if c.returns != "" {
			doc.WriteString("\nReturns\n-------\n" + paramBlock([]string{c.returns}))
		}
		if c.note != "" || r.IntN(3) == 0 {
			doc.WriteString("\nNotes\n-----\n")
			if c.note != "" {
				doc.WriteString(c.note + "\n")
			} else {
				fmt.Fprintf(&doc, ".. versionadded:: 0.%d\n", 10+r.IntN(15))
			}
		}
		call := c.name + "(raw)"
		if isClass {
			call = "est = " + c.name + "()"
		}
		doc.WriteString("\nExamples\n--------\n>>> from neurosig." + c.module + " import " + c.name + "\n>>> " + call + "  # doctest: +SKIP\n")
		mainType := "function"
		if isClass {
			mainType = "class"
		}
		line := 20 + r.IntN(200)
		add(file, c.name, mainType, strings.TrimSpace(doc.String()), line)

		// Its counterpart: a function form of a class, or an estimator class of a function.
		if isClass {
			add(file, "make_"+snake(c.name), "function", fmt.Sprintf("Create a %s with the default settings.\n\nReturns\n-------\nest : %s\n    The %s.", c.noun, c.name, c.noun), line+120)
		} else {
			add(file, camel(c.name), "class", fmt.Sprintf("Estimator for the %s.\n\nSee :func:`%s` for the description of the parameters. The object keeps the fitted state, so it can be applied to new data.\n\nAttributes\n----------\ninfo_ : Info\n    The measurement info of the fitted data.", c.noun, c.name), line+120)
		}
		// The methods an estimator has, and private helpers.
		methods := [][2]string{
			{"fit", "Fit the %s to the data.\n\nParameters\n----------\ninst : Raw | Epochs\n    The data to fit.\ny : None\n    Ignored.\n\nReturns\n-------\nself : instance\n    The fitted object."},
			{"transform", "Apply the fitted %s to new data.\n\nParameters\n----------\nX : array, shape (n_epochs, n_channels, n_times)\n    The data.\n\nReturns\n-------\nX_new : array\n    The transformed data."},
			{"fit_transform", "Fit the %s and transform the data in one step."},
			{"plot", "Plot the %s.\n\nParameters\n----------\nshow : bool\n    Show the figure.\n\nReturns\n-------\nfig : Figure\n    The figure."},
			{"save", "Save the %s to a file.\n\nParameters\n----------\nfname : path-like\n    The file, ending in .h5 or .fif.\noverwrite : bool\n    Replace an existing file."},
			{"copy", "Return a copy of the %s."},
			{"get_params", "Get the parameters of the %s as a dictionary."},
			{"set_params", "Set the parameters of the %s.\n\nParameters\n----------\n**params : dict\n    The parameters and their new values."},
			{"to_data_frame", "Export the results of the %s as a pandas DataFrame."},
		}
		for mi, m := range methods {
			if isClass || mi < 5 || r.IntN(2) == 0 {
				add(file, m[0], "method", fmt.Sprintf(m[1], c.noun), line+130+10*mi)
			}
		}
		add(file, "_check_"+snake(c.name)+"_params", "function", fmt.Sprintf("Check the parameters of the %s and raise ValueError for invalid values.", c.noun), 5+r.IntN(10))
		add(file, "_"+snake(c.name)+"_core", "function", fmt.Sprintf("Compute the %s on a numpy array (the inner loop, without checks).", c.noun), 10+r.IntN(10))
		if ci%3 == 0 {
			add(file, "_"+snake(c.name)+"_epochs", "function", fmt.Sprintf("Apply the %s to each epoch.", c.noun), 60)
		}
	}
	return out
}
