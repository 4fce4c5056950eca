package runtimelock

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDistributions(t *testing.T) {
	if diff := cmp.Diff([]string{"0.29.5"}, SupportedVersions()); diff != "" {
		t.Errorf("SupportedVersions (-want +got):\n%s", diff)
	}
	for _, v := range SupportedVersions() {
		d, ok := Distribution(v)
		if !ok || d.Version != v || d.Python == "" || len(d.packages) == 0 {
			t.Fatalf("Distribution(%q) = %+v, %v", v, d, ok)
		}
		for key, p := range d.packages {
			if CanonicalName(p.Name) != key {
				t.Errorf("Pyodide %s: key %q is not the canonical form of %q", v, key, p.Name)
			}
		}
	}
	d, _ := Distribution("0.29.5")
	if d.Python != "3.13.2" {
		t.Errorf("Pyodide 0.29.5 runs Python %q, want 3.13.2", d.Python)
	}
	mpl, ok := d.Package("Matplotlib")
	if !ok || mpl.Version != "3.8.4" || !contains(mpl.Imports, "pylab") {
		t.Errorf(`Package("Matplotlib") = %+v, %v`, mpl, ok)
	}
	for _, v := range []string{"0.28.3", "314.0.6", "", "../0.29.5", "0.29.5/"} {
		if _, ok := Distribution(v); ok {
			t.Errorf("Distribution(%q) found", v)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCheckVersion(t *testing.T) {
	if got := CheckVersion("0.29.5"); got != nil {
		t.Errorf("CheckVersion(0.29.5) = %v", got)
	}
	want := []Problem{{Path: "pyodide_version", Msg: `"0.28.3" is not a Pyodide release this server knows the packages of (it knows 0.29.5); add one with scripts/update_pyodide_lock.sh`}}
	if diff := cmp.Diff(want, CheckVersion("0.28.3")); diff != "" {
		t.Errorf("CheckVersion(0.28.3) (-want +got):\n%s", diff)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"0.29.5", "0.29.5", 0},
		{"0.29.5", "0.100.0", -1},
		{"0.29.5", "0.29", 1},
		{"1.0.0", "0.99.99", 1},
		{"0.27.0a2", "0.27.0", 1},
	} {
		if got := compareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDistCheck(t *testing.T) {
	d, ok := Distribution("0.29.5")
	if !ok {
		t.Fatal("no Pyodide 0.29.5")
	}
	entry := func(name string, imports, depends []string) Package {
		return Package{Key: CanonicalName(name), Name: name, Version: "1.0", FileName: "x-1.0-py3-none-any.whl",
			PackageType: "package", InstallDir: "site", SHA256: "00", Imports: imports, Depends: depends}
	}
	eeg := &Overlay{Packages: []Package{
		entry("eegprep-lean", []string{"eegprep_lean"}, []string{"matplotlib", "numpy", "zarr"}),
		entry("zarr", []string{"zarr"}, []string{"numpy", "google_crc32c", "Typing.Extensions"}),
	}}
	for _, tc := range []struct {
		name    string
		ov      *Overlay
		preload []string
		ibs     []string
		want    []Problem
	}{
		{
			name:    "names resolve in canonical form",
			ov:      eeg,
			preload: []string{"NumPy", "scipy", "matplotlib", "zarr", "eegprep_lean", "Pyodide_HTTP"},
			ibs:     []string{"scipy", "scipy.stats", "pylab", "mpl_toolkits.mplot3d", "eegprep_lean.index", "zarr"},
		},
		{
			name:    "unknown preload name with a near miss",
			preload: []string{"numpy", "numpyy"},
			want:    []Problem{{Path: "preload[1]", Msg: `"numpyy" is not a package of Pyodide 0.29.5; did you mean "numpy"?`}},
		},
		{
			name:    "unknown preload name with an overlay",
			ov:      eeg,
			preload: []string{"eegprep-lena", "nothing-like-it-at-all"},
			want: []Problem{
				{Path: "preload[0]", Msg: `"eegprep-lena" is not a package of Pyodide 0.29.5 or of the lock overlay; did you mean "eegprep-lean"?`},
				{Path: "preload[1]", Msg: `"nothing-like-it-at-all" is not a package of Pyodide 0.29.5 or of the lock overlay`},
			},
		},
		{
			name:    "a module name is not a package name",
			preload: []string{"sklearn", "PIL"},
			want: []Problem{
				{Path: "preload[0]", Msg: `"sklearn" is not a package of Pyodide 0.29.5; the module "sklearn" comes from the package "scikit-learn", which is the name to preload`},
				{Path: "preload[1]", Msg: `"PIL" is not a package of Pyodide 0.29.5; the module "PIL" comes from the package "pillow", which is the name to preload`},
			},
		},
		{
			name: "overlay may not replace a distribution package",
			ov: &Overlay{Packages: []Package{
				entry("numpy", []string{"numpy"}, nil),
				entry("extra", []string{"extra"}, []string{"numpy", "nump", "extra"}),
			}},
			preload: []string{"numpy"},
			want: []Problem{
				{Path: "lockfile", Msg: `lock entry 'numpy' would replace the Pyodide 0.29.5 distribution's own; an overlay may only add packages, so give it a name the distribution does not ship`},
				{Path: "lockfile", Msg: `packages["extra"].depends[1]: "nump" is not a package of Pyodide 0.29.5 or of the lock overlay; did you mean "numpy"?`},
			},
		},
		{
			name:    "import_before_seal must be provided by preload",
			preload: []string{"numpy", "matplotlib"},
			ibs:     []string{"numpy.linalg", "pylab", "scipy.signal", "Numpy", "scipy.signal"},
			want: []Problem{
				{Path: "import_before_seal[2]", Msg: `import_before_seal entry 'scipy.signal': its top-level package 'scipy' is not a module the preloaded packages provide (['matplotlib', 'mpl_toolkits', 'numpy', 'pylab']); only a package preload names may be imported before the seal`},
				{Path: "import_before_seal[3]", Msg: `import_before_seal entry 'Numpy': its top-level package 'Numpy' is not a module the preloaded packages provide (['matplotlib', 'mpl_toolkits', 'numpy', 'pylab']); only a package preload names may be imported before the seal`},
			},
		},
		{
			name:    "pylab needs matplotlib",
			preload: []string{"numpy"},
			ibs:     []string{"pylab"},
			want: []Problem{
				{Path: "import_before_seal[0]", Msg: `import_before_seal entry 'pylab': its top-level package 'pylab' is not a module the preloaded packages provide (['numpy']); only a package preload names may be imported before the seal`},
			},
		},
		{
			name:    "the canonical-name rule counts, even for a name the lock does not know",
			preload: []string{"Ruamel.YAML", "no-such-pkg"},
			ibs:     []string{"ruamel_yaml", "ruamel.yaml", "no_such_pkg.sub"},
			want: []Problem{
				{Path: "preload[1]", Msg: `"no-such-pkg" is not a package of Pyodide 0.29.5`},
			},
		},
		{
			name: "syntax and sealed roots are config's to report",
			ibs:  []string{"", "not a module", "1abc", "micropip", "js.document", "é"},
		},
		{
			name:    "the overlay's imports count",
			ov:      eeg,
			preload: []string{"eegprep-lean"},
			ibs:     []string{"eegprep_lean", "zarr"},
			want: []Problem{
				{Path: "import_before_seal[1]", Msg: `import_before_seal entry 'zarr': its top-level package 'zarr' is not a module the preloaded packages provide (['eegprep_lean']); only a package preload names may be imported before the seal`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := d.Check(tc.ov, tc.preload, tc.ibs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShippedRuntimeResolves checks NEMAR's overlay against Pyodide 0.29.5 with the preload
// the community config uses.
func TestShippedRuntimeResolves(t *testing.T) {
	data, err := os.ReadFile("../communities/nemar/runtime/lock.json")
	if err != nil {
		t.Fatal(err)
	}
	ov, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := Distribution("0.29.5")
	if got := d.Check(ov, []string{"numpy", "scipy", "matplotlib", "nemar-tools"}, []string{"scipy", "scipy.stats", "scipy.io", "nemar_tools"}); got != nil {
		t.Errorf("Check = %v", got)
	}
}
