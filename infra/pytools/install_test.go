package pytools_test

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The script make run and make tools call to make moto and cfn-lint
// importable: kept where python3 has them, installed into a project venv
// where it does not, and one line of what to do where no index answers.

func script(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs the script with PATH and pip's settings under the test's control,
// so the machine's own Python tools and pip configuration play no part.
func run(t *testing.T, venv string, env []string, pairs ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script(t), venv}, pairs...)...)
	cmd.Env = append([]string{
		"PATH=" + filepath.Join(venv, "bin") + ":/usr/bin:/bin",
		"HOME=" + t.TempDir(),
		"PIP_CONFIG_FILE=/dev/null",
		"PIP_NO_CACHE_DIR=1",
	}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
}

func TestAToolPythonAlreadyHasIsKept(t *testing.T) {
	requirePython(t)
	venv := filepath.Join(t.TempDir(), "venv")
	out, err := run(t, venv, []string{"PIP_INDEX_URL=http://127.0.0.1:9/simple"}, "json,sqlite3=never-installed==1.0")
	if err != nil || out != "" {
		t.Fatalf("a module python3 imports: %v, output %q; want silence", err, out)
	}
	if _, err := os.Stat(venv); !os.IsNotExist(err) {
		t.Fatalf("a venv was made for a module python3 already imports (%v)", err)
	}
}

func TestAMissingToolIsInstalledIntoTheProjectVenv(t *testing.T) {
	requirePython(t)
	wheels := t.TempDir()
	writeWheel(t, filepath.Join(wheels, "oracle_probe-1.0-py3-none-any.whl"))
	venv := filepath.Join(t.TempDir(), "venv")
	env := []string{"PIP_NO_INDEX=1", "PIP_FIND_LINKS=" + wheels}

	out, err := run(t, venv, env, "oracle_probe=oracle-probe==1.0")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	probe := exec.Command(filepath.Join(venv, "bin", "python3"), "-c", "import oracle_probe; print(oracle_probe.VERSION)")
	if got, err := probe.Output(); err != nil || strings.TrimSpace(string(got)) != "1.0" {
		t.Fatalf("the venv's python3 does not import the tool: %v %q", err, got)
	}
	// Next time the venv's python3 is first on PATH and has it: nothing to do,
	// even with no index at all.
	if out, err := run(t, venv, []string{"PIP_INDEX_URL=http://127.0.0.1:9/simple"}, "oracle_probe=oracle-probe==1.0"); err != nil || out != "" {
		t.Fatalf("second run: %v, %q; want silence", err, out)
	}
}

func TestNoIndexStopsWithOneLineAndNoVenv(t *testing.T) {
	requirePython(t)
	venv := filepath.Join(t.TempDir(), "venv")
	// Port 9 (discard) on loopback: nothing listens, the connection is refused.
	out, err := run(t, venv, []string{"PIP_INDEX_URL=http://127.0.0.1:9/simple"}, "oracle_probe=oracle-probe==1.0")
	if err == nil {
		t.Fatalf("no index, yet the script succeeded: %q", out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(out, "python3 -m pip install 'oracle-probe==1.0'") {
		t.Fatalf("want one line saying what to install and how, got %d:\n%s", len(lines), out)
	}
	if _, err := os.Stat(venv); !os.IsNotExist(err) {
		t.Fatalf("a venv without the tool is left behind to shadow python3 (%v)", err)
	}
}

// writeWheel makes the smallest wheel pip installs: a module and its
// dist-info (pip reads METADATA and WHEEL, and rewrites RECORD).
func writeWheel(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	files := map[string]string{
		"oracle_probe/__init__.py":            "VERSION = '1.0'\n",
		"oracle_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: oracle-probe\nVersion: 1.0\n",
		"oracle_probe-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"oracle_probe-1.0.dist-info/RECORD":   "oracle_probe/__init__.py,,\noracle_probe-1.0.dist-info/METADATA,,\noracle_probe-1.0.dist-info/WHEEL,,\noracle_probe-1.0.dist-info/RECORD,,\n",
	}
	for name, body := range files {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
